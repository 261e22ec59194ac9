// Rows of the two hermes layouts (DESIGN.md §2) as pi messages. Hermes keeps less than pi:
// pi-hermes-memory has text only (tool names, no calls or results, long text cut), hermes-agent
// has OpenAI-style calls and results but no usage or provider. What is missing is counted.

import { parseBounded } from "../model/nesting.js";
import { deepGap } from "./input.js";
import { nameOnlyCall, unrecordedResult, zeroUsage } from "./not-recorded.js";

/** Hermes times are ISO strings, Unix seconds (REAL) or milliseconds. */
export function toMs(value: unknown): number | undefined {
  if (typeof value === "number" && Number.isFinite(value)) return value > 1e11 ? Math.round(value) : Math.round(value * 1000);
  if (typeof value === "string" && value.trim() !== "") {
    const n = Number(value);
    if (Number.isFinite(n)) return toMs(n);
    const t = Date.parse(value);
    return Number.isFinite(t) ? t : undefined;
  }
  return undefined;
}

const TRUNCATED = /\.\.\. \(truncated, (\d+) chars total\)/;

export interface MapStats {
  truncated: number;
  toolOnlyDropped: number;
  toolNamesOnly: number;
  /** Tool calls kept by name only (each with a "not recorded" result). */
  namedCalls: number;
  /** Entries of a tool_calls array that were not a tool name. */
  badToolNames: number;
  /** state.db tool calls with no `tool` row: answered with a "not recorded" result. */
  unansweredCalls: number;
  systemDropped: number;
  unknownRoles: number;
  /** JSON values (tool_calls, arguments) nested too deep to keep whole: partly kept as text. */
  deep: number;
}

export const emptyStats = (): MapStats => ({ truncated: 0, toolOnlyDropped: 0, toolNamesOnly: 0, namedCalls: 0, badToolNames: 0, unansweredCalls: 0, systemDropped: 0, unknownRoles: 0, deep: 0 });

const text = (t: string) => [{ type: "text", text: t }];

/** Fields pi's assistant messages carry that hermes does not record. */
function assistantShell(model: string | undefined, timestamp: number) {
  return {
    api: "unknown",
    provider: "unknown",
    model: model ?? "unknown",
    usage: zeroUsage(),
    timestamp,
  };
}

/**
 * A pi-hermes-memory `messages` row. The extension indexes pi's session files: `id` is pi's entry
 * id and `timestamp` the entry's write time, which stands in for the message's own time. An
 * assistant row's `tool_calls` names the tools it called: each becomes a call by name only,
 * answered by a result marked as not recorded (not-recorded.ts), so the message comes with them.
 */
export function memoryRow(row: Record<string, unknown>, fallbackTime: number, stats: MapStats, callId: (i: number) => string): Record<string, unknown>[] {
  const content = typeof row.content === "string" ? row.content : "";
  const timestamp = toMs(row.timestamp) ?? fallbackTime;
  if (TRUNCATED.test(content)) stats.truncated++;
  if (row.role === "user") return [{ role: "user", content: text(content), timestamp }];
  if (row.role === "assistant") {
    const parsed = parseJson(row.tool_calls, stats);
    const names = Array.isArray(parsed) ? parsed.filter(isToolName) : [];
    if (names.length > 0) stats.toolNamesOnly++;
    if (Array.isArray(parsed)) stats.badToolNames += parsed.length - names.length;
    else if (row.tool_calls != null && row.tool_calls !== "" && row.tool_calls !== "null") stats.badToolNames++;
    const calls = names.map((name, i) => nameOnlyCall(callId(i), name));
    // An empty assistant turn would be an empty message in pi's context.
    if (content === "" && calls.length === 0) {
      stats.toolOnlyDropped++;
      return [];
    }
    stats.namedCalls += calls.length;
    const blocks = [...(content ? text(content) : []), ...calls];
    const message = { role: "assistant", content: blocks, ...assistantShell(undefined, timestamp), stopReason: calls.length ? "toolUse" : "stop" };
    return [message, ...calls.map((c) => unrecordedResult(String(c.id), String(c.name), timestamp, "pi-hermes-memory"))];
  }
  if (row.role === "system") stats.systemDropped++;
  else stats.unknownRoles++;
  return [];
}

/** A name as tools are named; anything else in a hostile row is counted, not turned into a call. */
const isToolName = (n: unknown): n is string => typeof n === "string" && /^[\w.:-]{1,128}$/.test(n);

function parseJson(value: unknown, stats: MapStats): unknown {
  if (typeof value !== "string" || value === "") return undefined;
  const parsed = parseBounded(value);
  if (!parsed.ok) return undefined;
  if (parsed.cut) stats.deep++;
  return parsed.value;
}

interface OpenAiCall {
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** A hermes-agent `messages` row; `names` remembers call id -> tool name for tool rows. */
export function agentRow(row: Record<string, unknown>, model: string | undefined, names: Map<string, string>, stats: MapStats): Record<string, unknown> | undefined {
  const content = typeof row.content === "string" ? row.content : "";
  const timestamp = toMs(row.timestamp) ?? 0;
  switch (row.role) {
    case "user":
      return { role: "user", content: text(content), timestamp };
    case "assistant": {
      const calls = (parseJson(row.tool_calls, stats) as OpenAiCall[] | undefined) ?? [];
      const blocks: Record<string, unknown>[] = content ? text(content) : [];
      for (const call of Array.isArray(calls) ? calls : []) {
        const id = String(call.id ?? "");
        const name = String(call.function?.name ?? "unknown");
        names.set(id, name);
        const args = parseJson(call.function?.arguments, stats);
        blocks.push({ type: "toolCall", id, name, arguments: typeof args === "object" && args !== null ? args : { _raw: call.function?.arguments ?? "" } });
      }
      if (blocks.length === 0) return undefined;
      return { role: "assistant", content: blocks, ...assistantShell(model, timestamp), stopReason: calls.length ? "toolUse" : "stop" };
    }
    case "tool": {
      const id = String(row.tool_call_id ?? "");
      const toolName = typeof row.tool_name === "string" && row.tool_name ? row.tool_name : (names.get(id) ?? "unknown");
      return { role: "toolResult", toolCallId: id, toolName, content: text(content), isError: false, timestamp };
    }
    case "system":
      stats.systemDropped++;
      return undefined;
    default:
      stats.unknownRoles++;
      return undefined;
  }
}

export function statGaps(stats: MapStats): string[] {
  const gaps: string[] = [];
  if (stats.truncated) gaps.push(`${stats.truncated} message(s) were cut by hermes to head + tail ("... (truncated, N chars total)")`);
  if (stats.namedCalls) gaps.push(`${stats.namedCalls} tool call(s) in ${stats.toolNamesOnly} assistant turn(s) list tool names only: kept by name, their arguments and results are not in this database`);
  if (stats.unansweredCalls) gaps.push(`${stats.unansweredCalls} tool call(s) have no result row: answered with a result marked as not recorded`);
  if (stats.badToolNames) gaps.push(`${stats.badToolNames} tool_calls value(s) were not a tool name (or not a JSON array): left out`);
  if (stats.toolOnlyDropped) gaps.push(`${stats.toolOnlyDropped} empty assistant row(s) (no text, no tools) left out`);
  if (stats.systemDropped) gaps.push(`${stats.systemDropped} system prompt row(s) left out (pi does not store the system prompt)`);
  if (stats.unknownRoles) gaps.push(`${stats.unknownRoles} row(s) with an unknown role left out`);
  if (stats.deep) gaps.push(deepGap(`${stats.deep} tool_calls or arguments value(s)`));
  return gaps;
}

/** The same counts for the report's "not kept" column (zero counts left out). */
export function statCounts(stats: MapStats): Record<string, number> {
  const all: [string, number][] = [
    ["texts cut by hermes", stats.truncated],
    ["tool call arguments", stats.namedCalls],
    ["tool results (not recorded)", stats.namedCalls + stats.unansweredCalls],
    ["tool_calls values not understood", stats.badToolNames],
    ["empty assistant rows", stats.toolOnlyDropped],
    ["system prompts", stats.systemDropped],
    ["rows with an unknown role", stats.unknownRoles],
  ];
  return Object.fromEntries(all.filter(([, n]) => n > 0));
}
