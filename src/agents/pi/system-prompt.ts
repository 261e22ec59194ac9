// pi 1.x keeps the system prompt and the tool list in the session as `role:"system"` messages:
// the first one on a branch declares them, later ones are patches, and a compaction carries a
// whole checkpoint. This module replays them the way pi does, so a reader can show the prompt
// and, for each later message, what it changed against the state before it.
//
// The rules are pi's (pi 1.6.0, checked in its shipped code):
// - pi-ai dist/utils/transcript.js getCurrentSystemMessage/getCurrentTools: in path order,
//   non-empty `content` is appended to the instructions, `sections` are set by name and a `null`
//   value deletes one, `toolsRemoved` are deleted by name before `toolsAdded` are set by name;
// - pi-coding-agent dist/core/session-manager.js sessionEntryToContextMessages and
//   buildContextEntries: a compaction with `systemMessage` starts the compacted context with that
//   checkpoint, and the system messages of the kept range are dropped, so the state after a
//   compaction is the checkpoint's alone (plus what follows it);
// - pi-coding-agent's HTML export (isLeadingSystemEntry): a system entry with no ancestor that
//   carries system state is the branch's "system prompt"; any later one is a "system update".
// Every field is checked: a hostile file cannot make this throw, only be shown as what it holds.

import type { SessionEntry, SystemMessage, ToolDeclaration } from "../../model/session.js";
import type { SessionTree } from "../../model/tree.js";

/** The prompt and tools in force at one point of a branch. */
export interface SystemState {
  /** Instruction texts in order (the base prompt first). */
  instructions: string[];
  /** Sections by name, in first-declaration order. */
  sections: Map<string, string>;
  /** Tools by name, in declaration order. */
  tools: Map<string, ToolDeclaration>;
}

export interface SectionChange {
  name: string;
  /** The new text; undefined when removed. */
  text?: string;
  /** What it did to the state before: a new name, a replaced one, or a removal (of nothing, when the name was unknown). */
  change: "added" | "replaced" | "unchanged" | "removed" | "removed-unknown";
}

export interface ToolChange {
  name: string;
  /** The declaration added; undefined when removed. */
  tool?: ToolDeclaration;
  change: "added" | "redefined" | "removed" | "removed-unknown";
}

/** One entry that carries system state, resolved against the state before it on its branch. */
export interface SystemStep {
  entryId: string;
  /** "prompt": the first on its branch; "update": a patch; "checkpoint": a compaction's whole state. */
  kind: "prompt" | "update" | "checkpoint";
  /** The system message itself (a compaction's checkpoint for "checkpoint"). */
  message: SystemMessage;
  /** This message's own instruction text (appended to the prompt). */
  instructions: string;
  sections: SectionChange[];
  tools: ToolChange[];
  /** The state after this entry. */
  state: SystemState;
}

type Msg = { role?: unknown; [k: string]: unknown };

/** The system message an entry carries: its own, or a compaction's checkpoint. */
export function systemMessageOf(e: SessionEntry): SystemMessage | undefined {
  const m = e.type === "message" ? (e.message as Msg | undefined) : e.type === "compaction" ? (e.systemMessage as Msg | undefined) : undefined;
  return m && typeof m === "object" && !Array.isArray(m) && m.role === "system" ? (m as unknown as SystemMessage) : undefined;
}

/** A system message's own instruction text, as pi-ai's contentText joins it (text blocks only). */
export function systemText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((b) => b && typeof b === "object" && b.type === "text" && typeof b.text === "string").map((b) => b.text as string).join("\n");
}

/** The state before any system message: no instructions, sections or tools. */
export const emptySystemState = (): SystemState => ({ instructions: [], sections: new Map(), tools: new Map() });

function sectionsOf(m: SystemMessage): [string, string | null][] {
  const s = m.sections as unknown;
  if (!s || typeof s !== "object" || Array.isArray(s)) return [];
  return Object.entries(s as Record<string, unknown>).filter((kv): kv is [string, string | null] => typeof kv[1] === "string" || kv[1] === null);
}

function toolsOf(list: unknown): ToolDeclaration[] {
  return Array.isArray(list) ? list.filter((t): t is ToolDeclaration => !!t && typeof t === "object" && typeof t.name === "string") : [];
}

/** Apply one system message to a copy of `before` and say what each part of it changed. */
export function applySystemMessage(before: SystemState, m: SystemMessage): Omit<SystemStep, "entryId" | "kind" | "message"> {
  const state: SystemState = { instructions: [...before.instructions], sections: new Map(before.sections), tools: new Map(before.tools) };
  const instructions = systemText(m.content);
  if (instructions.length > 0) state.instructions.push(instructions);
  const sections: SectionChange[] = [];
  for (const [name, text] of sectionsOf(m)) {
    const old = state.sections.get(name);
    if (text === null) {
      sections.push({ name, change: old === undefined ? "removed-unknown" : "removed" });
      state.sections.delete(name);
    } else {
      sections.push({ name, text, change: old === undefined ? "added" : old === text ? "unchanged" : "replaced" });
      state.sections.set(name, text);
    }
  }
  const tools: ToolChange[] = [];
  const added = toolsOf(m.toolsAdded);
  const addedNames = new Set(added.map((t) => t.name));
  for (const t of toolsOf(m.toolsRemoved)) {
    // pi declares a changed tool as a removal plus an addition: shown once, as a redefinition.
    if (!addedNames.has(t.name)) tools.push({ name: t.name, change: before.tools.has(t.name) ? "removed" : "removed-unknown" });
    state.tools.delete(t.name);
  }
  for (const t of added) {
    tools.push({ name: t.name, tool: t, change: before.tools.has(t.name) ? "redefined" : "added" });
    state.tools.set(t.name, t);
  }
  return { instructions, sections, tools, state };
}

/**
 * Feed the entries of one branch in path order (root first; other entries may be interleaved
 * as long as that order holds): `step` returns the resolved step of each entry carrying system
 * state. Used by the in-memory view and by the streamed Markdown export alike.
 */
export class SystemReplay {
  private state: SystemState | undefined;

  step(e: SessionEntry): SystemStep | undefined {
    const m = systemMessageOf(e);
    if (!m) return undefined;
    const checkpoint = e.type === "compaction";
    const kind = checkpoint ? "checkpoint" : this.state ? "update" : "prompt";
    const resolved = applySystemMessage(checkpoint || !this.state ? emptySystemState() : this.state, m);
    this.state = resolved.state;
    return { entryId: e.id, kind, message: m, ...resolved };
  }

  /** The state after the entries fed so far (undefined before any system entry). */
  get current(): SystemState | undefined {
    return this.state;
  }
}

/** The steps of a path (root first), by entry id. */
export function systemSteps(path: readonly SessionEntry[]): Map<string, SystemStep> {
  const replay = new SystemReplay();
  const out = new Map<string, SystemStep>();
  for (const e of path) {
    const s = replay.step(e);
    if (s) out.set(e.id, s);
  }
  return out;
}

/**
 * Ids of the system messages that lead their branch (no ancestor carries system state), over the
 * whole tree, for outlines that show every branch. One walk down from the roots; cycle-safe.
 */
export function leadingSystemIds(tree: SessionTree): Set<string> {
  const out = new Set<string>();
  const seen = new Set<string>();
  const stack: { e: SessionEntry; above: boolean }[] = (tree.children.get(null) ?? []).map((e) => ({ e, above: false }));
  while (stack.length) {
    const { e, above } = stack.pop()!;
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    const carries = systemMessageOf(e) !== undefined;
    if (carries && !above && e.type === "message") out.add(e.id);
    for (const c of tree.children.get(e.id) ?? []) stack.push({ e: c, above: above || carries });
  }
  return out;
}

/**
 * pi's short description of a system message, in the words and order of pi's own tree
 * ("instructions, skills, -rules, tools +bash -write": its HTML export's describeSystemUpdate).
 */
export function describeSystemChange(m: SystemMessage): string {
  const parts: string[] = [];
  if (systemText(m.content).length > 0) parts.push("instructions");
  for (const [name, text] of sectionsOf(m)) parts.push(text === null ? `-${name}` : name);
  const tools = [...toolsOf(m.toolsAdded).map((t) => `+${t.name}`), ...toolsOf(m.toolsRemoved).map((t) => `-${t.name}`)];
  if (tools.length) parts.push(`tools ${tools.join(" ")}`);
  return parts.join(", ");
}

export interface ToolParameter {
  name: string;
  type: string;
  required: boolean;
  description?: string;
}

/** The parameters of a tool's JSON Schema (`properties`, `required`), for listing. */
export function toolParameters(tool: ToolDeclaration): ToolParameter[] {
  const schema = tool.parameters as { properties?: unknown; required?: unknown } | undefined;
  const props = schema && typeof schema === "object" ? schema.properties : undefined;
  if (!props || typeof props !== "object" || Array.isArray(props)) return [];
  const required = Array.isArray(schema!.required) ? new Set(schema!.required.filter((r) => typeof r === "string")) : new Set<string>();
  return Object.entries(props as Record<string, unknown>).map(([name, p]) => {
    const prop = (p && typeof p === "object" ? p : {}) as { type?: unknown; description?: unknown; anyOf?: unknown };
    const type = typeof prop.type === "string" ? prop.type : Array.isArray(prop.type) ? prop.type.filter((t) => typeof t === "string").join("|") : "any";
    return { name, type: type || "any", required: required.has(name), ...(typeof prop.description === "string" ? { description: prop.description } : {}) };
  });
}

/** "read(path: string, offset?: number)": a tool's signature on one line. */
export function toolSignature(tool: ToolDeclaration): string {
  return `${tool.name}(${toolParameters(tool).map((p) => `${p.name}${p.required ? "" : "?"}: ${p.type}`).join(", ")})`;
}
