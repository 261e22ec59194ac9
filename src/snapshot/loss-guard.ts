/**
 * The suspect-loss guard's rule, the same on every snapshot path: `pi-guard snapshot`, the
 * scheduled snapshot job, the watcher, an in-place restore's undo snapshot and the restic engine.
 * pi-guard exists because an `npm install` removed a whole sessions dir; a snapshot that recorded
 * that state as the newest truth would make `restore latest` restore the loss. So a snapshot that
 * loses most of the files at once, or every session file, is still taken (it is what the disk
 * holds) but tagged, and never "latest" nor a parent, unless the user accepts the deletion.
 *
 * Losses are counted against the last whole snapshot (the parent) file by file, not as a
 * difference of totals: a new session started after the accident must not hide the lost ones.
 */
import os from "node:os";
import path from "node:path";
import { isInside, META_ROOT_NAME, type Config, type WatchSettings } from "../config/config.js";
import { sessionsDir } from "../pi/paths.js";
import type { ParentFile } from "./snapshotter.js";

/** How a deliberate deletion is accepted: a snapshot taken so is not tagged, and becomes the last whole state. */
export const ACCEPT_LOSS_COMMAND = "pi-guard snapshot --accept-loss";

export interface LossVerdict {
  reason: "files" | "sessions";
  /** Files of the last whole snapshot. */
  filesBefore: number;
  /** Files this snapshot holds. */
  filesNow: number;
  /** Files of the last whole snapshot that are gone. */
  lost: number;
  /** A few of them, for the log. */
  sample: string[];
}

export function judgeLoss(
  parentFiles: ParentFile[],
  filesNow: number,
  rule: WatchSettings["suspectLoss"],
  isSessionFile: (f: ParentFile) => boolean,
): LossVerdict | undefined {
  const gone = parentFiles.filter((f) => !f.found);
  if (gone.length === 0) return undefined;
  const sessions = parentFiles.filter(isSessionFile);
  const verdict = (reason: LossVerdict["reason"]): LossVerdict => ({
    reason,
    filesBefore: parentFiles.length,
    filesNow,
    lost: gone.length,
    sample: gone.slice(0, 5).map((f) => `${f.root}:${f.path}`),
  });
  if (sessions.length > 0 && sessions.every((f) => !f.found)) return verdict("sessions");
  if (gone.length >= rule.minFiles && gone.length >= rule.fraction * parentFiles.length) return verdict("files");
  return undefined;
}

/** Which files of a snapshot are pi's sessions: those below the sessions dir, wherever it is. */
export function sessionFileTest(config: Pick<Config, "agentDir" | "roots">): (f: ParentFile) => boolean {
  const dir = sessionsDir({ agentDir: config.agentDir, home: process.env.HOME || os.homedir() }).dir;
  // The deepest root that holds it: a symlinked sessions dir is a root of its own inside the agent root.
  const root = config.roots.filter((r) => isInside(dir, r.path) && r.name !== META_ROOT_NAME).sort((a, b) => b.path.length - a.path.length)[0];
  if (!root) return () => false;
  const prefix = path.relative(root.path, dir).split(path.sep).join("/");
  return (f) => f.root === root.name && (prefix === "" || f.path.startsWith(`${prefix}/`));
}

/**
 * The one loud line a snapshot judged a loss ends with: what vanished, how many, and both ways out.
 * `parent` is the last whole snapshot the loss was counted against.
 */
export function describeLoss(v: LossVerdict, snapshotId: string, parent: string | undefined): string {
  const what = v.reason === "sessions" ? "every session file is gone" : "most files vanished at once";
  const of = parent ? ` of snapshot ${parent.slice(0, 8)}` : "";
  // eslint-disable-next-line no-control-regex
  const sample = v.sample.slice(0, 3).map((s) => s.replace(/^agent:/, "").replace(/[\u0000-\u001f\u007f]/g, "?")).join(", ");
  return (
    `SUSPECTED LOSS: ${what} (${v.lost} of ${v.filesBefore} files${of}, e.g. ${sample}${v.lost > 3 ? ", ..." : ""}); ` +
    `snapshot ${snapshotId.slice(0, 8)} is tagged suspect-loss and is not "latest": \`pi-guard restore latest\` brings them back; ` +
    `if you deleted them on purpose, \`${ACCEPT_LOSS_COMMAND}\` accepts the deletion`
  );
}
