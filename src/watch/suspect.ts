/**
 * The suspect-loss guard's rule. pi-guard exists because an `npm install` removed a whole sessions
 * dir; a watcher that snapshotted that state as the newest truth would make `restore latest`
 * restore the loss. So a snapshot that loses most of the files at once, or every session file, is
 * still taken (it is what the disk holds) but tagged, and never "latest" nor a parent.
 *
 * Losses are counted against the last whole snapshot (the parent) file by file, not as a
 * difference of totals: a new session started after the accident must not hide the lost ones.
 */
import type { WatchSettings } from "../config/config.js";
import type { ParentFile } from "../snapshot/snapshotter.js";

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
