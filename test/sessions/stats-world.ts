// Sessions written by pi 1.6.0's real agent loop, then moved in time: pi stamps entries with the
// clock of the run, and the stats tests need turns at chosen instants (either side of a zone's
// midnight, DST changes, months apart). Only the times change (each entry's `timestamp` and a
// message's own ms `timestamp`), every entry of a turn a second apart, the header a minute
// before the first entry; pi 1.6.0's own parser must still load the result, and its
// getSessionStats gives the totals the tests compare with.

import { readFileSync, writeFileSync } from "node:fs";
import { makePi1Session, pi1Text, pi1ToolCall, validatePi1, type Pi1SessionStats, type Pi1Turn } from "../helpers/pi1.js";

type Line = { type: string; id?: string; timestamp?: string; message?: { role?: string; timestamp?: number; usage?: { input: number; output: number; cacheRead: number; cacheWrite: number; cost: { total: number } } } };

export interface TimedSession {
  file: string;
  sessionId: string;
  /** pi 1.6.0's getSessionStats over the moved file. */
  stats: Pi1SessionStats;
  /** Each assistant message's usage with its time (ms), as written. */
  usage: { time: number; input: number; output: number; cacheRead: number; cacheWrite: number; tokens: number; cost: number }[];
  /** Each user prompt's time (ms). */
  prompts: number[];
}

/** One turn per instant: a tool call, its result and a reply, or a plain reply (every third turn). */
export function turnsAt(times: readonly number[], topic: string): Pi1Turn[] {
  return times.map((_, i) => ({
    user: `${topic} question ${i}`,
    assistant: i % 3 === 1 ? [`${topic} answer ${i}`] : [[pi1Text(`Checking ${topic} ${i}.`), pi1ToolCall("bash", { command: `echo ${topic}-${i}` })], `${topic} answer ${i}`],
  }));
}

/** A real pi 1.6.0 session of one turn per instant in `times`, moved so that turn i happens at times[i]. */
export async function timedSession(agentDir: string, cwd: string, times: readonly number[], topic: string): Promise<TimedSession> {
  const made = await makePi1Session({ agentDir, cwd, turns: turnsAt(times, topic) });
  const lines = readFileSync(made.file, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as Line);
  let turn = -1;
  let step = 0;
  const at = (ms: number, e: Line) => {
    e.timestamp = new Date(ms).toISOString();
    if (e.message && typeof e.message.timestamp === "number") e.message.timestamp = ms;
  };
  for (const e of lines.slice(1)) {
    if (e.type === "message" && e.message?.role === "user") {
      turn++;
      step = 0;
    }
    // Entries before the first prompt (model and thinking level, the system message) open the session.
    at(turn < 0 ? times[0] - 30_000 + step * 1000 : times[turn] + step * 1000, e);
    step++;
  }
  if (turn !== times.length - 1) throw new Error(`expected ${times.length} turns in ${made.file}, found ${turn + 1}`);
  lines[0].timestamp = new Date(times[0] - 60_000).toISOString();
  const text = `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`;
  const pi = await validatePi1(text, { expectMessages: true });
  writeFileSync(made.file, text);
  const usage = lines.flatMap((e) => {
    const u = e.message?.role === "assistant" ? e.message.usage : undefined;
    return u ? [{ time: Date.parse(e.timestamp!), input: u.input, output: u.output, cacheRead: u.cacheRead, cacheWrite: u.cacheWrite, tokens: u.input + u.output + u.cacheRead + u.cacheWrite, cost: u.cost.total }] : [];
  });
  const prompts = lines.filter((e) => e.type === "message" && e.message?.role === "user").map((e) => Date.parse(e.timestamp!));
  return { file: made.file, sessionId: made.sessionId, stats: pi.stats, usage, prompts };
}

/** The calendar day an instant falls on in a zone, by Intl alone (the oracle the tests compare with). */
export const dayIn = (ms: number, zone: string): string => new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" }).format(ms);
