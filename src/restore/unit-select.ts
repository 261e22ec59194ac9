// What a --session or --path restore writes, decided through the agents' adapters before anything
// is written: the session an id names (agents/find-session.ts), the files selected, grown by each
// agent's restoreUnits to what must come back with them from the same snapshot, and the agent's
// checkRestored on the snapshot's versions of those files.

import { createHash } from "node:crypto";
import picomatch from "picomatch";
import { findAgent } from "../agents/registry.js";
import { snapshotRootAgents } from "../agents/roots.js";
import { snapshotFiles } from "../agents/files.js";
import { ambiguousSession, findSessions, type FoundSession, resolveSession, shownName } from "../agents/find-session.js";
import type { AgentAdapter, FileReader, FileRef, RestoreCheck, RestoreUnit } from "../agents/types.js";
import { RepoError } from "../repo/errors.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { SnapshotReader } from "./snapshot-reader.js";

/** A check of one agent's restored files (RestoreCheck), named with its agent. */
export interface AgentRestoreCheck extends RestoreCheck {
  agent: string;
}

export interface UnitSelection {
  /** With --session: the session the id names. */
  session?: FoundSession;
  /** The units, each with its agent (none for a root no agent owns). */
  units: { agent?: AgentAdapter; unit: RestoreUnit }[];
  /** Every unit file, as `${root}\0${path}` (RestoreOptions.units). */
  keys: Set<string>;
  /** The files the session or the paths named themselves, before the units grew them. */
  selected: FileRef[];
  checks: AgentRestoreCheck[];
}

export interface UnitSelectOptions {
  session?: string;
  paths?: string[];
  /** restore --agent: only this agent's sessions are looked for. */
  agent?: string;
}

const keyOf = (r: FileRef) => `${r.root}\0${r.path}`;

/** The adapters of the agents a snapshot holds (by its roots), or only `agent`'s. */
function agentsOf(record: SnapshotRecord, agent: string | undefined): { adapters: AgentAdapter[]; rootAgent: Map<string, string> } {
  const rootAgent = snapshotRootAgents(record.snapshot);
  const names = new Set(rootAgent.values());
  const adapters = [...names].map(findAgent).filter((a): a is AgentAdapter => !!a && (agent === undefined || a.name === agent));
  return { adapters, rootAgent };
}

/** A snapshot's files through the agents' FileReader; a tree that is not JSON is damage (exit 3), as in planRestore. */
async function filesOf(reader: SnapshotReader, record: SnapshotRecord): Promise<FileReader> {
  try {
    return await snapshotFiles(reader, { ...record.snapshot, id: record.id });
  } catch (err) {
    if (err instanceof SyntaxError) throw new RepoError(`snapshot ${record.id.slice(0, 8)}: its file list is not valid JSON`, "corrupt");
    throw err;
  }
}

/**
 * The units a --session or --path restore of `record` writes, and the agents' checks on them.
 * An unknown id, an ambiguous prefix and an id only other snapshots hold are errors, each
 * naming what to do (sessionElsewhere).
 */
export async function selectUnits(repo: Repository, record: SnapshotRecord, opts: UnitSelectOptions): Promise<UnitSelection> {
  const { adapters, rootAgent } = agentsOf(record, opts.agent);
  const reader = await SnapshotReader.open(repo);
  try {
    const files = await filesOf(reader, record);
    const all: FileRef[] = [];
    for (const root of files.roots) for await (const f of files.list(root)) all.push({ root: f.root, path: f.path });
    const inPaths = opts.paths?.length ? picomatch(opts.paths, { dot: true }) : undefined;
    let session: FoundSession | undefined;
    let selected: FileRef[];
    if (opts.session !== undefined) {
      session = await resolveSession(files, opts.session, adapters);
      if (!session) throw await sessionElsewhere(repo, reader, { record, files, adapters }, opts.session, opts.agent);
      selected = session.meta.files.filter((f) => !inPaths || inPaths(f.path));
      if (!selected.length) throw new RepoError(`session ${shownName(session.meta.id)} has no file that --path matches (its files: ${shownName(session.meta.files.map((f) => f.path).join(", "))})`, "not-found");
    } else selected = all.filter((f) => inPaths?.(f.path));

    const units: UnitSelection["units"] = [];
    const checks: AgentRestoreCheck[] = [];
    const byAgent = new Map<string, FileRef[]>();
    for (const f of selected) {
      const agent = rootAgent.get(f.root);
      if (agent && findAgent(agent)) {
        if (!byAgent.has(agent)) byAgent.set(agent, []);
        byAgent.get(agent)!.push(f);
      } else units.push({ unit: { files: [f], why: f.path } });
    }
    for (const [name, refs] of byAgent) {
      const adapter = findAgent(name)!;
      const available = all.filter((f) => rootAgent.get(f.root) === name);
      const own = adapter.restoreUnits(refs, available);
      units.push(...own.map((unit) => ({ agent: adapter, unit })));
      checks.push(...(await checksOf(adapter, files, own)));
    }
    const keys = new Set(units.flatMap((u) => u.unit.files.map(keyOf)));
    return { ...(session ? { session } : {}), units, keys, selected, checks };
  } finally {
    await reader.close();
  }
}

/** The adapter's checks; one that cannot run is a failed check, never a crash of the restore. */
async function checksOf(adapter: AgentAdapter, files: FileReader, units: RestoreUnit[]): Promise<AgentRestoreCheck[]> {
  try {
    return (await adapter.checkRestored(files, units)).map((c) => ({ agent: adapter.name, ...c }));
  } catch (err) {
    return [{ agent: adapter.name, name: `${adapter.name}: checks`, ok: false, message: `could not check the restored files: ${(err as Error).message.split("\n")[0]}` }];
  }
}

/**
 * What an agent's listing in a snapshot depends on: its roots' files, by path, size and mtime.
 * Two snapshots where that is the same list the same sessions, so the search lists it once.
 */
async function agentFilesState(files: FileReader, roots: readonly string[]): Promise<string> {
  const hash = createHash("sha256");
  for (const root of roots) for await (const f of files.list(root)) hash.update(`${root}\0${f.path}\0${f.size}\0${f.mtimeMs}\n`);
  return hash.digest("hex");
}

/** The adapters among `adapters` whose files in `files` were not listed yet (`listed` remembers them). */
async function unlisted(files: FileReader, record: SnapshotRecord, adapters: AgentAdapter[], listed: Set<string>): Promise<AgentAdapter[]> {
  const rootAgent = snapshotRootAgents(record.snapshot);
  const out: AgentAdapter[] = [];
  for (const a of adapters) {
    const state = `${a.name}\0${await agentFilesState(files, [...rootAgent].filter(([, agent]) => agent === a.name).map(([root]) => root))}`;
    if (listed.has(state)) continue;
    listed.add(state);
    out.push(a);
  }
  return out;
}

/**
 * The error for a session the chosen snapshot (`searched`: its files, by `adapters`) does not
 * hold: the newest other snapshot that holds it, with the command that restores it from there;
 * or that none does. Every agent an older snapshot holds counts (the chosen one may lack a wiped
 * agent); an agent's files that an earlier look already listed are not listed again, so a search
 * through many snapshots costs what changed between them.
 */
async function sessionElsewhere(
  repo: Repository,
  reader: SnapshotReader,
  chosen: { record: SnapshotRecord; files: FileReader; adapters: AgentAdapter[] },
  session: string,
  agent: string | undefined,
): Promise<RepoError> {
  const listed = new Set<string>();
  await unlisted(chosen.files, chosen.record, chosen.adapters, listed);
  const snapshots = (await repo.listSnapshots()).filter((s) => s.id !== chosen.record.id).reverse();
  for (const s of snapshots) {
    const files = await filesOf(reader, s);
    const found = await findSessions(files, session, await unlisted(files, s, agentsOf(s, agent).adapters, listed));
    if (found.length > 1) return ambiguousSession(session, found);
    if (found.length === 1) {
      const id = shownName(found[0].meta.id);
      const c = chosen.record;
      return new RepoError(
        `snapshot ${c.id.slice(0, 8)} (${c.snapshot.time}) does not hold session ${id}; the last snapshot that does is ${s.id.slice(0, 8)} (${s.snapshot.time}): pi-guard restore ${s.id.slice(0, 8)} --session ${id}${agent ? ` --agent ${agent}` : ""}`,
        "not-found",
      );
    }
  }
  return new RepoError(`no snapshot holds a session whose id starts with "${shownName(session)}"${agent ? ` among ${agent}'s sessions` : ""}`, "not-found");
}
