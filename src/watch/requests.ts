/**
 * "Snapshot now" requests from inside pi: the pi extension (src/pi-extension/) writes
 * `watcherFiles(...).request` at turn_end, agent_settled and session_shutdown, and the running
 * watcher takes a snapshot at once instead of after its debounce. The file is only a signal: the
 * watcher stays the one repository writer, and a request nobody reads costs nothing.
 *
 * The watcher hears of it through fs.watch on the state dir (inotify: within milliseconds), and
 * looks for the file on every tick too, in case an event was missed. It takes the file by renaming
 * it to a name of its own, so a request written meanwhile is a new file and is not lost.
 *
 * When it starts listening it writes a guard record (guard-record.ts): the extension of a pi that
 * names the agent dir otherwise (a symlink, another PI_CODING_AGENT_DIR) finds this watcher by it.
 */
import { watch, type FSWatcher, promises as fs } from "node:fs";
import path from "node:path";
import { makeDirs, readHead } from "../fs-safe.js";
import { writeGuardRecord } from "./guard-record.js";

/** What a request says; hostile input, so only short strings are kept. */
export interface SnapshotRequest {
  reason: string;
  pid?: number;
  sessionFile?: string;
}

const MAX_REQUEST_BYTES = 4096;

export class RequestListener {
  private fsWatch: FSWatcher | undefined;
  private taking: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly file: string,
    private readonly onRequest: (r: SnapshotRequest) => void,
    private readonly onError: (message: string) => void,
    /** The agent dir this watcher guards and its host, for the guard record. */
    private readonly guard?: { agentDir: string; host: string },
  ) {}

  async start(): Promise<void> {
    const dir = path.dirname(this.file);
    await makeDirs(dir, 0o700);
    const name = path.basename(this.file);
    try {
      this.fsWatch = watch(dir, { persistent: false }, (_event, changed) => {
        if (changed === null || changed === name) this.poll();
      });
      this.fsWatch.on("error", (err) => this.onError(`watching ${dir} for snapshot requests failed: ${err.message}; requests are looked for every few seconds`));
    } catch (err) {
      this.onError(`cannot watch ${dir} for snapshot requests: ${(err as Error).message}; requests are looked for every few seconds`);
    }
    if (this.guard) {
      try {
        await writeGuardRecord(dir, this.guard.agentDir, this.guard.host);
      } catch (err) {
        this.onError(`cannot write the guard record in ${dir}: ${(err as Error).message}; a pi that names ${this.guard.agentDir} otherwise will not find this watcher`);
      }
    }
    this.poll();
  }

  /** Take the request file if there is one (one take at a time; a call meanwhile looks again after). */
  poll(): void {
    if (this.taking) {
      this.again = true;
      return;
    }
    this.taking = this.take()
      .catch((err: unknown) => this.onError(`reading a snapshot request failed: ${(err as Error).message}`))
      .finally(() => {
        this.taking = undefined;
        if (this.again) {
          this.again = false;
          this.poll();
        }
      });
  }

  private async take(): Promise<void> {
    const taken = `${this.file}.taken-${process.pid}`;
    try {
      await fs.rename(this.file, taken);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    let text: string;
    try {
      text = await readHead(taken, MAX_REQUEST_BYTES);
    } finally {
      await fs.rm(taken, { force: true });
    }
    this.onRequest(parseRequest(text));
  }

  close(): void {
    this.fsWatch?.close();
    this.fsWatch = undefined;
  }
}

/** A request's reason, pid and session file; anything unreadable is still a request ("unknown"). */
export function parseRequest(text: string): SnapshotRequest {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { reason: "unknown" };
  }
  const r = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
  const short = (v: unknown, max: number) => (typeof v === "string" ? v.replace(/[\u0000-\u001f]/g, " ").slice(0, max) : undefined);
  return {
    reason: short(r.reason, 64) || "unknown",
    ...(Number.isSafeInteger(r.pid) && (r.pid as number) > 0 ? { pid: r.pid as number } : {}),
    ...(short(r.sessionFile, 1024) ? { sessionFile: short(r.sessionFile, 1024) } : {}),
  };
}
