// The pi extension's in-flight journals (src/pi-extension/journal-format.ts): the answer pi was
// streaming when it died (kill -9, a crash, a closed terminal), never persisted by pi. Salvage
// gives it back as a copy of the session (a new id whose header names the original as
// parentSession, so --install puts it beside the original and never over it) with the partial
// answer appended as an assistant message marked `stopReason: "aborted"` and an errorMessage
// saying where it came from. When pi had saved the answer and died while its tools ran, the copy
// gets their partial output instead, as tool results marked isError and RECOVERED_TOOL_MARK.
// The original session file and the journal are only read.

import { randomUUID } from "node:crypto";
import { existsSync, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseSessionFile, migrateToV3InMemory } from "../agents/pi/parse.js";
import { type SessionEntry, type SessionHeader } from "../model/session.js";
import { pidAlive } from "../pid.js";
import { RepoError } from "../repo/errors.js";
import { MAX_JOURNAL_BYTES, journalDir, parseJournal, type InflightJournal } from "../pi-extension/journal-format.js";
import { EntryIds } from "./ids.js";
import { statInput } from "./input.js";
import { zeroUsage } from "./not-recorded.js";
import type { SourceResult } from "./types.js";

export const RECOVERED_MARK = "pi-guard: recovered from the in-flight journal: pi stopped before it saved this answer";

export async function readJournal(file: string): Promise<InflightJournal> {
  const stat = await statInput(file);
  if (stat.size > MAX_JOURNAL_BYTES) throw new RepoError(`${file} is not an in-flight journal: ${stat.size} bytes is more than one can hold`, "input");
  const parsed = parseJournal(await fs.readFile(file, "utf8"));
  if ("error" in parsed) throw new RepoError(`${file} is not an in-flight journal: ${parsed.error}`, "input");
  return parsed.journal;
}

/** Whether the process that wrote the journal may still be running (then its answer may still be saved). */
export const writerAlive = (j: InflightJournal): boolean => j.host === os.hostname() && pidAlive(j.pid);

/** The journals in the state dir, each with whether it still needs salvage and why not. */
export async function findJournals(stateDir: string): Promise<{ file: string; skip?: string }[]> {
  const dir = journalDir(stateDir);
  const names = await fs.readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [] as string[];
    throw new RepoError(`cannot list ${dir}: ${err.message}`, "io");
  });
  const found: { file: string; skip?: string }[] = [];
  for (const name of names.filter((n) => n.endsWith(".json")).sort()) {
    const file = path.join(dir, name);
    const j = await readJournal(file).catch((err: Error) => err);
    if (j instanceof Error) found.push({ file, skip: j.message });
    else if (writerAlive(j)) found.push({ file, skip: `pi (pid ${j.pid}) is still running; it may still save this answer` });
    else found.push({ file, skip: (await alreadySaved(j)) ? "pi saved this answer after all" : undefined });
  }
  return found;
}

async function sessionOf(j: InflightJournal): Promise<{ header: SessionHeader | null; entries: SessionEntry[] }> {
  if (!j.sessionFile || !existsSync(j.sessionFile)) return { header: null, entries: [] };
  const parsed = await parseSessionFile(j.sessionFile);
  const migrated = migrateToV3InMemory(parsed.header, parsed.entries);
  return { header: migrated.header, entries: migrated.entries };
}

/** pi stores the assistant message with the timestamp it streamed under: the same one is the same answer. */
const savedAnswer = (entries: SessionEntry[], j: InflightJournal): SessionEntry | undefined =>
  entries.find((e) => e.type === "message" && (e.message as { role?: string; timestamp?: number }).role === "assistant" && (e.message as { timestamp?: number }).timestamp === j.messageTimestamp);

/** The journal's tools whose result the session lacks (pi died while they ran). */
const unsavedTools = (entries: SessionEntry[], j: InflightJournal) =>
  (j.tools ?? []).filter((t) => !entries.some((e) => e.type === "message" && (e.message as { role?: string }).role === "toolResult" && (e.message as { toolCallId?: unknown }).toolCallId === t.toolCallId));

/** Whether the session holds everything the journal does: the answer, and a result for each tool that printed. */
const holds = (entries: SessionEntry[], j: InflightJournal) => !!savedAnswer(entries, j) && unsavedTools(entries, j).length === 0;

async function alreadySaved(j: InflightJournal): Promise<boolean> {
  return holds((await sessionOf(j)).entries, j);
}

export const RECOVERED_TOOL_MARK = "[pi-guard: partial output recovered from the in-flight journal: pi stopped while this tool ran, so it has no result of its own]";

/**
 * The partial output of the answer's tools pi was running when it died, as tool results pi loads:
 * after what pi last saved (the answer that called them, or a result of another of its tools),
 * marked isError and ending with RECOVERED_TOOL_MARK.
 */
function toolResults(j: InflightJournal, entries: SessionEntry[], ids: EntryIds, gaps: string[]): SessionEntry[] {
  const out: SessionEntry[] = [];
  let parentId = entries.at(-1)!.id;
  for (const t of unsavedTools(entries, j)) {
    if (t.truncated) gaps.push(`the journal kept the last ${t.text.length} of ${t.streamedChars} characters ${t.toolName} printed`);
    const at = Date.parse(t.updatedAt);
    const entry = {
      type: "message",
      id: ids.make(`${j.sessionId}:${t.toolCallId}:inflight-tool`),
      parentId,
      timestamp: Number.isFinite(at) ? new Date(at).toISOString() : j.updatedAt,
      message: {
        role: "toolResult",
        toolCallId: t.toolCallId,
        toolName: t.toolName,
        content: [...(t.text ? [{ type: "text", text: t.text }] : []), { type: "text", text: RECOVERED_TOOL_MARK }],
        isError: true,
        timestamp: Number.isFinite(at) ? at : j.messageTimestamp,
      },
    } as unknown as SessionEntry;
    out.push(entry);
    parentId = entry.id;
  }
  return out;
}

export async function salvageJournal(file: string, now: Date = new Date()): Promise<SourceResult> {
  const j = await readJournal(file);
  const source = { kind: "journal" as const, path: file };
  const { header, entries } = await sessionOf(j);
  const notes: string[] = [];
  if (writerAlive(j)) notes.push(`pi (pid ${j.pid}) that wrote ${file} is still running; it may still save this answer itself`);
  if (holds(entries, j)) {
    return { source, sessions: [], notes: [...notes, `${file}: the session file already holds this answer (pi saved it); nothing to recover`] };
  }
  const gaps: string[] = [];
  const ids = new EntryIds(entries.map((e) => e.id));
  if (savedAnswer(entries, j)) {
    // pi saved the answer and died while its tools ran: their partial output is what is left.
    gaps.push("the tool output stops where pi stopped (the tool had no result of its own)");
    const results = toolResults(j, entries, ids, gaps);
    return { source, sessions: [copyOf(j, header, [...entries, ...results], results.at(-1)!.id, source, gaps, now)], notes };
  }
  if (!header) gaps.push(j.sessionFile ? `the session file ${j.sessionFile} is gone: only the partial answer is kept` : "pi had not created the session file yet: only the partial answer is kept");
  if (j.truncated) gaps.push(`the journal kept the first part of a longer answer (${j.streamedChars} characters streamed)`);
  gaps.push(`the answer stops where pi stopped streaming it (last journal write ${j.updatedAt}); it has no usage or cost`);
  const parentId = j.parentId !== null && entries.some((e) => e.id === j.parentId) ? j.parentId : (entries.at(-1)?.id ?? null);
  const recovered = {
    type: "message",
    id: ids.make(`${j.sessionId}:${j.messageTimestamp}:inflight`),
    parentId,
    timestamp: j.updatedAt,
    message: {
      role: "assistant",
      content: j.content,
      api: j.api ?? "unknown",
      provider: j.provider ?? "unknown",
      model: j.model ?? "unknown",
      usage: zeroUsage(),
      stopReason: "aborted",
      errorMessage: `${RECOVERED_MARK} (${j.streamedChars} characters streamed, journal of pid ${j.pid} written ${j.updatedAt})`,
      timestamp: j.messageTimestamp,
    },
  } as unknown as SessionEntry;
  return { source, sessions: [copyOf(j, header, [...entries, recovered], recovered.id, source, gaps, now)], notes };
}

/** The recovered copy: a new id whose header names the original session as its parent. */
function copyOf(j: InflightJournal, header: SessionHeader | null, entries: SessionEntry[], leafId: string, source: { kind: "journal"; path: string }, gaps: string[], now: Date): SourceResult["sessions"][number] {
  const original = j.sessionFile ?? undefined;
  const newHeader: SessionHeader = {
    ...(header ?? {}),
    type: "session",
    version: 3,
    id: randomUUID(),
    timestamp: now.toISOString(),
    cwd: header?.cwd ?? j.cwd,
    ...(original && header ? { parentSession: original } : {}),
  } as SessionHeader;
  return { header: newHeader, idKnown: true, cwdKnown: newHeader.cwd !== "", entries, leafId, sources: [source], gaps };
}
