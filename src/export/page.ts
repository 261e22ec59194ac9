/** The `<head>` every self-contained page of pi-guard starts with: a strict CSP, no external fetches. */
export function pageHead(opts: { csp: string; title: string; css: string }): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${opts.csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="pi-guard">
<link rel="icon" href="data:,">
<title>${opts.title}</title>
<style>${opts.css}</style>
</head>`;
}
