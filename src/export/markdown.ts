// Markdown export that reads well on GitHub: roles as headings, thinking and tool calls folded
// into <details>, tool output fenced (with the file's language for read/write/edit).

import type { AssistantMessage, SessionEntry, SessionHeader, SessionStats, ToolCallContent, ToolResultMessage } from "../pi/index.js";
import { sessionStats } from "../pi/index.js";
import { blocksOf, contentText, entryText, formatCost, formatTokens, messageOf, oneLine, usageOf } from "../sessions/describe.js";
import { escapeHtml, fence, languageOf, safeMarkdown } from "./markdown-text.js";
import type { SessionStream } from "./entry-stream.js";
import type { ExportInput } from "./model.js";

const ROLE_TITLE: Record<string, string> = { user: "User", assistant: "Assistant", toolResult: "Tool result", bashExecution: "Shell", custom: "Extension message" };

function meta(parts: (string | undefined | false)[]): string {
  return `<sub>${parts.filter(Boolean).map((p) => escapeHtml(String(p))).join(" · ")}</sub>`;
}

function resultBody(result: ToolResultMessage | undefined, call: ToolCallContent): string {
  if (!result) return "_No result recorded on this branch._";
  const text = contentText(result.content);
  const images = blocksOf(result.content).filter((b) => b.type === "image").length;
  const lang = call.name === "read" ? languageOf(call.arguments?.path) : "";
  const status = result.isError ? "**Result (error)**" : "**Result**";
  return `${status}\n\n${fence(text || "(empty)", lang)}${images ? `\n\n_${images} image(s) not shown_` : ""}`;
}

function toolCallDetails(call: ToolCallContent, result: ToolResultMessage | undefined): string {
  const args = call.arguments ?? {};
  const hint = oneLine(String((args as Record<string, unknown>).command ?? (args as Record<string, unknown>).path ?? ""), 60);
  const summary = `Tool call: <code>${escapeHtml(call.name)}</code>${hint ? ` ${escapeHtml(hint)}` : ""}${result?.isError ? " (error)" : ""}`;
  return `<details>\n<summary>${summary}</summary>\n\n${fence(JSON.stringify(args, null, 2), "json")}\n\n${resultBody(result, call)}\n\n</details>`;
}

function assistantBody(e: SessionEntry, results: Map<string, ToolResultMessage>): string {
  const a = messageOf(e) as unknown as AssistantMessage;
  const parts: string[] = [];
  for (const b of blocksOf(a.content)) {
    if (b.type === "thinking" && b.thinking.trim()) parts.push(`<details>\n<summary>Thinking</summary>\n\n${safeMarkdown(b.thinking)}\n\n</details>`);
    else if (b.type === "text" && b.text.trim()) parts.push(safeMarkdown(b.text));
    else if (b.type === "toolCall") parts.push(toolCallDetails(b as ToolCallContent, results.get((b as ToolCallContent).id)));
  }
  if (a.stopReason === "error" && a.errorMessage) parts.push(`> **Error:** ${safeMarkdown(a.errorMessage)}`);
  if (a.stopReason === "aborted") parts.push("> _Aborted by the user._");
  return parts.join("\n\n");
}

function entrySection(e: SessionEntry, labels: ReadonlyMap<string, string>, results: Map<string, ToolResultMessage>, called: Set<unknown>): string | undefined {
  const m = messageOf(e);
  const label = labels.get(e.id);
  const when = typeof e.timestamp === "string" ? e.timestamp.replace("T", " ").replace(/\.\d+Z$/, " UTC") : undefined;
  const common = [when, `id ${e.id}`, label && `label: ${label}`];
  if (m) {
    const role = String(m.role);
    if (role === "toolResult" && called.has(String(m.toolCallId))) return undefined; // shown inside its call
    const title = ROLE_TITLE[role] ?? role;
    if (role === "assistant") {
      const u = usageOf(e);
      const a = m as unknown as AssistantMessage;
      return `## ${title}\n\n${meta([a.model, u && `${formatTokens(u.tokens)} tokens`, u && formatCost(u.cost), ...common])}\n\n${assistantBody(e, results)}`;
    }
    if (role === "toolResult") return `## ${title}: ${escapeHtml(String(m.toolName ?? ""))}\n\n${meta(common)}\n\n${fence(contentText(m.content))}`;
    if (role === "bashExecution") return `## ${title}\n\n${meta([`exit ${String(m.exitCode ?? "?")}`, ...common])}\n\n${fence(`$ ${String(m.command ?? "")}\n${String(m.output ?? "")}`, "console")}`;
    const imgs = blocksOf(m.content).filter((b) => b.type === "image").length;
    return `## ${title}\n\n${meta(common)}\n\n${safeMarkdown(contentText(m.content))}${imgs ? `\n\n_${imgs} image(s) attached_` : ""}`;
  }
  switch (e.type) {
    case "compaction":
      return `## Compaction\n\n${meta([`${String(e.tokensBefore ?? "?")} tokens before`, ...common])}\n\n<details>\n<summary>Summary of the earlier conversation</summary>\n\n${safeMarkdown(entryText(e))}\n\n</details>`;
    case "branch_summary":
      return `## Branch summary\n\n${meta(common)}\n\n${safeMarkdown(entryText(e))}`;
    case "custom_message":
      return `## ${escapeHtml(String(e.customType ?? "Extension message"))}\n\n${meta(common)}\n\n${safeMarkdown(entryText(e))}`;
    case "model_change":
      return `_Model: ${escapeHtml(entryText(e))}_`;
    case "thinking_level_change":
      return `_Thinking level: ${escapeHtml(entryText(e))}_`;
    default:
      return undefined; // labels are shown on their target; session_info in the title
  }
}

interface HeadInfo {
  header: SessionHeader;
  name: string | undefined;
  leafId: string | null;
  pathLength: number;
  entryCount: number;
  leafCount: number;
  /** sessionStats of the exported path. */
  stats: SessionStats;
  source: string;
  redacted: boolean;
}

/** The title and the facts table. */
function head(info: HeadInfo): string {
  const h = info.header;
  const { stats } = info;
  const title = info.name ?? `pi session ${h.id.slice(0, 8)}`;
  const rows: [string, string][] = [
    ["Session", `\`${h.id}\``],
    ["Project", h.cwd ? `\`${h.cwd}\`` : "(unknown)"],
    ["Started", h.timestamp],
    ["Branch", `\`${info.leafId ?? "-"}\` (${info.pathLength} of ${info.entryCount} entries, ${info.leafCount} leaves)`],
    ["Models", stats.models.join(", ") || "-"],
    ["Turns", String(stats.turns)],
    ["Tokens / cost", `${formatTokens(stats.tokens)} / ${formatCost(stats.cost)}`],
  ];
  if (h.parentSession) rows.push(["Forked from", `\`${h.parentSession}\``]);
  rows.push(["Source", escapeHtml(info.source)]);
  if (info.redacted) rows.push(["Redacted", "secrets are replaced by `[REDACTED]` or `[REDACTED:<file> <provider>]`"]);
  const table = ["| | |", "|---|---|", ...rows.map(([k, v]) => `| ${k} | ${v.replace(/\|/g, "\\|")} |`)].join("\n");
  return `# ${escapeHtml(title)}\n\n${table}\n\n---\n\n`;
}

/** The whole document at once, from a session held in memory. */
export function renderMarkdown(input: ExportInput): string {
  const { view } = input;
  const results = new Map<string, ToolResultMessage>();
  for (const e of view.path) {
    const m = messageOf(e);
    if (m?.role === "toolResult") results.set(String(m.toolCallId), m as unknown as ToolResultMessage);
  }
  const called = new Set<unknown>();
  for (const e of view.path) for (const b of blocksOf(messageOf(e)?.role === "assistant" ? messageOf(e)!.content : [])) if (b.type === "toolCall") called.add((b as ToolCallContent).id);

  const sections = view.path.map((e) => entrySection(e, view.labels, results, called)).filter((s): s is string => !!s);
  const info: HeadInfo = {
    header: view.header,
    name: view.name,
    leafId: view.leafId,
    pathLength: view.path.length,
    entryCount: view.entries.length,
    leafCount: view.leaves.length,
    stats: sessionStats(view.path),
    source: input.source,
    redacted: input.redacted,
  };
  return `${head(info)}${sections.join("\n\n")}\n`;
}

/**
 * The same document, section by section, from a streamed session: one entry (an assistant
 * message with its tool results) in memory at a time. `header` is the (redacted) header.
 */
export async function* streamMarkdown(s: SessionStream, meta: { header: SessionHeader; source: string; redacted: boolean; redact: (text: string) => string }): AsyncGenerator<string> {
  const { records } = s;
  // Pairing as renderMarkdown does it: the last result on the path for each call id, and the
  // results of calls made on the path are shown inside their call, not on their own.
  const resultAt = new Map<string, number>();
  const called = new Set<unknown>();
  for (const i of s.branch) {
    const r = records[i];
    if (r.role === "toolResult" && r.toolCallId !== undefined) resultAt.set(r.toolCallId, i);
    if (r.role === "assistant") for (const id of r.toolCallIds ?? []) called.add(id);
  }
  // The entries to read, in the order they are rendered: each assistant message is followed by
  // the results of its calls. Only assistant messages with results get a (small) list.
  const order: number[] = [];
  const callsOf = new Map<number, { id: unknown; at: number }[]>();
  for (const i of s.branch) {
    const r = records[i];
    if (r.role === "toolResult" && called.has(r.toolCallId)) continue;
    order.push(i);
    if (r.role !== "assistant") continue;
    const calls: { id: unknown; at: number }[] = [];
    for (const id of r.toolCallIds ?? []) {
      const at = resultAt.get(id as string);
      if (at !== undefined) calls.push({ id, at });
    }
    if (calls.length) {
      callsOf.set(i, calls);
      for (const c of calls) order.push(c.at);
    }
  }
  const leafId = s.leafId === null ? null : meta.redact(s.leafId);
  yield head({ header: meta.header, name: s.name, leafId, pathLength: s.branch.length, entryCount: records.length, leafCount: s.leafCount, stats: s.stats(s.branch), source: meta.source, redacted: meta.redacted });

  const entries = s.entriesAt(order)[Symbol.asyncIterator]();
  const next = async (): Promise<SessionEntry> => {
    const r = await entries.next();
    if (r.done) throw new Error("the session stream ended early");
    return r.value;
  };
  let first = true;
  try {
    for (let k = 0; k < order.length; ) {
      const index = order[k++];
      const e = await next();
      const results = new Map<string, ToolResultMessage>();
      for (const call of callsOf.get(index) ?? []) {
        k++;
        results.set(call.id as string, messageOf(await next()) as unknown as ToolResultMessage);
      }
      const section = entrySection(e, s.labels, results, called);
      if (!section) continue;
      yield first ? section : `\n\n${section}`;
      first = false;
    }
  } finally {
    await entries.return?.();
  }
  yield "\n";
}
