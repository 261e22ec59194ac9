// Markdown for pi 1.x's system prompt entries: the prompt with its sections and the tool list
// with parameters, each later "system update" as what it changed, and a compaction's checkpoint.

import type { SystemState, SystemStep } from "../agents/pi/system-prompt.js";
import type { ToolDeclaration } from "../model/session.js";
import { describeSystemChange, toolParameters } from "../agents/pi/system-prompt.js";
import { escapeHtml, fence, safeMarkdown } from "./markdown-text.js";

const code = (text: string) => `<code>${escapeHtml(text)}</code>`;
const flat = (text: string) => text.replace(/\s+/g, " ").trim();
const lines = (text: string) => {
  const n = text.split("\n").length;
  return n === 1 ? "1 line" : `${n} lines`;
};

/** One tool as a list item: signature, description, then its parameters one per line. */
function toolItem(t: ToolDeclaration): string {
  const desc = typeof t.description === "string" && t.description.trim() ? `: ${safeMarkdown(flat(t.description))}` : "";
  const params = toolParameters(t).map((p) => `  - ${code(p.name)} ${escapeHtml(p.type)}, ${p.required ? "required" : "optional"}${p.description ? `: ${safeMarkdown(flat(p.description))}` : ""}`);
  return [`- ${code(t.name)}${desc}`, ...params].join("\n");
}

export function toolList(tools: Iterable<ToolDeclaration>): string {
  return [...tools].map(toolItem).join("\n");
}

/** A section folded under its name, so a long prompt does not bury the conversation. */
function foldedSection(name: string, text: string, what = ""): string {
  return `<details>\n<summary>Section ${code(name)}${what} (${lines(text)})</summary>\n\n${fence(text, "text")}\n\n</details>`;
}

/** The whole prompt and tool list of a state. */
export function systemStateBody(state: SystemState): string {
  const parts: string[] = [];
  for (const text of state.instructions) parts.push(fence(text, "text"));
  for (const [name, text] of state.sections) parts.push(foldedSection(name, text));
  parts.push(state.tools.size ? `**Tools (${state.tools.size})**\n\n${toolList(state.tools.values())}` : "_No tools._");
  return parts.join("\n\n");
}

/** Title and body of a system message entry: the prompt, or what an update changed. */
export function systemSection(step: SystemStep, meta: string): string {
  if (step.kind !== "update") return `## System prompt\n\n${meta}\n\n${systemStateBody(step.state)}`;
  const changes = describeSystemChange(step.message);
  const parts: string[] = [];
  if (step.instructions) parts.push(`**Instructions added**\n\n${fence(step.instructions, "text")}`);
  for (const s of step.sections) {
    if (s.text === undefined) parts.push(`Section ${code(s.name)} removed${s.change === "removed-unknown" ? " (it was not in the prompt)" : ""}.`);
    else parts.push(`Section ${code(s.name)} ${s.change === "replaced" ? "replaced" : s.change === "unchanged" ? "set again, unchanged" : "added"}:\n\n${fence(s.text, "text")}`);
  }
  const added = step.tools.filter((t) => t.tool && t.change === "added").map((t) => t.tool!);
  const redefined = step.tools.filter((t) => t.tool && t.change === "redefined").map((t) => t.tool!);
  const removed = step.tools.filter((t) => !t.tool).map((t) => `${code(t.name)}${t.change === "removed-unknown" ? " (not declared before)" : ""}`);
  if (added.length) parts.push(`**Tools added**\n\n${toolList(added)}`);
  if (redefined.length) parts.push(`**Tools redefined**\n\n${toolList(redefined)}`);
  if (removed.length) parts.push(`**Tools removed:** ${removed.join(", ")}`);
  if (!parts.length) parts.push("_No change._");
  return `## System update${changes ? `: ${escapeHtml(changes)}` : ""}\n\n${meta}\n\n${parts.join("\n\n")}`;
}

/** A compaction's checkpoint, folded: the prompt the compacted context starts with. */
export function checkpointDetails(step: SystemStep): string {
  const { sections, tools } = step.state;
  return `<details>\n<summary>System prompt from here on: ${sections.size} section(s), ${tools.size} tool(s)</summary>\n\n${systemStateBody(step.state)}\n\n</details>`;
}
