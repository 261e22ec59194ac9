// Markdown export that reads well on GitHub: roles as headings, thinking and tool calls folded
// into <details>, tool output fenced (with the file's language for read/write/edit).

import type { AssistantMessage, SessionEntry, SessionHeader, ToolCallContent, ToolResultMessage } from "../model/session.js";
import type { SessionStats } from "../model/stats.js";
import type { SystemStep } from "../agents/pi/system-prompt.js";
import { sessionStats } from "../model/stats.js";
import { SystemReplay } from "../agents/pi/system-prompt.js";
import { blocksOf, contentText, entryText, entryUsage, formatCost, formatTokens, formatUsage, headerMetadata, messageFacts, messageOf, oneLine, replacementText, sessionTitle } from "../sessions/describe.js";
import { appliedEdits } from "../sessions/view.js";
import { escapeHtml, fence, languageOf, parseSkillBlock, safeMarkdown, type SkillBlock } from "./markdown-text.js";
import { checkpointDetails, systemSection } from "./markdown-system.js";
import type { SessionStream } from "./entry-stream.js";
import type { ExportInput } from "./model.js";

const ROLE_TITLE: Record<string, string> = { user: "User", assistant: "Assistant", toolResult: "Tool result", bashExecution: "Shell", custom: "Extension message" };

/** A context edit in force on the exported branch, as shown on the entry it edits. */
export interface EditMark {
  editId: string;
  omitted: boolean;
}

/** What rendering one entry needs besides the entry. */
interface EntryContext {
  labels: ReadonlyMap<string, string>;
  /** The tool result entries of this entry's calls, by call id. */
  results: Map<string, SessionEntry>;
  /** Call ids of the calls made on the branch: their results are shown inside the call. */
  called: Set<unknown>;
  edits: ReadonlyMap<string, EditMark>;
  /** The entry's system prompt step, when it carries system state. */
  system?: SystemStep;
}

const editNote = (m: EditMark | undefined) => m && `edited in context by ${m.editId}: ${m.omitted ? "omitted" : "content replaced"}`;

function meta(parts: (string | undefined | false)[]): string {
  return `<sub>${parts.filter(Boolean).map((p) => escapeHtml(String(p))).join(" · ")}</sub>`;
}

function resultBody(entry: SessionEntry | undefined, call: ToolCallContent, ctx: EntryContext): string {
  const result = entry && (messageOf(entry) as unknown as ToolResultMessage);
  if (!result) return "_No result recorded on this branch._";
  const text = contentText(result.content);
  const images = blocksOf(result.content).filter((b) => b.type === "image").length;
  const lang = call.name === "read" ? languageOf(call.arguments?.path) : "";
  const facts = [...messageFacts(entry!), editNote(ctx.edits.get(entry!.id))].filter(Boolean);
  const status = `${result.isError ? "**Result (error)**" : "**Result**"}${facts.length ? ` ${meta(facts)}` : ""}`;
  return `${status}\n\n${fence(text || "(empty)", lang)}${images ? `\n\n_${images} image(s) not shown_` : ""}`;
}

/**
 * An edit's changes as a diff: pi's own from the result's details (with line numbers), else the
 * replacements its arguments ask for as "-" and "+" lines. Undefined for any other call.
 */
function editDiffText(call: ToolCallContent, result: SessionEntry | undefined): string | undefined {
  if (call.name !== "edit") return undefined;
  const details = (result && (messageOf(result) as { details?: unknown } | undefined)?.details) as { diff?: unknown } | undefined;
  if (details && typeof details === "object" && typeof details.diff === "string" && details.diff) return details.diff;
  const args = (call.arguments ?? {}) as Record<string, unknown>;
  const edits: unknown[] = Array.isArray(args.edits) ? [...args.edits] : [];
  if (typeof args.oldText === "string" || typeof args.newText === "string") edits.push({ oldText: args.oldText, newText: args.newText });
  const parts = edits
    .filter((x): x is Record<string, unknown> => !!x && typeof x === "object")
    .map((x) => [x.oldText, x.newText].flatMap((t, i) => (typeof t === "string" && t ? t.split("\n").map((l) => (i ? "+" : "-") + l) : [])).join("\n"))
    .filter(Boolean);
  return parts.length ? parts.join("\n\u22ee\n") : undefined;
}

function toolCallDetails(call: ToolCallContent, result: SessionEntry | undefined, ctx: EntryContext): string {
  const args = call.arguments ?? {};
  const hint = oneLine(String((args as Record<string, unknown>).command ?? (args as Record<string, unknown>).path ?? ""), 60);
  const summary = `Tool call: <code>${escapeHtml(call.name)}</code>${hint ? ` ${escapeHtml(hint)}` : ""}${result && messageOf(result)?.isError ? " (error)" : ""}`;
  const diff = editDiffText(call, result);
  return `<details>\n<summary>${summary}</summary>\n\n${diff ? fence(diff, "diff") : fence(JSON.stringify(args, null, 2), "json")}\n\n${resultBody(result, call, ctx)}\n\n</details>`;
}

function assistantBody(e: SessionEntry, ctx: EntryContext): string {
  const a = messageOf(e) as unknown as AssistantMessage;
  const parts: string[] = [];
  for (const b of blocksOf(a.content)) {
    if (b.type === "thinking" && b.thinking.trim()) parts.push(`<details>\n<summary>Thinking</summary>\n\n${safeMarkdown(b.thinking)}\n\n</details>`);
    else if (b.type === "text" && b.text.trim()) parts.push(safeMarkdown(b.text));
    else if (b.type === "toolCall") parts.push(toolCallDetails(b as ToolCallContent, ctx.results.get((b as ToolCallContent).id), ctx));
  }
  if (a.stopReason === "error" && a.errorMessage) parts.push(`> **Error:** ${safeMarkdown(a.errorMessage)}`);
  if (a.stopReason === "aborted") parts.push("> _Aborted by the user._");
  return parts.join("\n\n");
}

/** A context edit: which entry it changes in the model's context, and to what. */
function contextEditBody(e: SessionEntry): string {
  const target = `<code>${escapeHtml(String(e.targetId ?? "?"))}</code>`;
  if (e.replacement === null) return `Leaves entry ${target} out of the model's context from here on (the entry itself is unchanged).`;
  const content = (e.replacement as { content?: unknown } | undefined)?.content;
  const images = blocksOf(content).filter((b) => b.type === "image").length;
  const text = replacementText(e);
  return `Replaces what the model sees of entry ${target} from here on (the entry itself is unchanged) with:\n\n${text ? safeMarkdown(text) : "_(no text)_"}${images ? `\n\n_${images} image(s) not shown_` : ""}`;
}

/** A skill pi put into a user message, folded as pi's page folds it: its name, where it came from, its text. */
function skillDetails(skill: SkillBlock): string {
  return `<details>\n<summary>Skill: <code>${escapeHtml(skill.name)}</code></summary>\n\n${meta([skill.location])}\n\n${safeMarkdown(skill.content)}\n\n</details>`;
}

function entrySection(e: SessionEntry, ctx: EntryContext): string | undefined {
  const m = messageOf(e);
  const label = ctx.labels.get(e.id);
  const when = typeof e.timestamp === "string" ? e.timestamp.replace("T", " ").replace(/\.\d+Z$/, " UTC") : undefined;
  const common = [when, `id ${e.id}`, label && `label: ${label}`, editNote(ctx.edits.get(e.id))];
  if (m) {
    const role = String(m.role);
    if (role === "toolResult" && ctx.called.has(String(m.toolCallId))) return undefined; // shown inside its call
    if (role === "system" && ctx.system) return systemSection(ctx.system, meta(common));
    const title = ROLE_TITLE[role] ?? role;
    if (role === "assistant") {
      const u = entryUsage(e);
      const a = m as unknown as AssistantMessage;
      return `## ${title}\n\n${meta([a.model, u && `${formatTokens(u.tokens)} tokens`, u && formatCost(u.cost), ...messageFacts(e), ...common])}\n\n${assistantBody(e, ctx)}`;
    }
    if (role === "toolResult") return `## ${title}: ${escapeHtml(String(m.toolName ?? ""))}\n\n${meta([...messageFacts(e), ...common])}\n\n${fence(contentText(m.content))}`;
    if (role === "bashExecution") return `## ${title}\n\n${meta([`exit ${String(m.exitCode ?? "?")}`, ...common])}\n\n${fence(`$ ${String(m.command ?? "")}\n${String(m.output ?? "")}`, "console")}`;
    const imgs = blocksOf(m.content).filter((b) => b.type === "image").length;
    const text = contentText(m.content);
    const skill = role === "user" ? parseSkillBlock(text) : undefined;
    const body = skill ? `${skillDetails(skill)}${skill.userMessage ? `\n\n${safeMarkdown(skill.userMessage)}` : ""}` : safeMarkdown(text);
    return `## ${title}\n\n${meta(common)}\n\n${body}${imgs ? `\n\n_${imgs} image(s) attached_` : ""}`;
  }
  const u = entryUsage(e);
  switch (e.type) {
    case "compaction":
      return `## Compaction\n\n${meta([`${String(e.tokensBefore ?? "?")} tokens before`, u && `summary: ${formatUsage(u)}`, ...common])}\n\n<details>\n<summary>Summary of the earlier conversation</summary>\n\n${safeMarkdown(entryText(e))}\n\n</details>${ctx.system ? `\n\n${checkpointDetails(ctx.system)}` : ""}`;
    case "branch_summary":
      return `## Branch summary\n\n${meta([u && `summary: ${formatUsage(u)}`, ...common])}\n\n${safeMarkdown(entryText(e))}`;
    case "custom_message":
      // display: false is a message pi keeps out of its terminal (the HTML page hides it until asked).
      return `## ${escapeHtml(String(e.customType ?? "Extension message"))}\n\n${meta([e.display === false && "hidden in pi's terminal", ...common])}\n\n${safeMarkdown(entryText(e))}`;
    case "context_edit":
      return `## Context edit\n\n${meta(common)}\n\n${contextEditBody(e)}`;
    case "usage": {
      const what = [`${String(e.provider ?? "?")}/${String(e.model ?? "?")}`, u && formatUsage(u), typeof e.note === "string" && e.note, `id ${e.id}`];
      return `_Usage (${escapeHtml(String(e.kind ?? "?"))}): ${what.filter(Boolean).map((p) => escapeHtml(String(p))).join(" · ")}_`;
    }
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
  rootCount: number;
  /** sessionStats of the exported path. */
  stats: SessionStats;
  source: string;
  redacted: boolean;
}

/** The title and the facts table. */
function head(info: HeadInfo): string {
  const h = info.header;
  const { stats } = info;
  const title = info.name ?? sessionTitle(h);
  const rows: [string, string][] = [
    ["Session", `\`${h.id}\``],
    ["Project", h.cwd ? `\`${h.cwd}\`` : "(unknown)"],
    ["Started", h.timestamp],
    ["Branch", `\`${info.leafId ?? "-"}\` (${info.pathLength} of ${info.entryCount} entries, ${info.leafCount} leaves${info.rootCount > 1 ? `, ${info.rootCount} roots` : ""})`],
    ["Models", stats.models.join(", ") || "-"],
    ["Turns", String(stats.turns)],
    ["Tokens / cost", `${formatTokens(stats.tokens)} / ${formatCost(stats.cost)}`],
  ];
  if (h.parentSession) rows.push(["Forked from", `\`${h.parentSession}\``]);
  for (const [k, v] of headerMetadata(h)) rows.push([`Header ${escapeHtml(k)}`, escapeHtml(v)]);
  rows.push(["Source", escapeHtml(info.source)]);
  if (info.redacted) rows.push(["Redacted", "secrets are replaced by `[REDACTED]` or `[REDACTED:<file> <provider>]`"]);
  const table = ["| | |", "|---|---|", ...rows.map(([k, v]) => `| ${k} | ${v.replace(/\|/g, "\\|")} |`)].join("\n");
  return `# ${escapeHtml(title)}\n\n${table}\n\n---\n\n`;
}

/** The whole document at once, from a session held in memory. */
export function renderMarkdown(input: ExportInput): string {
  const { view } = input;
  const results = new Map<string, SessionEntry>();
  for (const e of view.path) {
    const m = messageOf(e);
    if (m?.role === "toolResult") results.set(String(m.toolCallId), e);
  }
  const called = new Set<unknown>();
  for (const e of view.path) for (const b of blocksOf(messageOf(e)?.role === "assistant" ? messageOf(e)!.content : [])) if (b.type === "toolCall") called.add((b as ToolCallContent).id);
  const edits = new Map([...view.edits].map(([target, edit]) => [target, editMark(edit)]));

  const sections = view.path.map((e) => entrySection(e, { labels: view.labels, results, called, edits, system: view.system.get(e.id) })).filter((s): s is string => !!s);
  const info: HeadInfo = {
    header: view.header,
    name: view.name,
    leafId: view.leafId,
    pathLength: view.path.length,
    entryCount: view.entries.length,
    leafCount: view.leaves.length,
    rootCount: view.tree.children.get(null)?.length ?? 0,
    stats: sessionStats(view.path),
    source: input.source,
    redacted: input.redacted,
  };
  return `${head(info)}${sections.join("\n\n")}\n`;
}

const editMark = (edit: SessionEntry): EditMark => ({ editId: edit.id, omitted: edit.replacement === null });

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
  const ids = new Set(records.map((r) => r.id));
  const rootCount = records.filter((r) => r.parentId === null || r.parentId === r.id || !ids.has(r.parentId)).length;
  yield head({ header: meta.header, name: s.name, leafId, pathLength: s.branch.length, entryCount: records.length, leafCount: s.leafCount, rootCount, stats: s.stats(s.branch), source: meta.source, redacted: meta.redacted });

  // A context edit comes after the entry it edits: its mark is needed first, so the branch's
  // edits are read ahead (an id and a flag each, not their replacement text), with the newest
  // compaction's firstKeptEntryId: pi applies only the edits in its context (appliedEdits).
  const editAt = s.branch.filter((i) => records[i].type === "context_edit");
  const edits = new Map<string, EditMark>();
  if (editAt.length) {
    const read: { id: string | undefined; targetId?: unknown; replacement?: unknown; mark: EditMark }[] = [];
    for await (const e of s.entriesAt(editAt)) read.push({ id: e.id, targetId: e.targetId, replacement: e.replacement, mark: editMark(e) });
    const compactionAt = s.branch.findLast((i) => records[i].type === "compaction");
    let firstKept: unknown;
    if (compactionAt !== undefined) for await (const c of s.entriesAt([compactionAt])) firstKept = c.firstKeptEntryId;
    for (const [target, e] of appliedEdits(s.branch.map((i) => records[i]), firstKept, read)) edits.set(target, e.mark);
  }
  const system = new SystemReplay();

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
      const results = new Map<string, SessionEntry>();
      for (const call of callsOf.get(index) ?? []) {
        k++;
        results.set(call.id as string, await next());
      }
      const section = entrySection(e, { labels: s.labels, results, called, edits, system: system.step(e) });
      if (!section) continue;
      yield first ? section : `\n\n${section}`;
      first = false;
    }
  } finally {
    await entries.return?.();
  }
  yield "\n";
}
