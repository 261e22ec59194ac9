// `sessions show` output: the branch tree outline, then the conversation along one path.
// Plain text (no colour codes), so it pipes cleanly and honours NO_COLOR by construction.

import type { AssistantMessage, SessionEntry, ToolCallContent } from "../pi/index.js";
import { blocksOf, contentText, entryKind, entryPreview, entryText, formatCost, formatTokens, messageOf, oneLine, usageOf } from "./describe.js";
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
 * leaves, labelled entries and compactions are printed. `*` marks the shown path.
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
      const notable = e === start || children.length !== 1 || label !== undefined || e.type === "compaction" || e.type === "branch_summary";
      if (notable) {
        if (hidden) lines.push(`${pad}  ┆ ${hidden} more`);
        hidden = 0;
        const tags = [branchIds.has(e.id) ? `branches: ${children.length}` : "", children.length === 0 ? "leaf" : "", label ? `label: ${label}` : ""].filter(Boolean).join(", ");
        lines.push(`${pad}${onPath.has(e.id) ? "*" : " "} ${e.id} ${entryKind(e).padEnd(10)} ${entryPreview(e, 48)}${tags ? `  [${tags}]` : ""}`);
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

export function renderEntry(e: SessionEntry, view: SessionView, opts: RenderOptions): string {
  const m = messageOf(e);
  const label = view.labels.get(e.id);
  const when = typeof e.timestamp === "string" ? e.timestamp.replace("T", " ").replace(/\.\d+Z$/, "Z") : "";
  const tag = `[${e.id}]${label ? ` [label: ${label}]` : ""}  ${when}`;
  const toolLines = opts.toolLines ?? 8;
  if (m?.role === "assistant") {
    const a = m as unknown as AssistantMessage;
    const u = usageOf(e);
    const parts: string[] = [];
    for (const b of blocksOf(a.content)) {
      if (b.type === "text") parts.push(b.text);
      else if (b.type === "thinking") parts.push(`(thinking, ${b.thinking.length} chars)`);
      else if (b.type === "toolCall") parts.push(toolCallLine(b as ToolCallContent));
    }
    if (a.stopReason === "error" && a.errorMessage) parts.push(`(error: ${a.errorMessage})`);
    const meta = [a.model, u ? `${formatTokens(u.tokens)} tokens` : "", u ? formatCost(u.cost) : ""].filter(Boolean).join(" · ");
    return `## assistant ${meta ? `(${meta}) ` : ""}${tag}\n${indent(parts.join("\n"))}`;
  }
  if (m?.role === "toolResult") {
    const ok = m.isError ? "error" : "ok";
    return `## ← ${String(m.toolName ?? "tool")} ${ok} ${tag}\n${indent(head(contentText(m.content), toolLines))}`;
  }
  if (m?.role === "bashExecution") return `## $ ${String(m.command ?? "")} (exit ${String(m.exitCode ?? "?")}) ${tag}\n${indent(head(String(m.output ?? ""), toolLines))}`;
  if (m) return `## ${String(m.role)} ${tag}\n${indent(contentText(m.content))}`;
  if (e.type === "compaction") return `── compaction (${String(e.tokensBefore ?? "?")} tokens before) ${tag}\n${indent(head(entryText(e), toolLines))}`;
  if (e.type === "branch_summary") return `── branch summary ${tag}\n${indent(entryText(e))}`;
  if (e.type === "custom_message") return `## ${String(e.customType ?? "custom")} ${tag}\n${indent(entryText(e))}`;
  return `· ${e.type}: ${oneLine(entryText(e) || JSON.stringify((e as { data?: unknown }).data ?? ""), 100)} ${tag}`;
}

export function renderSession(view: SessionView, opts: RenderOptions = {}): string {
  const h = view.header;
  const out: string[] = [];
  out.push(`session ${h.id}${view.name ? `  "${view.name}"` : ""}`);
  out.push(`project ${h.cwd || "(unknown)"}   started ${h.timestamp}`);
  if (h.parentSession) out.push(`forked from ${h.parentSession}`);
  if (opts.source) out.push(`read from ${opts.source}`);
  out.push("");
  out.push(`tree: ${view.entries.length} entries, ${view.leaves.length} leaves, ${view.branchPoints.length} branch points, ${view.compactions.length} compactions`);
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
