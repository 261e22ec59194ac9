// Writing a real captured pi event stream in the three shapes --from-log reads, and measuring how
// much of the original session a salvaged file gives back.

import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { validateWithPi } from "../helpers/pi-validate.js";

type Ev = Record<string, unknown>;
const line = (v: unknown) => `${JSON.stringify(v)}\n`;

/** `pi --mode json`: the session header, then one event per line (print-mode.js). */
export function jsonModeLog(header: unknown, events: readonly unknown[]): string {
  return line(header) + events.map(line).join("");
}

/** `pi --mode rpc`: events plus command responses; the session id comes from get_state. */
export function rpcModeLog(sessionId: string, events: readonly unknown[], messages: readonly unknown[]): string {
  let out = line({ id: "s1", type: "response", command: "get_state", success: true, data: { sessionId, isStreaming: false, messageCount: 0 } });
  let n = 0;
  for (const e of events) {
    if ((e as Ev).type === "agent_start") out += line({ id: `p${++n}`, type: "response", command: "prompt", success: true });
    out += line(e);
  }
  return out + line({ id: "m1", type: "response", command: "get_messages", success: true, data: { messages } });
}

/** A web UI server log: timestamps, [pi-web] tags, SSE data: lines, rpc_event envelopes, chatter. */
export function webUiLog(sessionId: string, events: readonly unknown[]): string {
  const t = (i: number) => new Date(Date.UTC(2026, 10, 30, 4, 0, 0, i)).toISOString();
  let out = `${t(0)} [pi-web] server listening on http://127.0.0.1:3000\n`;
  out += `${t(1)} [pi-web] rpc ${JSON.stringify({ type: "rpc_event", event: { type: "response", command: "get_state", success: true, data: { sessionId } } })}\n`;
  events.forEach((e, i) => {
    const wrapped = { type: "rpc_event", event: e };
    if (i % 3 === 0) out += `${t(i + 2)} [pi-web] event ${JSON.stringify(wrapped)}\n`;
    else if (i % 3 === 1) out += `data: ${JSON.stringify(wrapped)}\n\n`;
    else out += `[pi-web] ${JSON.stringify(e)}\r\n`;
    if (i % 7 === 0) out += `${t(i + 2)} [pi-web] client 2 {heartbeat} ok\n`;
  });
  return out;
}

/** Rewrites message_update events to the newer delta-only form (no full message, no partial). */
export function deltaOnly(events: readonly unknown[]): Ev[] {
  return events.map((e) => {
    const ev = e as Ev;
    if (ev.type !== "message_update") return ev;
    const { partial: _p, ...ame } = ev.assistantMessageEvent as Ev;
    return { type: "message_update", assistantMessageEvent: ame };
  });
}

/** Rewrites message_update events to the old form: the full message only. */
export function fullMessageOnly(events: readonly unknown[]): Ev[] {
  return events.map((e) => ((e as Ev).type === "message_update" ? { type: "message_update", message: (e as Ev).message } : (e as Ev)));
}

export interface Recall {
  /** Original messages by role. */
  total: Record<string, number>;
  /** Recovered exactly (deep-equal message objects). */
  exact: Record<string, number>;
  /** Recovered with the same role and content (a rebuilt tool result may lack its own timestamp). */
  content: Record<string, number>;
}

const messagesOf = (text: string) =>
  validateWithPi(text)
    .entries.filter((e) => e.type === "message")
    .map((e) => (e as unknown as { message: Ev }).message);

export function measureRecall(originalFile: string, salvaged: string): Recall {
  const original = messagesOf(readFileSync(originalFile, "utf8"));
  const got = messagesOf(salvaged);
  const r: Recall = { total: {}, exact: {}, content: {} };
  const bump = (m: Record<string, number>, k: string) => (m[k] = (m[k] ?? 0) + 1);
  for (const m of original) {
    const role = String(m.role);
    bump(r.total, role);
    if (got.some((g) => isDeepStrictEqual(g, m))) bump(r.exact, role);
    if (got.some((g) => g.role === m.role && isDeepStrictEqual(g.content, m.content) && g.toolCallId === m.toolCallId)) bump(r.content, role);
  }
  return r;
}

export function formatRecall(name: string, r: Recall): string {
  const parts = Object.keys(r.total).map((role) => `${role} ${r.content[role] ?? 0}/${r.total[role]} (exact ${r.exact[role] ?? 0})`);
  return `log recall [${name}]: ${parts.join(", ")}`;
}
