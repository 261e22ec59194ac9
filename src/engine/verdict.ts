/**
 * What a snapshot's result means, for every caller alike (`pi-guard snapshot`, the scheduled
 * snapshot job, the library): each finding is one line and how bad it is. A snapshot that is
 * incomplete is damage (exit 3, as restic does: the snapshot exists, but it is not everything);
 * a suspected loss and a mirror that did not get it are failures (exit 1); the rest are notes.
 */
// Types only at load time: the CLI's commands name paths with shownPath without loading the
// snapshot and mirror code.
import type { MirrorShipment } from "../repo/ship.js";
import type { EngineBackupResult } from "./types.js";

export interface SnapshotFinding {
  level: "damaged" | "failure" | "warning";
  /** What it is about: the CLI prints the mirrors' lines with what each mirror got. */
  kind: "special" | "changed" | "skipped" | "incomplete" | "loss" | "cleanup" | "mirror";
  message: string;
}

/** A snapshot path: "root:path" outside the agent root, escaped when it holds control characters. */
export function shownPath(root: string | undefined, rel: string): string {
  if (root === undefined) return JSON.stringify(rel);
  const name = `${root === "agent" ? "" : `${root}:`}${rel || "."}`;
  return /[\x00-\x1f\x7f]/.test(name) ? JSON.stringify(name) : name;
}

/** One line for a mirror that did not get everything. */
export function mirrorFailure(m: MirrorShipment, snapshotId: string, repo: string): string {
  return `snapshot ${snapshotId.slice(0, 8)} saved in ${repo}; mirror ${m.mirror} failed: ${m.error ?? "not everything was copied"}; it will be retried by the next snapshot or \`pi-guard copy\``;
}

export async function snapshotFindings(r: EngineBackupResult, repo: string): Promise<SnapshotFinding[]> {
  const s = r.snapshot;
  if (!s) return [];
  // Loaded only when there is something to describe: ship.js brings in the whole repository code,
  // which a snapshot handed to the watcher otherwise never loads.
  const [guard, ship] = await Promise.all([s.loss || s.cleanup ? import("../snapshot/loss-guard.js") : undefined, r.mirrors.length ? import("../repo/ship.js") : undefined]);
  const out: SnapshotFinding[] = [];
  for (const k of s.special) out.push({ level: "warning", kind: "special", message: `not backed up: ${shownPath(k.root, k.path)} (a ${k.kind.replace("-", " ")}: no bytes to copy)` });
  for (const k of s.changedWhileRead) out.push({ level: "warning", kind: "changed", message: `${shownPath(k.root, k.path)} changed while it was read (${k.reads} reads): stored as last read, which may mix two versions` });
  if (s.skipped.length || s.changedWhileRead.length) {
    for (const k of s.skipped) out.push({ level: "damaged", kind: "skipped", message: `skipped ${shownPath(k.root, k.path)}: ${k.error}` });
    const why = [s.skipped.length ? `${s.skipped.length} path(s) could not be read` : "", s.changedWhileRead.length ? `${s.changedWhileRead.length} file(s) changed while read` : ""].filter(Boolean).join(", ");
    const what = r.engine === "restic" ? "restic snapshot" : "snapshot";
    out.push({ level: "damaged", kind: "incomplete", message: `${what} ${s.id.slice(0, 8)} is incomplete: ${why}${r.engine === "native" ? ' (tagged "incomplete")' : ""}` });
  }
  if (s.loss && !r.lossAccepted) out.push({ level: "failure", kind: "loss", message: guard!.describeLoss(s.loss, s.id, s.parent ?? undefined) });
  // Not a failure: the agent deleted its own old files, and what it took stays restorable.
  if (s.cleanup) out.push({ level: "warning", kind: "cleanup", message: guard!.describeCleanup(s.cleanup, s.id) });
  for (const m of r.mirrors) if (!ship!.shipped(m)) out.push({ level: "failure", kind: "mirror", message: mirrorFailure(m, s.id, repo) });
  return out;
}

/** The exit code the findings call for: 3 for damage, 1 for a failure, else 0. */
export function findingsExit(findings: SnapshotFinding[]): 0 | 1 | 3 {
  if (findings.some((f) => f.level === "damaged")) return 3;
  return findings.some((f) => f.level === "failure") ? 1 : 0;
}
