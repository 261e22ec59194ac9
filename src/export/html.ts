// The self-contained HTML export: one file, inline style and script, a Content-Security-Policy
// that forbids every network request, and the session embedded the way `pi --export` embeds it
// (<script id="session-data" type="application/json"> holding base64 JSON {header, entries,
// leafId}) so that `pi-guard salvage --from-html` can recover the session from the page.
//
// The page is written a piece at a time (bounded memory for any session size), in this order:
// 1. rendered-html: entry id → its Markdown, rendered and sanitized (html-markdown.ts).
// 2. entry-index: a light copy of every entry (no long text, no tool output, no image data)
//    with the byte range its JSON has in session-data, so the viewer builds the tree and stats
//    without decoding the session and decodes only the entries it opens (html-client.ts).
// 3. the viewer script, which draws the first messages while the browser still parses
// 4. session-data: the base64 JSON, encoded in 3-byte-aligned pieces so the pieces concatenate
//    to the base64 of the whole. Inside 1 and 2 every "<" is escaped, so nothing there can pose
//    as a session-data element to salvage.

import { createHash } from "node:crypto";
import os from "node:os";
import v8 from "node:v8";
import vm from "node:vm";
import type { SessionEntry, SessionHeader } from "../model/session.js";
import type { SessionStream } from "./entry-stream.js";
import { highlightToolOutput, languageOfPath, renderEntryMarkdown, scriptJson, textOf } from "./html-markdown.js";
import { escapeHtml, parseSkillBlock } from "./markdown-text.js";
import { sessionTitle } from "../sessions/describe.js";
import type { ExportInput } from "./model.js";
import { pageHead } from "./page.js";
import { VIEWER_JS } from "./html-client.js";
import { VIEWER_CSS } from "./html-style.js";

// Only the viewer script itself may run (by its hash): no inline event handler, no injected
// script, even if some markup slipped past the sanitizer.
const VIEWER_HASH = createHash("sha256").update(VIEWER_JS, "utf8").digest("base64");
const CSP = `default-src 'none'; script-src 'sha256-${VIEWER_HASH}'; style-src 'unsafe-inline'; img-src data: blob:`;

/** Characters of text an entry keeps in the index: enough for previews and filters. */
const LIGHT_TEXT = 200;
/** Lines of a `read` result the viewer shows before "… (N more lines)" (as in html-client.ts). */
const READ_PREVIEW_LINES = 10;
/** Pending `read` calls remembered for highlighting their results; beyond this, the oldest go. */
const MAX_PENDING_READS = 1000;

export interface HtmlMeta {
  header: SessionHeader;
  leafId: string | null;
  name: string | undefined;
  source: string;
  redacted: boolean;
  /** The exporting user's home dir, which the viewer shows as ~ (none on a redacted page: masked already). */
  home?: string;
}

function cut(v: unknown): string {
  const s = typeof v === "string" ? v : "";
  return s.length > LIGHT_TEXT ? s.slice(0, LIGHT_TEXT) : s;
}

function lightBlocks(content: unknown): unknown {
  if (typeof content === "string") return cut(content);
  if (!Array.isArray(content)) return [];
  return content
    .filter((b): b is Record<string, unknown> => !!b && typeof b === "object")
    .map((b) => {
      if (b.type === "text") return { type: "text", text: cut(b.text) };
      if (b.type === "thinking") return { type: "thinking", thinking: cut(b.thinking) };
      if (b.type === "toolCall") {
        // The arguments the tree names a call by ("$ ls", "read ~/x.ts:1-20"), cut short.
        const args = (b.arguments && typeof b.arguments === "object" ? b.arguments : {}) as Record<string, unknown>;
        const light: Record<string, unknown> = {};
        for (const key of ["command", "path", "file_path", "pattern"]) if (typeof args[key] === "string") light[key] = cut(args[key]).split("\n")[0];
        for (const key of ["offset", "limit"]) if (typeof args[key] === "number") light[key] = args[key];
        return { type: "toolCall", id: b.id, name: b.name, arguments: light };
      }
      return { type: b.type };
    });
}

/** Of a pi 1.x system message: section names (a null stays null: removed) and tool names, bounded. */
function lightSystem(msg: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (msg.sections && typeof msg.sections === "object" && !Array.isArray(msg.sections)) {
    const sections: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(msg.sections).slice(0, 100)) sections[cut(k)] = v === null ? null : "";
    out.sections = sections;
  }
  for (const key of ["toolsAdded", "toolsRemoved"]) {
    const tools = msg[key];
    if (Array.isArray(tools)) out[key] = tools.slice(0, 500).map((t) => ({ name: cut(t && typeof t === "object" ? (t as Record<string, unknown>).name : "") }));
  }
  return out;
}

/** What the viewer needs of an entry without showing it: ids, kind, previews, usage, labels. */
export function lightEntry(entry: SessionEntry, range: [number, number]): Record<string, unknown> {
  const e = entry as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  // usage (and a usage entry's kind and model): pi counts it in the session's totals.
  for (const key of ["type", "id", "parentId", "timestamp", "targetId", "label", "name", "provider", "modelId", "thinkingLevel", "customType", "tokensBefore", "firstKeptEntryId", "usage", "kind", "model"]) {
    if (e[key] !== undefined) out[key] = e[key];
  }
  if (e.summary !== undefined) out.summary = cut(e.summary);
  if (e.replacement !== undefined) out.replacement = e.replacement === null ? null : cut(e.replacement);
  // A compaction's system checkpoint (pi 1.x) matters to the index only as a fact.
  if (e.systemMessage) out.systemMessage = true;
  if (e.content !== undefined) out.content = lightBlocks(e.content);
  const m = e.message;
  if (m && typeof m === "object") {
    const msg = m as Record<string, unknown>;
    const light: Record<string, unknown> = {};
    for (const key of ["role", "model", "provider", "usage", "stopReason", "toolCallId", "toolName", "isError", "exitCode", "customType"]) {
      if (msg[key] !== undefined) light[key] = msg[key];
    }
    light.content = lightBlocks(msg.content);
    if (msg.command !== undefined) light.command = cut(msg.command);
    if (msg.errorMessage !== undefined) light.errorMessage = cut(msg.errorMessage);
    if (msg.role === "system") Object.assign(light, lightSystem(msg));
    // A skill block: the tree names the skill and previews the user's own words, not the tags.
    const skill = msg.role === "user" ? parseSkillBlock(textOf(msg.content)) : undefined;
    if (skill) {
      light.skill = { name: cut(skill.name), location: cut(skill.location) };
      light.content = cut(skill.userMessage ?? "");
    }
    out.message = light;
  }
  out._o = range;
  return out;
}

/**
 * Builds the page piece by piece, in file order: rendered-html and entry-index first, then the
 * viewer, then session-data. The viewer can so draw the first messages while the browser is still
 * parsing the (much larger) session-data. Entries are fed three times, one pass per element.
 */
class HtmlPage {
  private bytes = 0;
  private carry = Buffer.alloc(0);
  private first = true;
  private offset = 0;
  /** toolCallId → language of the file a `read` call asked for, until its result comes. */
  private readLang = new Map<unknown, string>();

  constructor(private readonly meta: HtmlMeta) {}

  private dataPrefix(): string {
    return `{"header":${JSON.stringify(this.meta.header)},"entries":[`;
  }

  start(): string {
    const title = escapeHtml(this.meta.name ?? sessionTitle(this.meta.header));
    this.first = true;
    return `${pageHead({ csp: CSP, title, css: VIEWER_CSS })}\n${body(title)}<script id="rendered-html" type="application/json">{`;
  }

  rendered(e: SessionEntry): string {
    const r = this.readOutput(e) ?? renderEntryMarkdown(e);
    if (!r) return "";
    const out = `${this.first ? "" : ","}${scriptJson(String(e.id))}:${scriptJson(r)}`;
    this.first = false;
    return out;
  }

  /** A `read` result, highlighted in the language of the file its call named. */
  private readOutput(e: SessionEntry): Record<string, string> | undefined {
    const m = (e as { message?: Record<string, unknown> }).message;
    if (e.type !== "message" || !m || typeof m !== "object") return undefined;
    if (m.role === "assistant" && Array.isArray(m.content)) {
      for (const b of m.content as Record<string, unknown>[]) {
        const args = b?.arguments as Record<string, unknown> | undefined;
        const file = args && typeof args === "object" ? (args.path ?? args.file_path) : undefined;
        const lang = b?.type === "toolCall" && b.name === "read" && typeof file === "string" ? languageOfPath(file) : undefined;
        if (!lang) continue;
        if (this.readLang.size >= MAX_PENDING_READS) this.readLang.delete(this.readLang.keys().next().value);
        this.readLang.set(b.id, lang);
      }
    }
    if (m.role !== "toolResult" || !this.readLang.has(m.toolCallId)) return undefined;
    const lang = this.readLang.get(m.toolCallId)!;
    this.readLang.delete(m.toolCallId);
    return highlightToolOutput(m.content, lang, READ_PREVIEW_LINES);
  }

  startIndex(): string {
    this.first = true;
    this.offset = Buffer.byteLength(this.dataPrefix());
    return `}</script>\n<script id="entry-index" type="application/json">{"header":${scriptJson(this.meta.header)},"leafId":${scriptJson(this.meta.leafId)},"home":${scriptJson(this.meta.home ?? null)},"entries":[`;
  }

  /** The entry's light copy with the byte range its JSON will have inside session-data. */
  indexed(e: SessionEntry): string {
    if (!this.first) this.offset += 1; // the comma between entries
    const from = this.offset;
    this.offset += Buffer.byteLength(JSON.stringify(e));
    const out = `${this.first ? "" : ","}${scriptJson(lightEntry(e, [from, this.offset]))}`;
    this.first = false;
    return out;
  }

  startData(): string {
    this.first = true;
    return `]}</script>\n<script>${VIEWER_JS}</script>\n<script id="session-data" type="application/json">${this.data(this.dataPrefix())}`;
  }

  /** Base64 of the bytes so far, keeping back the 0–2 bytes that do not fill a group of 3. */
  private data(text: string, final = false): string {
    const buf = Buffer.concat([this.carry, Buffer.from(text, "utf8")]);
    this.bytes += buf.length - this.carry.length;
    const whole = final ? buf.length : buf.length - (buf.length % 3);
    this.carry = buf.subarray(whole);
    return buf.subarray(0, whole).toString("base64");
  }

  entry(e: SessionEntry): string {
    const out = (this.first ? "" : this.data(",")) + this.data(JSON.stringify(e));
    this.first = false;
    return out;
  }

  end(): string {
    const { meta } = this;
    const tail = `],"leafId":${JSON.stringify(meta.leafId)},"exporter":${JSON.stringify({ name: "pi-guard", source: meta.source, redacted: meta.redacted })}}`;
    const out = `${this.data(tail, true)}</script>\n</body>\n</html>\n`;
    // The index promised these byte ranges; a mismatch would show the wrong entries.
    if (this.bytes !== this.offset + Buffer.byteLength(tail)) throw new Error(`HTML export: session-data is ${this.bytes} bytes, the index expected ${this.offset + Buffer.byteLength(tail)}`);
    return out;
  }
}

function body(title: string): string {
  return `<body>
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
    <button id="tree-toggle" aria-controls="sidebar" title="show the session tree">☰ Tree</button>
    <h1 id="title">${title}</h1>
    <div id="stats"></div>
    <div class="toolbar">
      <input id="search" type="search" placeholder="Search this branch…" aria-label="Search this branch">
      <button id="search-prev" title="previous match">↑</button><button id="search-next" title="next match">↓</button>
      <span id="search-count" aria-live="polite"></span>
      <label title="show thinking (T)"><input id="toggle-thinking" type="checkbox" checked> Thinking</label>
      <label><input id="toggle-tools" type="checkbox" checked> Tools</label>
      <button id="expand-tools" title="show every output whole (O)">Expand outputs</button>
      <button id="toggle-hidden" aria-pressed="false" title="show messages pi hides in its terminal and extensions' data-only entries (H)">Show hidden messages</button>
      <button id="theme-toggle" title="switch light/dark">Light/dark</button>
      <a id="download-jsonl" href="#">Download JSONL</a>
      <span id="branch-info" class="mono"></span>
    </div>
    <div id="help-keys" class="help-hint">Keys: T thinking · O outputs · H hidden messages · / search · N next match, Shift+N previous · Esc clear search</div>
  </header>
  <div id="messages"></div>
  <noscript><p>This page needs JavaScript to show the conversation; the session is embedded below as base64 JSON.</p></noscript>
</main>
`;
}

/** The whole page for a session already in memory. */
export function renderHtml(input: ExportInput): string {
  const { view } = input;
  const page = new HtmlPage({ header: view.header, leafId: view.leafId, name: view.name, source: input.source, redacted: input.redacted, home: input.redacted ? undefined : os.homedir() });
  const parts = [page.start()];
  for (const e of view.entries) parts.push(page.rendered(e));
  parts.push(page.startIndex());
  for (const e of view.entries) parts.push(page.indexed(e));
  parts.push(page.startData());
  for (const e of view.entries) parts.push(page.entry(e));
  parts.push(page.end());
  return parts.join("");
}

/** The same page from a streamed session: three reads of the entries, one entry at a time. */
export async function* streamHtml(s: SessionStream, meta: { header: SessionHeader; source: string; redacted: boolean; redact: (text: string) => string }): AsyncGenerator<string> {
  const page = new HtmlPage({ header: meta.header, leafId: s.leafId === null ? null : meta.redact(s.leafId), name: s.name, source: meta.source, redacted: meta.redacted, home: meta.redacted ? undefined : os.homedir() });
  yield page.start();
  // Rendering makes the most garbage per byte written, so it collects most often.
  yield* batched(s.entries(), (e) => page.rendered(e), 4 << 20);
  yield page.startIndex();
  yield* batched(s.entries(), (e) => page.indexed(e), 8 << 20);
  yield page.startData();
  yield* batched(s.entries(), (e) => page.entry(e), 32 << 20);
  yield page.end();
}

// Rendering Markdown (marked, highlight.js, sanitize-html) makes much short-lived garbage, and V8
// lets its old space fill with it long before collecting: on a 200 MB session that alone took
// the export from ~150 MB to over 300 MB RSS, while the live set stays near 30 MB. A full
// collection after every few MB of rendered HTML keeps memory bounded (measured: 159 MB peak for
// the rendering pass, about 1 s more CPU). The collector is reached the one way Node offers at
// run time: expose it, then fetch it from a fresh context.
let gc: (() => void) | undefined;
function collectGarbage(): void {
  if (!gc) {
    v8.setFlagsFromString("--expose-gc");
    gc = vm.runInNewContext("gc") as () => void;
  }
  gc();
}

/**
 * Pieces of about 1 MB: fewer writes than one per entry, never more than one batch held; a
 * collection after every `collectEvery` characters written (plus 256 per entry).
 */
async function* batched(entries: AsyncIterable<SessionEntry>, piece: (e: SessionEntry) => string, collectEvery: number): AsyncGenerator<string> {
  let batch = "";
  let sinceCollect = 0;
  for await (const e of entries) {
    const p = piece(e);
    batch += p;
    sinceCollect += 256 + p.length;
    if (sinceCollect > collectEvery) {
      sinceCollect = 0;
      collectGarbage();
    }
    if (batch.length > 1 << 20) {
      yield batch;
      batch = "";
    }
  }
  if (batch) yield batch;
}
