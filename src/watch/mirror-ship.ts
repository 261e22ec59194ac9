/**
 * The watcher's side of mirrors (docs/WATCH.md): after a snapshot, the mirrors are shipped to at
 * most once per `watch.remoteBatchMs` (default 30 s), so a watcher making a snapshot a second does
 * not make a PUT a second on a bucket; a stop ships once more within its budget. Shipping uses its
 * own Repository object on the same target, so it never shares an in-memory index with a snapshot
 * running at the same time (a shared lock on the primary beside the snapshot's append lock).
 */
import type { Config } from "../config/config.js";
import type { Repository } from "../repo/repository.js";
import { CountingTarget, type RequestCounts } from "../targets/counting.js";
import type { OpenTargetOptions } from "../targets/open.js";
import type { WatchLog } from "./log.js";

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

  constructor(
    private readonly config: () => Config,
    private readonly repo: Repository,
    private readonly log: WatchLog,
    private readonly onError: (message: string, retryInMs: number) => void,
  ) {}

  /** A snapshot was committed to the primary: ship it (and whatever a down mirror missed) soon. */
  noteSnapshot(): void {
    if (!this.config().mirrors.length || this.stopped) return;
    this.due = true;
    this.arm();
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
      const { shipToMirrors } = await import("../repo/ship.js");
      const source = this.repo.atTarget(this.repo.target, { dataDir: config.dataDir });
      const counting = (mirror: string): OpenTargetOptions => {
        const counts = this.counts.get(mirror) ?? { puts: 0, gets: 0, lists: 0 };
        this.counts.set(mirror, counts);
        return { wrapStorage: (t, { multipartPartSize }) => new CountingTarget(t, multipartPartSize, counts) };
      };
      const results = await shipToMirrors(config, source, { signal: this.controller.signal }, counting).catch((err: unknown) => [{ mirror: "*", error: err instanceof Error ? err.message : String(err), transient: true }]);
      for (const r of results) {
        if ("report" in r && r.report && !r.error) {
          const c = r.report;
          this.log.write("info", "mirror", { mirror: r.mirror, copied: c.copied.length, present: c.present.length, blobs: c.blobsCopied, bytes: c.bytesCopied, packs: c.packsWritten });
        } else {
          this.log.write("error", "error", { where: "mirror", mirror: r.mirror, message: r.error, transient: r.transient ?? null });
          this.onError(`mirror ${r.mirror}: ${r.error}; the snapshots are safe in ${config.repo} and will be shipped at the next try`, config.watch.remoteBatchMs);
          // Retried at the next interval even without a new snapshot: the mirror compares listings.
          this.due = true;
        }
      }
    })().finally(() => {
      this.running = undefined;
      if (this.due) this.arm();
    });
    return this.running;
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
