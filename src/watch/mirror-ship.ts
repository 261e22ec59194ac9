/**
 * The watcher's side of mirrors (docs/WATCH.md): after a snapshot, the mirrors are shipped to at
 * most once per `watch.remoteBatchMs` (default 30 s), so a watcher making a snapshot a second does
 * not make a PUT a second on a bucket; a stop ships once more within its budget. Shipping uses its
 * own Repository object on the same target, so it never shares an in-memory index with a snapshot
 * running at the same time (a shared lock on the primary beside the snapshot's append lock).
 *
 * Each mirror's lag is tracked for `status` and the alerts (MirrorLag in state.ts): snapshots the
 * watcher made since the listing of the mirror's last good shipment are ones the mirror lacks.
 * Until a first shipment succeeds, only this watcher's own snapshots are counted.
 */
import type { Config } from "../config/config.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import type { MirrorShipment } from "../repo/ship.js";
import { CountingTarget, type RequestCounts } from "../targets/counting.js";
import type { OpenTargetOptions } from "../targets/open.js";
import type { WatchLog } from "./log.js";
import type { MirrorLag } from "./state.js";

/** The retry budget of one shipment to one mirror (the configured `retry` budget caps it too). */
const SHIP_RETRY_MS = 20_000;

/** What the CLI is told about one mirror: a failed shipment, or the first good one after failures. */
export type MirrorReport = { kind: "mirror-error"; mirror: string; message: string; retryInMs: number } | { kind: "mirror-recovered"; mirror: string };

interface Tracked {
  lag: MirrorLag;
  /** Set when the mirror was listed in the shipment under way: snapshots made since then. */
  sinceListing?: { count: number; first: string | null };
}

export class MirrorShipper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private lastShipAt = 0;
  /** A snapshot was made since the last shipment started. */
  private due = false;
  private stopped = false;
  private readonly controller = new AbortController();
  /** Requests sent to each mirror's storage since the watcher started, for PUTs per day in `status`. */
  private readonly counts = new Map<string, RequestCounts>();
  private readonly tracked = new Map<string, Tracked>();

  constructor(
    private readonly config: () => Config,
    private readonly repo: Repository,
    private readonly log: WatchLog,
    private readonly report: (r: MirrorReport) => void,
  ) {}

  private track(mirror: string): Tracked {
    let t = this.tracked.get(mirror);
    if (!t) {
      t = { lag: { mirror, lastShipped: null, behind: 0, behindSince: null, lastAttempt: null, failingSince: null } };
      this.tracked.set(mirror, t);
    }
    return t;
  }

  /** A snapshot was committed to the primary: ship it (and whatever a down mirror missed) soon. */
  noteSnapshot(time: string): void {
    if (!this.config().mirrors.length || this.stopped) return;
    for (const mirror of this.config().mirrors) {
      const t = this.track(mirror);
      t.lag.behind++;
      t.lag.behindSince ??= time;
      if (t.sinceListing) {
        t.sinceListing.count++;
        t.sinceListing.first ??= time;
      }
    }
    this.due = true;
    this.arm();
  }

  /** Each configured mirror's lag, for the state file (a mirror dropped by a reload is left out). */
  lags(): MirrorLag[] {
    return this.config().mirrors.map((m) => structuredClone(this.track(m).lag));
  }

  private arm(): void {
    if (this.timer || this.running || this.stopped) return;
    const wait = Math.max(0, this.lastShipAt + this.config().watch.remoteBatchMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.ship();
    }, wait);
  }

  private ship(): Promise<void> {
    if (this.running) return this.running;
    this.due = false;
    this.lastShipAt = Date.now();
    const config = this.config();
    this.running = (async () => {
      const [{ shipToMirrors }, { shipSelection }] = await Promise.all([import("../repo/ship.js"), import("../repo/replicate.js")]);
      const source = this.repo.atTarget(this.repo.target, { dataDir: config.dataDir });
      for (const mirror of config.mirrors) {
        const t = this.track(mirror);
        let listed: SnapshotRecord[] | undefined;
        // The ship policy, watched: what the primary held when this mirror's copy chose what to send.
        const select = (all: SnapshotRecord[]) => {
          listed = all;
          t.sinceListing = { count: 0, first: null };
          return shipSelection(all);
        };
        const counts = this.counts.get(mirror) ?? { puts: 0, gets: 0, lists: 0 };
        this.counts.set(mirror, counts);
        // One attempt waits out a short outage only: the shipper tries again next batch anyway, and
        // a mirror that is down must show as failing in the state file, not as an attempt minutes long.
        const counting: OpenTargetOptions = { wrapStorage: (s, { multipart }) => new CountingTarget(s, multipart, counts), retry: { maxMs: SHIP_RETRY_MS } };
        const [r] = await shipToMirrors({ mirrors: [mirror], dataDir: config.dataDir }, source, { signal: this.controller.signal, select }, () => counting).catch(
          (err: unknown): MirrorShipment[] => [{ mirror, error: err instanceof Error ? err.message : String(err), transient: true }],
        );
        this.settle(t, r, listed, config);
        if (this.stopped && this.controller.signal.aborted) break;
      }
    })().finally(() => {
      this.running = undefined;
      if (this.due) this.arm();
    });
    return this.running;
  }

  /** Record one mirror's shipment: its lag after a good one, the failure otherwise. */
  private settle(t: Tracked, r: MirrorShipment, listed: SnapshotRecord[] | undefined, config: Config): void {
    const now = new Date().toISOString();
    const since = t.sinceListing;
    t.sinceListing = undefined;
    if (r.report && !r.error) {
      const c = r.report;
      this.log.write("info", "mirror", { mirror: r.mirror, copied: c.copied.length, present: c.present.length, blobs: c.blobsCopied, bytes: c.bytesCopied, packs: c.packsWritten });
      const wasFailing = t.lag.failingSince !== null;
      const newest = listed?.at(-1);
      t.lag = {
        mirror: r.mirror,
        lastShipped: newest ? { id: newest.id, time: newest.snapshot.time } : t.lag.lastShipped,
        behind: since?.count ?? 0,
        behindSince: since?.first ?? null,
        lastAttempt: { time: now, ok: true },
        failingSince: null,
      };
      if (wasFailing) {
        this.log.write("info", "mirror-recovered", { mirror: r.mirror });
        this.report({ kind: "mirror-recovered", mirror: r.mirror });
      }
      return;
    }
    this.log.write("error", "error", { where: "mirror", mirror: r.mirror, message: r.error, transient: r.transient ?? null, behind: t.lag.behind, behindSince: t.lag.behindSince });
    t.lag.lastAttempt = { time: now, ok: false, error: r.error };
    t.lag.failingSince ??= now;
    this.report({ kind: "mirror-error", mirror: r.mirror, message: r.error ?? "unknown error", retryInMs: config.watch.remoteBatchMs });
    // Retried at the next interval even without a new snapshot: the mirror compares listings.
    this.due = true;
  }

  requestCounts(): ({ mirror: string } & RequestCounts)[] {
    return [...this.counts].map(([mirror, c]) => ({ mirror, ...c }));
  }

  /** At a stop: ship once more if a snapshot is unshipped, giving up (safely: copies are atomic) after `budgetMs`. */
  async flush(budgetMs: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    const work = (async () => {
      if (this.running) await this.running;
      if (this.due) await this.ship();
    })();
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([work, new Promise<void>((r) => (timeout = setTimeout(r, Math.max(0, budgetMs))))]);
    clearTimeout(timeout);
    // Out of time: a copy stopped between objects leaves nothing half-visible on the mirror.
    this.controller.abort(new Error("the watcher stopped"));
    await Promise.race([work.catch(() => undefined), new Promise((r) => setTimeout(r, 200))]);
  }
}
