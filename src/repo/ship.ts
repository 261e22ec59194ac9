/**
 * Shipping the primary's snapshots to each mirror of `config.mirrors` (docs/FORMAT.md §14). A mirror
 * that is down or refuses is reported and skipped: it never blocks the others or the primary, and
 * the next ship catches up, because what to send is found by comparing listings, not from a queue.
 */
import type { Config } from "../config/config.js";
import { openTarget, type OpenTargetOptions } from "../targets/open.js";
import { TargetError } from "../targets/target.js";
import { copySnapshots, openReplica, shipSelection, type CopyOptions, type CopyReport } from "./replicate.js";
import type { Repository } from "./repository.js";

export interface MirrorShipment {
  mirror: string;
  /** The copy, when the mirror could be reached and the copy finished. */
  report?: CopyReport;
  /** The mirror was empty and was made a replica of the primary by this shipment. */
  created?: boolean;
  /** One line: why this mirror got nothing (or not everything), when it did not. */
  error?: string;
  /** The failure may pass (network, server): the next ship retries. */
  transient?: boolean;
}

/** Whether a shipment left the mirror with everything it was meant to get. */
export const shipped = (s: MirrorShipment): boolean => !s.error && !!s.report && s.report.failed.length === 0;

/**
 * Ship to every mirror: by default what the ship policy chooses (`shipSelection`); pass `select`
 * or the other CopyOptions to choose otherwise. Mirrors are done one after another.
 */
export async function shipToMirrors(
  config: Pick<Config, "mirrors" | "dataDir"> & Partial<Pick<Config, "retry">>,
  repo: Repository,
  opts: CopyOptions = {},
  /** How each mirror's storage is opened (the watcher counts its requests). */
  open: (mirror: string) => OpenTargetOptions = () => ({}),
): Promise<MirrorShipment[]> {
  const out: MirrorShipment[] = [];
  for (const mirror of config.mirrors) {
    try {
      const { repo: dest, setup } = await openReplica(repo, openTarget({ repo: mirror, retry: config.retry }, process.env, open(mirror)), { create: true, dataDir: config.dataDir });
      const hasChoice = opts.select || opts.ids?.length || opts.host || opts.latestOnly;
      const report = await copySnapshots(repo, dest, hasChoice ? opts : { ...opts, select: shipSelection });
      const failed = report.failed.length ? `${report.failed.length} snapshot(s) not copied: ${report.failed[0].error}` : undefined;
      out.push({ mirror, report, created: setup.created, ...(failed ? { error: failed } : {}) });
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      const message = err instanceof Error ? err.message.split("\n")[0] : String(err);
      out.push({ mirror, error: message, transient: err instanceof TargetError ? err.transient : !(err instanceof Error && "kind" in err) });
    }
  }
  return out;
}
