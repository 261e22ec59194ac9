/**
 * Which watcher guards an agent dir, whatever it is called. The watcher's files are keyed by the
 * agent dir as its config names it (state.ts watcherFiles), and pi may name the same folder
 * otherwise: `~/.pi/agent` a symlink to the `/data/pi-agent` of pi-guard's config, or
 * PI_CODING_AGENT_DIR set differently for the watcher's service and for pi. So a running watcher
 * also writes `<stateDir>/guards/<first 16 hex of sha256(realpath(agentDir))>.json`, naming the
 * agent dir it was configured with, and the pi extension (src/pi-extension/protection.ts) looks up
 * the real path of its own agent dir there (docs/FORMAT.md §15).
 *
 * The record only points: the extension still reads that watcher's state file for whether it runs.
 * It stays when the watcher stops (or is killed), so that pi can say "watcher stopped" rather than
 * "no watcher running"; the next watcher of that folder writes its own.
 */
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { readHead } from "../fs-safe.js";
import { writeJsonFile } from "./state-file.js";

export const GUARD_RECORD_KIND = "pi-guard/guard";
const MAX_RECORD_BYTES = 8192;

export interface GuardRecord {
  kind: typeof GUARD_RECORD_KIND;
  version: 1;
  /** The agent dir as the watcher's config names it: its files are watcherFiles(stateDir, agentDir). */
  agentDir: string;
  /** Its real path, the record's key. */
  realAgentDir: string;
  pid: number;
  host: string;
}

/** The real path of an agent dir; path.resolve of it when it cannot be resolved (not there yet). */
export async function realAgentDir(agentDir: string): Promise<string> {
  return fs.realpath(agentDir).catch(() => path.resolve(agentDir));
}

export function guardRecordFile(stateDir: string, realDir: string): string {
  const tag = createHash("sha256").update(realDir).digest("hex").slice(0, 16);
  return path.join(stateDir, "guards", `${tag}.json`);
}

/** Written by the watcher when it starts listening for the extension's requests; returns the file. */
export async function writeGuardRecord(stateDir: string, agentDir: string, host: string): Promise<string> {
  const real = await realAgentDir(agentDir);
  const file = guardRecordFile(stateDir, real);
  const record: GuardRecord = { kind: GUARD_RECORD_KIND, version: 1, agentDir: path.resolve(agentDir), realAgentDir: real, pid: process.pid, host };
  await writeJsonFile(file, record);
  return file;
}

/** The record for this real agent dir, if one is there and readable. Hostile input: checked. */
export async function readGuardRecord(stateDir: string, realDir: string): Promise<GuardRecord | undefined> {
  let text: string;
  try {
    text = await readHead(guardRecordFile(stateDir, realDir), MAX_RECORD_BYTES);
  } catch {
    return undefined;
  }
  const r = parseGuardRecord(text);
  // A record of another folder (a hash collision, or a copied file) points nowhere useful.
  return r && r.realAgentDir === realDir ? r : undefined;
}

function parseGuardRecord(text: string): GuardRecord | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  const r = raw as Partial<GuardRecord> | null;
  if (typeof r !== "object" || r === null || r.kind !== GUARD_RECORD_KIND || r.version !== 1) return undefined;
  if (typeof r.agentDir !== "string" || !path.isAbsolute(r.agentDir) || r.agentDir.length > 4096) return undefined;
  if (typeof r.realAgentDir !== "string" || !Number.isSafeInteger(r.pid) || typeof r.host !== "string") return undefined;
  return r as GuardRecord;
}
