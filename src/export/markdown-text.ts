// Helpers for putting arbitrary session text into GitHub-flavoured Markdown safely.

/** A fence longer than any backtick run in the text, so the text cannot close it early. */
export function fence(text: string, lang = ""): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const f = "`".repeat(longest + 1);
  return `${f}${lang}\n${text.replace(/\n$/, "")}\n${f}`;
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * Message text is Markdown already; keep it, but neutralise raw HTML outside code so a stray
 * `</details>` in a message cannot break the page structure around it.
 */
export function safeMarkdown(text: string): string {
  let inFence: string | null = null;
  return text
    .split("\n")
    .map((line) => {
      const m = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
      if (m) {
        if (inFence === null) inFence = m[1][0].repeat(m[1].length);
        else if (m[1].startsWith(inFence)) inFence = null;
        return line;
      }
      if (inFence !== null) return line;
      // Odd parts of a split on backtick runs are inline code: leave those alone.
      return line
        .split(/(`+[^`]*`+)/)
        .map((part, i) => (i % 2 === 1 ? part : part.replace(/</g, "&lt;")))
        .join("");
    })
    .join("\n");
}

const EXT_LANG: Record<string, string> = {
  ts: "ts", tsx: "tsx", js: "js", mjs: "js", cjs: "js", jsx: "jsx", py: "python", rs: "rust", go: "go",
  rb: "ruby", java: "java", kt: "kotlin", c: "c", h: "c", cpp: "cpp", cc: "cpp", hpp: "cpp", cs: "csharp",
  sh: "sh", bash: "bash", zsh: "sh", json: "json", jsonl: "json", yml: "yaml", yaml: "yaml", toml: "toml",
  md: "markdown", html: "html", css: "css", sql: "sql", swift: "swift", php: "php", xml: "xml",
};

/** A fence language for a file path (read/write/edit tools), from its extension. */
export function languageOf(filePath: unknown): string {
  if (typeof filePath !== "string") return "";
  const ext = /\.([A-Za-z0-9]+)$/.exec(filePath)?.[1]?.toLowerCase();
  return (ext && EXT_LANG[ext]) || "";
}

/** A skill pi 1.x put into a user message (`/skill:name args`), and what the user wrote after it. */
export interface SkillBlock {
  name: string;
  location: string;
  content: string;
  userMessage?: string;
}

// The shape pi writes (agent-session.js _expandSkillCommand) and its own page parses: the block
// opens the message, and the user's text, if any, follows after a blank line.
const SKILL_BLOCK = /^<skill name="([^"]+)" location="([^"]+)">\n([\s\S]*?)\n<\/skill>(?:\n\n([\s\S]+))?$/;

export function parseSkillBlock(text: string): SkillBlock | undefined {
  if (!text.startsWith("<skill name=")) return undefined;
  const m = SKILL_BLOCK.exec(text);
  return m ? { name: m[1], location: m[2], content: m[3], userMessage: m[4]?.trim() || undefined } : undefined;
}
