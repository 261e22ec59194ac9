// `sessions show` output: the branch tree outline, then the conversation along one path.
// Plain text (no colour codes), so it pipes cleanly and honours NO_COLOR by construction.

import type { AssistantMessage, SessionEntry, ToolCallContent, ToolDeclaration } from "../model/session.js";
import type { SystemState, SystemStep } from "../agents/pi/system-prompt.js";
import { describeSystemChange, toolSignature } from "../agents/pi/system-prompt.js";
import { blocksOf, contentText, entryKind, entryPreview, entryText, entryUsage, formatCost, formatTokens, formatUsage, headerMetadata, messageFacts, messageOf, oneLine, replacementText, systemPreview } from "./describe.js";
import type { SessionView } from "./view.js";

export interface RenderOptions {
  /** Lines of tool output to show per result (default 8; 0 = all). */
  toolLines?: number;
  /** Where the bytes came from, for the heading. */
  source?: string;
}

function indent(text: string, prefix = "  "): string {
  return text.split("\n").map((l) => (l ? prefix + l : l)).join("\n");
}

function head(text: string, lines: number): string {
  if (lines <= 0) return text;
  const all = text.split("\n");
  return all.length <= lines ? text : `${all.slice(0, lines).join("\n")}\n… ${all.length - lines} more lines`;
}

/**
 * The tree with straight runs folded: only roots, branch points, the first entry of each branch,
 * leaves, labelled entries, entries a context edit on the shown path changed, and compactions are
 * printed. `*` marks the shown path.
 */
export function treeOutline(view: SessionView): string[] {
  const onPath = new Set(view.path.map((e) => e.id));
  const branchIds = new Set(view.branchPoints.map((e) => e.id));
  const lines: string[] = [];
  const kids = (id: string) => view.tree.children.get(id) ?? [];
  const stack: { start: SessionEntry; depth: number }[] = [...(view.tree.children.get(null) ?? [])].reverse().map((start) => ({ start, depth: 0 }));
  while (stack.length) {
    const { start, depth } = stack.pop()!;
    const pad = "  ".repeat(depth);
    let e: SessionEntry | undefined = start;
    let hidden = 0;
    const seen = new Set<string>();
    while (e && !seen.has(e.id)) {
      seen.add(e.id);
      const children = kids(e.id);
      const label = view.labels.get(e.id);
      const edited = view.edits.has(e.id) ? "edited" : "";
      const notable = e === start || children.length !== 1 || label !== undefined || !!edited || e.type === "compaction" || e.type === "branch_summary";
      if (notable) {
        if (hidden) lines.push(`${pad}  ┆ ${hidden} more`);
        hidden = 0;
        const tags = [branchIds.has(e.id) ? `branches: ${children.length}` : "", children.length === 0 ? "leaf" : "", label ? `label: ${label}` : "", edited].filter(Boolean).join(", ");
        const preview = entryKind(e) === "system" ? oneLine(systemPreview(e, view.leadingSystem.has(e.id)), 48) : entryPreview(e, 48);
        lines.push(`${pad}${onPath.has(e.id) ? "*" : " "} ${e.id} ${entryKind(e).padEnd(10)} ${preview}${tags ? `  [${tags}]` : ""}`);
      } else hidden++;
      if (children.length === 1) e = children[0];
      else {
        for (const child of [...children].reverse()) stack.push({ start: child, depth: depth + 1 });
        e = undefined;
      }
    }
  }
  return lines;
}

function toolCallLine(b: ToolCallContent): string {
  return `→ ${b.name}(${oneLine(JSON.stringify(b.arguments ?? {}), 100)})`;
}

function toolLine(t: ToolDeclaration): string {
  const desc = typeof t.description === "string" ? oneLine(t.description, 80) : "";
  return `${toolSignature(t)}${desc ? `  ${desc}` : ""}`;
}

/** A whole prompt: instructions, each section under its name, then the tools with parameters. */
function stateLines(state: SystemState, lines: number): string[] {
  const out: string[] = [];
  for (const text of state.instructions) out.push(head(text, lines));
  for (const [name, text] of state.sections) out.push(`── section ${name}`, indent(head(text, lines)));
  out.push(`tools (${state.tools.size}):`, ...[...state.tools.values()].map((t) => `  ${toolLine(t)}`));
  return out;
}

/** A later system message: only what it changed, resolved against the prompt before it. */
function updateLines(step: SystemStep, lines: number): string[] {
  const out: string[] = [];
  if (step.instructions) out.push("+ instructions", indent(head(step.instructions, lines)));
  for (const s of step.sections) {
    if (s.text === undefined) out.push(`- section ${s.name} removed${s.change === "removed-unknown" ? " (was not in the prompt)" : ""}`);
    else out.push(`${s.change === "added" ? "+" : "~"} section ${s.name} ${s.change}`, indent(head(s.text, lines)));
  }
  for (const t of step.tools) out.push(t.tool ? `${t.change === "added" ? "+" : "~"} tool ${toolLine(t.tool)}${t.change === "redefined" ? "  (redefined)" : ""}` : `- tool ${t.name}${t.change === "removed-unknown" ? " (was not declared)" : ""}`);
  return out.length ? out : ["(no change)"];
}

function systemEntry(step: SystemStep, tag: string, lines: number): string {
  if (step.kind !== "update") return `## system prompt ${tag}\n${indent(stateLines(step.state, lines).join("\n"))}`;
  const changes = describeSystemChange(step.message);
  return `## system update${changes ? `: ${changes}` : ""} ${tag}\n${indent(updateLines(step, lines).join("\n"))}`;
}

export function renderEntry(e: SessionEntry, view: SessionView, opts: RenderOptions): string {
  const m = messageOf(e);
  const label = view.labels.get(e.id);
  const edit = view.edits.get(e.id);
  const when = typeof e.timestamp === "string" ? e.timestamp.replace("T", " ").replace(/\.\d+Z$/, "Z") : "";
  const edited = edit ? ` [edited in context by ${edit.id}: ${edit.replacement === null ? "omitted" : "content replaced"}]` : "";
  const tag = `[${e.id}]${label ? ` [label: ${label}]` : ""}${edited}  ${when}`;
  const toolLines = opts.toolLines ?? 8;
  const step = view.system.get(e.id);
  if (m?.role === "system" && step) return systemEntry(step, tag, toolLines);
  if (m?.role === "assistant") {
    const a = m as unknown as AssistantMessage;
    const u = entryUsage(e);
    const parts: string[] = [];
    for (const b of blocksOf(a.content)) {
      if (b.type === "text") parts.push(b.text);
      else if (b.type === "thinking") parts.push(`(thinking, ${b.thinking.length} chars)`);
      else if (b.type === "toolCall") parts.push(toolCallLine(b as ToolCallContent));
    }
    if (a.stopReason === "error" && a.errorMessage) parts.push(`(error: ${a.errorMessage})`);
    const meta = [a.model, u ? `${formatTokens(u.tokens)} tokens` : "", u ? formatCost(u.cost) : "", ...messageFacts(e)].filter(Boolean).join(" · ");
    return `## assistant ${meta ? `(${meta}) ` : ""}${tag}\n${indent(parts.join("\n"))}`;
  }
  if (m?.role === "toolResult") {
    const ok = [m.isError ? "error" : "ok", ...messageFacts(e)].join(" · ");
    return `## ← ${String(m.toolName ?? "tool")} ${ok} ${tag}\n${indent(head(contentText(m.content), toolLines))}`;
  }
  if (m?.role === "bashExecution") return `## $ ${String(m.command ?? "")} (exit ${String(m.exitCode ?? "?")}) ${tag}\n${indent(head(String(m.output ?? ""), toolLines))}`;
  if (m) return `## ${String(m.role)} ${tag}\n${indent(contentText(m.content))}`;
  const u = entryUsage(e);
  const cost = u ? `; summary: ${formatUsage(u)}` : "";
  if (e.type === "compaction") {
    // The checkpoint mostly repeats the prompt shown at its start: names only, what changed is in the updates.
    const checkpoint = step ? `\n${indent(`system prompt from here on: sections ${[...step.state.sections.keys()].join(", ") || "(none)"}; tools ${[...step.state.tools.keys()].join(", ") || "(none)"}`)}` : "";
    return `── compaction (${String(e.tokensBefore ?? "?")} tokens before${cost}) ${tag}\n${indent(head(entryText(e), toolLines))}${checkpoint}`;
  }
  if (e.type === "branch_summary") return `── branch summary${u ? ` (${cost.slice(2)})` : ""} ${tag}\n${indent(entryText(e))}`;
  if (e.type === "usage") return `· usage ${String(e.kind ?? "?")}: ${String(e.provider ?? "?")}/${String(e.model ?? "?")}${u ? ` · ${formatUsage(u)}` : ""}${typeof e.note === "string" ? ` · ${oneLine(e.note, 100)}` : ""} ${tag}`;
  if (e.type === "context_edit") {
    const target = String(e.targetId ?? "?");
    if (e.replacement === null) return `· context edit: ${target} omitted from the model's context ${tag}`;
    return `· context edit: ${target} replaced in the model's context with: ${tag}\n${indent(head(replacementText(e) || "(no text)", toolLines))}`;
  }
  if (e.type === "custom_message") return `## ${String(e.customType ?? "custom")} ${tag}\n${indent(entryText(e))}`;
  return `· ${e.type}: ${oneLine(entryText(e) || JSON.stringify((e as { data?: unknown }).data ?? ""), 100)} ${tag}`;
}

export function renderSession(view: SessionView, opts: RenderOptions = {}): string {
  const h = view.header;
  const out: string[] = [];
  out.push(`session ${h.id}${view.name ? `  "${view.name}"` : ""}`);
  out.push(`project ${h.cwd || "(unknown)"}   started ${h.timestamp}`);
  if (h.parentSession) out.push(`forked from ${h.parentSession}`);
  for (const [k, v] of headerMetadata(h)) out.push(`header ${k}: ${v}`);
  if (opts.source) out.push(`read from ${opts.source}`);
  out.push("");
  const roots = view.tree.children.get(null)?.length ?? 0;
  out.push(`tree: ${view.entries.length} entries, ${roots > 1 ? `${roots} roots, ` : ""}${view.leaves.length} leaves, ${view.branchPoints.length} branch points, ${view.compactions.length} compactions`);
  out.push(...treeOutline(view));
  out.push("");
  out.push(`conversation along ${view.leafId ?? "(empty)"} (${view.path.length} entries; pick another with --branch ID):`);
  out.push("");
  for (const e of view.path) {
    if (e.type === "label") continue; // shown beside the entry it labels
    out.push(renderEntry(e, view, opts), "");
  }
  return out.join("\n");
}
