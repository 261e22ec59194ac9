// Message text of the HTML export, rendered from Markdown at export time (marked), code fences
// highlighted (highlight.js) and the result sanitized (sanitize-html). Two walls, because the text
// is hostile: raw HTML in a message is shown as text, the way pi's TUI shows it, and whatever
// markup the renderer emits must still pass an allow-list that has no script, no event handler,
// no style, no frame or form, links only to http(s)/mailto, and images only from data: URIs (the
// page must never make a request, so a remote image becomes a link).

import hljs from "highlight.js/lib/common";
import { Marked, type Tokens } from "marked";
import sanitizeHtml from "sanitize-html";
import { escapeHtml, parseSkillBlock } from "./markdown-text.js";

const DATA_IMAGE = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*$/i;
const SAFE_HREF = /^(https?:|mailto:)/i;
// Highlighting a huge block costs more than it gives; it is shown plain.
const MAX_HIGHLIGHT = 200_000;

function highlight(code: string, lang: string | undefined): string {
  const language = lang?.trim().split(/\s+/)[0]?.toLowerCase();
  if (language && code.length <= MAX_HIGHLIGHT && hljs.getLanguage(language)) {
    return `<pre><code class="hljs language-${escapeHtml(language)}">${hljs.highlight(code, { language, ignoreIllegals: true }).value}</code></pre>`;
  }
  return `<pre><code class="hljs">${escapeHtml(code)}</code></pre>`;
}

const marked = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  tokenizer: {
    // Raw HTML stays text: returning undefined hands the characters to the text tokenizer.
    html: () => undefined,
    tag: () => undefined,
  },
  renderer: {
    code: (token: Tokens.Code) => highlight(token.text, token.lang),
    link(token: Tokens.Link) {
      const inner = this.parser.parseInline(token.tokens);
      const href = token.href.trim();
      if (!SAFE_HREF.test(href)) return inner;
      const title = token.title ? ` title="${escapeHtml(token.title)}"` : "";
      return `<a href="${escapeHtml(href)}"${title}>${inner}</a>`;
    },
    image(token: Tokens.Image) {
      const href = token.href.trim();
      const alt = escapeHtml(token.text || "image");
      if (DATA_IMAGE.test(href)) return `<img src="${escapeHtml(href)}" alt="${alt}">`;
      // A remote image would be a request: show where it points instead.
      if (SAFE_HREF.test(href)) return `<a href="${escapeHtml(href)}" class="remote-image">[image: ${alt}]</a>`;
      return `[image: ${alt}]`;
    },
    checkbox: ({ checked }: Tokens.Checkbox) => (checked ? "[x]" : "[ ]"),
  },
});

const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: [
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code", "span",
    "em", "strong", "del", "a", "img", "table", "thead", "tbody", "tr", "th", "td",
  ],
  allowedAttributes: { a: ["href", "title", "class", "rel"], img: ["src", "alt"], code: ["class"], span: ["class"], ol: ["start"], th: ["align"], td: ["align"] },
  allowedClasses: { code: ["hljs", "language-*"], span: ["hljs-*"], a: ["remote-image"] },
  allowedSchemes: ["http", "https", "mailto"],
  allowedSchemesByTag: { img: ["data"] },
  allowProtocolRelative: false,
  disallowedTagsMode: "escape",
  // An <img> that survived with anything but an inline raster image is dropped.
  exclusiveFilter: (frame) => frame.tag === "img" && !DATA_IMAGE.test(frame.attribs.src ?? ""),
  transformTags: { a: sanitizeHtml.simpleTransform("a", { rel: "noopener noreferrer nofollow" }) },
};

/** The allow-list pass alone: what any markup must get through before it reaches the page. */
export function sanitizeMarkup(html: string): string {
  return sanitizeHtml(html, SANITIZE);
}

/** Markdown → sanitized HTML, safe to put into the page with innerHTML. */
export function renderMarkdownHtml(text: string): string {
  return sanitizeMarkup(marked.parse(text, { async: false }));
}

/** Which Markdown of an entry the viewer shows, keyed the way html-client.ts looks it up. */
type Rendered = Record<string, string>;

function blocksOf(content: unknown): Record<string, unknown>[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? content.filter((b): b is Record<string, unknown> => !!b && typeof b === "object") : [];
}

// The viewer joins a message's text blocks the same way (textOf in html-client.ts).
export function textOf(content: unknown): string {
  return blocksOf(content)
    .filter((b) => b.type === "text")
    .map((b) => String(b.text ?? ""))
    .join("\n\n");
}

/**
 * The sanitized HTML for one entry: assistant text and thinking blocks by block index, a user or
 * custom message's joined text as "text" (for a user message with a skill block, the skill's text
 * as "skill" and the words after it as "text"), a summary as "summary". Undefined when there is none.
 */
export function renderEntryMarkdown(entry: unknown): Rendered | undefined {
  if (!entry || typeof entry !== "object") return undefined;
  const e = entry as Record<string, unknown>;
  const out: Rendered = {};
  const m = e.type === "message" && e.message && typeof e.message === "object" ? (e.message as Record<string, unknown>) : undefined;
  if (m?.role === "assistant") {
    blocksOf(m.content).forEach((b, i) => {
      const text = b.type === "text" ? b.text : b.type === "thinking" ? b.thinking : undefined;
      if (typeof text === "string" && text.trim()) out[i] = renderMarkdownHtml(text);
    });
  } else if (m && (m.role === "user" || m.role === "custom")) {
    // A skill pi put into the message: its text as "skill", the user's own words as "text".
    const text = textOf(m.content);
    const skill = m.role === "user" ? parseSkillBlock(text) : undefined;
    if (skill) out.skill = renderMarkdownHtml(skill.content);
    out.text = renderMarkdownHtml(skill ? (skill.userMessage ?? "") : text);
  } else if (e.type === "custom_message") {
    out.text = renderMarkdownHtml(textOf(e.content));
  } else if (e.type === "compaction" || e.type === "branch_summary") {
    out.summary = renderMarkdownHtml(String(e.summary ?? ""));
  }
  return Object.keys(out).length ? out : undefined;
}

/** The highlight.js language for a file path, by its extension or name; undefined when unknown. */
export function languageOfPath(file: string): string | undefined {
  const base = file.split(/[\\/]/).pop() ?? "";
  const ext = base.includes(".") ? base.slice(base.lastIndexOf(".") + 1).toLowerCase() : base.toLowerCase();
  return ext && ext.length <= 16 && hljs.getLanguage(ext) ? ext : undefined;
}

/**
 * A file's content as `read` returned it, highlighted as far as the viewer shows it at first:
 * `head`, its first `lines` lines, when it has more (the rest is shown as plain text once
 * unfolded), else `full`. Highlighting costs export time and page size for every byte: whole
 * outputs up to 100,000 characters took a 40 MiB export from 18 s to 63 s and its page from 68
 * to 96 MiB. The viewer joins the text the same way (textOf).
 */
export function highlightToolOutput(content: unknown, lang: string, lines: number): Rendered | undefined {
  const text = textOf(content);
  if (!text || text.length > MAX_HIGHLIGHT) return undefined;
  const hl = (code: string) => sanitizeMarkup(hljs.highlight(code, { language: lang, ignoreIllegals: true }).value);
  const split = text.split("\n");
  if (split.length <= lines) return { full: hl(text) };
  const head = split.slice(0, lines).join("\n");
  return head.length <= 8000 ? { head: hl(head) } : undefined;
}

/** JSON that can sit inside a <script> element: no "<" can close it or open a comment. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}
