// The pi extension's in-flight journals (src/pi-extension/journal-format.ts): the answer pi was
// streaming when it died (kill -9, a crash, a closed terminal), never persisted by pi. Salvage
// gives it back as a copy of the session (a new id whose header names the original as
// parentSession, so --install puts it beside the original and never over it) with the partial
// answer appended as an assistant message marked `stopReason: "aborted"` and an errorMessage
// saying where it came from. The original session file and the journal are only read.

import { randomUUID } from "node:crypto";
import { existsSync, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseSessionFile, migrateToV3InMemory, type SessionEntry, type SessionHeader } from "../pi/index.js";
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
const holds = (entries: SessionEntry[], j: InflightJournal) =>
  entries.some((e) => e.type === "message" && (e.message as { role?: string; timestamp?: number }).role === "assistant" && (e.message as { timestamp?: number }).timestamp === j.messageTimestamp);

async function alreadySaved(j: InflightJournal): Promise<boolean> {
  return holds((await sessionOf(j)).entries, j);
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
  if (!header) gaps.push(j.sessionFile ? `the session file ${j.sessionFile} is gone: only the partial answer is kept` : "pi had not created the session file yet: only the partial answer is kept");
  if (j.truncated) gaps.push(`the journal kept the first part of a longer answer (${j.streamedChars} characters streamed)`);
  gaps.push(`the answer stops where pi stopped streaming it (last journal write ${j.updatedAt}); it has no usage or cost`);
  const ids = new EntryIds(entries.map((e) => e.id));
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
  return {
    source,
    sessions: [{ header: newHeader, idKnown: true, cwdKnown: newHeader.cwd !== "", entries: [...entries, recovered], leafId: recovered.id, sources: [source], gaps }],
    notes,
  };
}
