/**
 * The suspect-loss guard's rule. pi-guard exists because an `npm install` removed a whole sessions
 * dir; a watcher that snapshotted that state as the newest truth would make `restore latest`
 * restore the loss. So a snapshot that drops most of the files at once, or finds the sessions dir
 * gone, is still taken (it is what the disk holds) but tagged, and never "latest" nor a parent.
 */
import type { WatchSettings } from "../config/config.js";

export interface LossVerdict {
  reason: "files" | "sessions-dir";
  filesBefore: number;
  filesNow: number;
}

/**
 * `filesBefore`: the file count of the last whole snapshot (the parent), if known.
 * `sessionsDirGone`: the sessions dir existed at that snapshot and does not now.
 */
export function judgeLoss(
  filesBefore: number | undefined,
  filesNow: number,
  rule: WatchSettings["suspectLoss"],
  sessionsDirGone: boolean,
): LossVerdict | undefined {
  const before = typeof filesBefore === "number" && Number.isSafeInteger(filesBefore) && filesBefore >= 0 ? filesBefore : undefined;
  if (sessionsDirGone) return { reason: "sessions-dir", filesBefore: before ?? 0, filesNow };
  if (before === undefined) return undefined;
  const lost = before - filesNow;
  if (lost >= rule.minFiles && lost >= rule.fraction * before) return { reason: "files", filesBefore: before, filesNow };
  return undefined;
}
