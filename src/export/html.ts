// The self-contained HTML export: one file, inline style and script, a Content-Security-Policy
// that forbids every network request, and the session embedded the way `pi --export` embeds it
// (<script id="session-data" type="application/json"> holding base64 JSON {header, entries,
// leafId}) so that `pi-guard salvage --from-html` can recover the session from the page.

import { pageHead } from "./page.js";
import { escapeHtml } from "./markdown-text.js";
import type { ExportInput } from "./model.js";
import { VIEWER_JS } from "./html-client.js";
import { VIEWER_CSS } from "./html-style.js";
import { renderEntryMarkdown, scriptJson } from "./html-markdown.js";
import { createHash } from "node:crypto";

// Only the viewer script itself may run (by its hash): no inline event handler, no injected
// script, even if some markup slipped past the sanitizer.
const VIEWER_HASH = createHash("sha256").update(VIEWER_JS, "utf8").digest("base64");
const CSP = `default-src 'none'; script-src 'sha256-${VIEWER_HASH}'; style-src 'unsafe-inline'; img-src data: blob:`;

/** entryId → sanitized HTML of its Markdown, pre-rendered for the viewer (see html-markdown.ts). */
export function renderedMarkdownJson(input: ExportInput): string {
  const map: Record<string, Record<string, string>> = {};
  for (const e of input.view.entries) {
    const r = renderEntryMarkdown(e);
    if (r) map[e.id] = r;
  }
  return scriptJson(map);
}

export function sessionDataBase64(input: ExportInput): string {
  const { view } = input;
  const data = { header: view.header, entries: view.entries, leafId: view.leafId, exporter: { name: "pi-guard", source: input.source, redacted: input.redacted } };
  return Buffer.from(JSON.stringify(data), "utf8").toString("base64");
}

export function renderHtml(input: ExportInput): string {
  const title = escapeHtml(input.view.name ?? `pi session ${input.view.header.id.slice(0, 8)}`);
  return `${pageHead({ csp: CSP, title: title, css: VIEWER_CSS })}
<body>
<aside id="sidebar" aria-label="Session tree">
  <h2>Tree</h2>
  <input id="tree-search" type="search" placeholder="Filter the tree…" aria-label="Filter the tree">
  <div class="filters" role="group" aria-label="Tree filter">
    <button data-filter="default" class="selected">Default</button><button data-filter="no-tools">No tools</button><button data-filter="user">User</button><button data-filter="labeled">Labeled</button><button data-filter="all">All</button>
  </div>
  <ul id="tree"></ul>
</aside>
<main>
  <header id="top">
    <h1 id="title">${title}</h1>
    <div id="stats"></div>
    <div class="toolbar">
      <input id="search" type="search" placeholder="Search this branch…" aria-label="Search this branch">
      <button id="search-prev" title="previous match">↑</button><button id="search-next" title="next match">↓</button>
      <span id="search-count" aria-live="polite"></span>
      <label><input id="toggle-thinking" type="checkbox" checked> Thinking</label>
      <label><input id="toggle-tools" type="checkbox" checked> Tools</label>
      <button id="expand-tools">Expand tool calls</button>
      <button id="theme-toggle" title="switch light/dark">Light/dark</button>
      <a id="download-jsonl" href="#">Download JSONL</a>
      <span id="branch-info" class="mono"></span>
    </div>
  </header>
  <div id="messages"></div>
  <noscript><p>This page needs JavaScript to show the conversation; the session is embedded below as base64 JSON.</p></noscript>
</main>
<script id="session-data" type="application/json">${sessionDataBase64(input)}</script>
<script id="rendered-html" type="application/json">${renderedMarkdownJson(input)}</script>
<script>${VIEWER_JS}</script>
</body>
</html>
`;
}
