// `--from-terminal FILE|-`: scrollback copied from pi's interactive TUI (tmux capture-pane, a
// terminal's "select all, copy"), with or without escapes. The screen shows no ids, times,
// session id or thinking, and only the tail of long tool output, so the result is one linear
// chain with invented ids and times, and the fidelity report says what was guessed.

import { promises as fs } from "node:fs";
import type { SessionEntry, SessionHeader } from "../model/session.js";
import { RepoError } from "../repo/errors.js";
import { EntryIds } from "./ids.js";
import { statInput } from "./input.js";
import { inventedSessionId } from "./log-entries.js";
import { zeroUsage } from "./not-recorded.js";
import { type Item, parseScreen, type ParsedScreen } from "./terminal-parse.js";
import { readScreen } from "./terminal-screen.js";
import { PROVENANCE_TYPE, type SourceResult } from "./types.js";


async function readAll(file: string): Promise<{ text: string; mtime: number }> {
  if (file === "-") {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return { text: Buffer.concat(chunks).toString("utf8"), mtime: Date.now() };
  }
  const stat = await statInput(file);
  return { text: await fs.readFile(file, "utf8"), mtime: Math.floor(stat.mtimeMs) };
}

/** Items → pi messages: text + following tool calls form one assistant message, as pi drew them. */
function toMessages(items: Item[], model: string | undefined, seed: string): { messages: Record<string, unknown>[]; cut: number; unknownTools: number; hidden: number } {
  const messages: Record<string, unknown>[] = [];
  let open: { content: Record<string, unknown>[] } | undefined;
  let cut = 0;
  let unknownTools = 0;
  let hidden = 0;
  let calls = 0;
  const assistant = () => {
    const m = { role: "assistant", content: [] as Record<string, unknown>[], api: "unknown", provider: "unknown", model: model ?? "unknown", usage: zeroUsage(), stopReason: "stop" };
    messages.push(m);
    return m;
  };
  let prev: Item["kind"] | undefined;
  for (const item of items) {
    // Thinking and the text after it are one message, as pi drew them.
    const sameMessage = open !== undefined && open.content.length > 0 && (prev === "thinking" || (prev === "assistant" && item.kind === "thinking"));
    prev = item.kind;
    if (item.kind === "user") {
      open = undefined;
      messages.push({ role: "user", content: [{ type: "text", text: item.text }] });
    } else if (item.kind === "assistant") {
      if (!sameMessage) open = assistant();
      open!.content.push({ type: "text", text: item.text });
    } else if (item.kind === "thinking") {
      if (!sameMessage) open = assistant();
      open!.content.push({ type: "thinking", thinking: item.text });
    } else {
      const t = item.tool;
      const m: { content: Record<string, unknown>[]; stopReason?: string } = open && open.content.length > 0 ? open : assistant();
      const id = `term_${inventedSessionId(`${seed}|${calls++}`).slice(0, 8)}`;
      m.content.push({ type: "toolCall", id, name: t.name, arguments: t.args });
      m.stopReason = "toolUse";
      if (t.cut) cut++;
      if (t.unknownTool || t.argsPartial) unknownTools++;
      if (!t.resultShown) hidden++;
      messages.push({ role: "toolResult", toolCallId: id, toolName: t.name, content: [{ type: "text", text: t.output }], isError: t.isError });
      // Text after a tool result is the model's next reply: a new assistant message.
      open = { content: [] };
    }
  }
  return { messages, cut, unknownTools, hidden };
}

export function sessionFromScreen(parsed: ParsedScreen, file: string, mtime: number): SourceResult["sessions"][number] {
  const firstUser = parsed.items.find((i) => i.kind === "user");
  const seed = `${firstUser && "text" in firstUser ? firstUser.text.slice(0, 2000) : ""}|${parsed.items.length}`;
  const start = mtime - parsed.items.length * 1000;
  const header: SessionHeader = { type: "session", version: 3, id: inventedSessionId(`terminal|${seed}`), timestamp: new Date(start).toISOString(), cwd: parsed.cwd?.startsWith("/") ? parsed.cwd : "" };
  const { messages, cut, unknownTools, hidden } = toMessages(parsed.items, parsed.model, seed);
  const ids = new EntryIds();
  const entries: SessionEntry[] = [];
  let parentId: string | null = null;
  const push = (fields: Record<string, unknown>, key: string, time: number) => {
    const id = ids.make(`${header.id}|${key}`);
    entries.push({ ...fields, id, parentId, timestamp: new Date(time).toISOString() } as SessionEntry);
    parentId = id;
  };
  // Times are unknown: one second apart, ending at the capture's mtime, so the order holds.
  messages.forEach((m, i) => push({ type: "message", message: { ...m, timestamp: start + i * 1000 } }, `${i}|${JSON.stringify(m).slice(0, 400)}`, start + i * 1000));
  parsed.unclassified.forEach((text, i) => push({ type: "custom", customType: `${PROVENANCE_TYPE}/terminal-unclassified`, data: { text } }, `unclassified|${i}`, start + messages.length * 1000));

  const guessed = parsed.items.filter((i) => (i.kind === "user" || i.kind === "assistant") && i.guessed).length;
  // Without escapes pi's thinking looks like answer text: any reply may begin with some.
  const maybeThinking = parsed.styled ? 0 : parsed.items.filter((i) => i.kind === "assistant").length;
  const gaps = [
    "a terminal shows no session id, entry ids, times, usage or model details: id invented, times approximated, one linear chain",
    "assistant text is as pi rendered it (markdown formatting gone, long lines re-joined)",
  ];
  if (maybeThinking) gaps.push(`${maybeThinking} assistant message(s) may hold thinking mixed into their text: without escapes pi's thinking style does not show`);
  if (parsed.hiddenThinking) gaps.push(`${parsed.hiddenThinking} thinking block(s) were hidden on screen ("Thinking..."): their text is not in the capture`);
  if (guessed) gaps.push(`${guessed} message(s) had their role (user or assistant) guessed from the layout: the capture has no colours`);
  if (cut) gaps.push(`${cut} tool result(s) are only the part pi showed (output cut on screen)`);
  if (unknownTools) gaps.push(`${unknownTools} tool call(s) whose arguments the screen does not show in full (edit diffs, unknown tools)`);
  if (hidden) gaps.push(`${hidden} tool result(s) not shown on screen (write shows what it wrote, not its result): left empty`);
  if (parsed.unclassified.length) gaps.push(`${parsed.unclassified.length} piece(s) of text could not be placed and were kept as ${PROVENANCE_TYPE}/terminal-unclassified custom entries`);
  if (!header.cwd) gaps.push("the screen shows no absolute project dir (cwd)");
  const counted: [string, number][] = [
    ["thinking possibly mixed into text", maybeThinking],
    ["thinking hidden on screen", parsed.hiddenThinking],
    ["roles guessed from layout", guessed],
    ["tool output cut on screen", cut],
    ["tool arguments not shown in full", unknownTools],
    ["tool results not shown on screen", hidden],
    ["text not placed (kept as custom entries)", parsed.unclassified.length],
  ];
  const notKept = Object.fromEntries(counted.filter(([, n]) => n > 0));
  return { header, idKnown: false, cwdKnown: header.cwd !== "", timesKnown: false, entries, sources: [{ kind: "terminal", path: file }], gaps, notKept };
}

export async function salvageTerminal(file: string): Promise<SourceResult> {
  const { text, mtime } = await readAll(file);
  if (text.trim() === "") throw new RepoError(`${file === "-" ? "standard input" : file} is empty`, "input");
  const screen = readScreen(text);
  const parsed = parseScreen(screen.lines, screen.styled);
  if (!parsed.items.some((i) => i.kind === "user")) throw new RepoError(`${file === "-" ? "standard input" : file}: no pi conversation found (not a capture of pi's terminal screen?)`, "input");
  const notes = screen.styled ? [] : ["the capture has no escape sequences: user and assistant told apart by layout only"];
  return { source: { kind: "terminal", path: file }, sessions: [sessionFromScreen(parsed, file, mtime)], notes };
}
