// Looking for secrets in an export, shared by the --redact tests: every encoding a secret could be
// written in, and every text of an export it could hide in (an HTML page's embedded session, the
// decoded strings of a JSON export).

import { expect } from "vitest";

/** Every way a secret could be written into an export. */
export function encodings(secret: string): string[] {
  const forms = new Set<string>([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret), encodeURIComponent(secret).toLowerCase()]);
  const bytes = Buffer.from(secret);
  for (let pad = 0; pad < 3; pad++) {
    const b64 = Buffer.concat([Buffer.alloc(pad), bytes]).toString("base64");
    const core = b64.slice(pad ? 4 : 0, Math.floor((pad + bytes.length) / 3) * 4);
    forms.add(core).add(core.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  // A partial leak counts: any 12 characters of the secret.
  for (let i = 0; i + 12 <= secret.length; i++) forms.add(secret.slice(i, i + 12));
  return [...forms].filter((f) => f.length >= 12);
}

/** The texts to search in one export: itself, and for HTML the decoded embedded session. */
export function searchable(format: string, out: string): string[] {
  const texts = [out];
  const strings = (v: unknown): string[] => (typeof v === "string" ? [v] : v && typeof v === "object" ? Object.entries(v).flatMap(([k, x]) => [k, ...strings(x)]) : []);
  if (format === "json") texts.push(strings(JSON.parse(out)).join("\n"));
  if (format === "html") {
    const payload = /<script id="session-data" type="application\/json">([^<]*)<\/script>/.exec(out);
    expect(payload, "the page embeds the session").not.toBeNull();
    const json = Buffer.from(payload![1], "base64").toString("utf8");
    texts.push(json, strings(JSON.parse(json)).join("\n"));
  }
  return texts;
}

/** One line per secret (with where it was planted) that shows up in any encoding, with the first form found. */
export function leaks(texts: string[], secrets: readonly (readonly [string, string])[]): string[] {
  const found: string[] = [];
  for (const [secret, where] of secrets) {
    const form = encodings(secret).find((f) => texts.some((t) => t.includes(f)));
    if (form) found.push(`${where}: ${JSON.stringify(form)}`);
  }
  return found;
}
