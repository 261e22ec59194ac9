// The second wall of the HTML export: whatever markup reaches the sanitizer (the Markdown renderer
// already shows raw HTML as text) leaves with no script, handler, style, frame, form or remote URL.

import { describe, expect, it } from "vitest";
import { renderMarkdownHtml, sanitizeMarkup } from "../../src/export/html-markdown.js";

const ATTACKS = [
  "<script>alert(1)</script>",
  '<img src=x onerror="alert(1)">',
  '<img src="https://example.com/p.png">',
  '<img src="data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=">',
  '<a href="javascript:alert(1)">j</a>',
  '<a href="  JaVaScRiPt:alert(1)">j</a>',
  '<a href="vbscript:x">v</a>',
  '<a href="//example.com/x">protocol-relative</a>',
  '<a href="data:text/html,<script>alert(1)</script>">d</a>',
  '<iframe src="https://example.com"></iframe>',
  '<svg onload="alert(1)"><circle/></svg>',
  '<p style="background:url(https://example.com/x)">styled</p>',
  "<style>@import url(https://example.com/x.css)</style>",
  '<form action="https://example.com"><input name="q"><button>go</button></form>',
  '<object data="https://example.com/x.swf"></object><embed src="https://example.com/y">',
  '<link rel="stylesheet" href="https://example.com/x.css"><meta http-equiv="refresh" content="0;url=https://example.com">',
  '<base href="https://example.com/">',
  '<div onclick="alert(1)" onmouseover="alert(1)">hover</div>',
  '<code class="hljs" onclick="alert(1)">x</code><span class="evil hljs-keyword">k</span>',
];

describe("HTML export sanitizer", () => {
  it.each(ATTACKS)("%s leaves nothing that runs or fetches", (attack) => {
    const out = sanitizeMarkup(attack);
    expect(out).not.toMatch(/<(script|iframe|svg|style|form|input|button|object|embed|link|meta|base)\b/i);
    expect(out).not.toMatch(/\son\w+\s*=/i);
    expect(out).not.toMatch(/\sstyle\s*=/i);
    expect(out).not.toMatch(/(href|src)\s*=\s*"(?!https:\/\/|http:\/\/|mailto:|data:image\/(png|jpeg|gif|webp);base64,)/i);
    expect(out).not.toMatch(/<img[^>]+src="https?:/i);
    expect(out).not.toMatch(/class="[^"]*evil/);
  });

  it("keeps the safe parts: web links (marked rel=noopener), inline raster images, highlight classes", () => {
    expect(sanitizeMarkup('<a href="https://example.com/a">a</a>')).toBe('<a href="https://example.com/a" rel="noopener noreferrer nofollow">a</a>');
    expect(sanitizeMarkup('<img src="data:image/png;base64,iVBORw0KGgo=" alt="x">')).toContain('src="data:image/png;base64,iVBORw0KGgo="');
    expect(sanitizeMarkup('<code class="hljs language-ts"><span class="hljs-keyword">const</span></code>')).toBe('<code class="hljs language-ts"><span class="hljs-keyword">const</span></code>');
  });

  it("Markdown: raw HTML is text, javascript: links keep only their text, remote images become links", () => {
    expect(renderMarkdownHtml("<b>x</b>")).toBe("<p>&lt;b&gt;x&lt;/b&gt;</p>\n");
    expect(renderMarkdownHtml("[x](javascript:alert(1))")).toBe("<p>x</p>\n");
    expect(renderMarkdownHtml("![pic](https://example.com/p.png)")).toContain('<a href="https://example.com/p.png" class="remote-image"');
    expect(renderMarkdownHtml("![pic](https://example.com/p.png)")).not.toContain("<img");
  });
});
