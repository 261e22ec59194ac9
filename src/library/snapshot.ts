/**
 * Taking a snapshot the way `pi-guard snapshot` does: a plain one (no option a watcher cannot
 * honour) is handed to the running watcher of this config, which has the repository open
 * (src/watch/socket.ts); anything else, or any way the hand-off fails, runs the engine here.
 */
import type { Config } from "../config/config.js";
import type { Engine, EngineBackupOptions, EngineBackupResult } from "../engine/types.js";

export interface SnapshotTaken {
  result: EngineBackupResult;
  /** Who took it: the running watcher, or this process. */
  via: "watcher" | "direct";
  /** Why a watcher that was asked did not take it (absent when none was asked, or it did). */
  handOff?: string;
  /** The engine that took it ("native" when the watcher did). */
  engine: Engine["kind"];
  /** What the user should know about how the sources were read (a sessions dir that is a symlink). */
  notes: string[];
}

/** A sessions dir that is a symlink to a folder is backed up from that folder: say so (native snapshots of the agent dir). */
async function sourceNotes(config: Config, engine: Engine["kind"], opts: EngineBackupOptions): Promise<string[]> {
  if (engine === "restic" || opts.fromTar || !config.sessionsLink) return [];
  const { sessionsLinkNote } = await import("../agents/pi/paths.js");
  return [sessionsLinkNote(config.sessionsLink)];
}

/** Options a watcher's snapshot cannot honour: with any of them the snapshot is taken here. */
const OWN_RUN: (keyof EngineBackupOptions)[] = ["tags", "fromTar", "time", "init", "allowEmpty", "acceptLoss", "readAll"];

export async function takeSnapshot(config: Config, engine: () => Promise<Engine>, opts: EngineBackupOptions = {}): Promise<SnapshotTaken> {
  const plain = OWN_RUN.every((k) => {
    const v = opts[k];
    return v === undefined || v === false || (Array.isArray(v) && v.length === 0);
  });
  let handOff: string | undefined;
  if (plain) {
    const asked = await snapshotByWatcher(config);
    if (!("direct" in asked)) return asked;
    handOff = asked.direct;
  }
  return snapshotHere(config, engine, opts, handOff);
}

/** A plain snapshot taken by the running watcher, or why the caller must take it itself. */
export async function snapshotByWatcher(config: Config): Promise<SnapshotTaken | { direct: string }> {
  const asked = await (await import("../watch/socket.js")).snapshotByWatcher(config);
  if (!("result" in asked)) return asked;
  return { result: asked.result, via: "watcher", engine: "native", notes: await sourceNotes(config, "native", {}) };
}

/** The snapshot taken by this process; `handOff` is why a watcher that was asked did not take it. */
export async function snapshotHere(config: Config, engine: () => Promise<Engine>, opts: EngineBackupOptions, handOff?: string): Promise<SnapshotTaken> {
  const e = await engine();
  const result = await e.backup(opts);
  return { result, via: "direct", engine: e.kind, notes: await sourceNotes(config, e.kind, opts), ...(handOff !== undefined ? { handOff } : {}) };
}
