/**
 * The watcher's log: one JSON object per line, `{time, level, event, ...}`, appended to
 * `watcherFiles(...).log` and rotated at `maxBytes` to `.log.1` … `.log.<keep>`. A log that cannot
 * be written must not stop the backups: the first failure goes to stderr, the watcher carries on.
 */
import { promises as fs } from "node:fs";
import path from "node:path";
import { makeDirs, writeFully } from "../fs-safe.js";

export type LogLevel = "info" | "warn" | "error";

export interface LogLine {
  time: string;
  level: LogLevel;
  event: string;
  [field: string]: unknown;
}

export interface WatchLogOptions {
  file: string;
  maxBytes: number;
  keep: number;
  /** Also called with every line (`watch --json` prints them to stdout). */
  echo?: (line: string) => void;
  /** Where a failure to write the log is reported, once. */
  onFailure?: (message: string) => void;
}

export class WatchLog {
  private handle: fs.FileHandle | undefined;
  private size = 0;
  private queue: Promise<void> = Promise.resolve();
  private failed = false;

  constructor(private opts: WatchLogOptions) {}

  /** Rotation limits may change on a config reload. */
  setLimits(maxBytes: number, keep: number): void {
    this.opts = { ...this.opts, maxBytes, keep };
  }

  write(level: LogLevel, event: string, fields: Record<string, unknown> = {}): void {
    const line = JSON.stringify({ time: new Date().toISOString(), level, event, ...fields } satisfies LogLine);
    this.opts.echo?.(line);
    this.queue = this.queue.then(() => this.append(line + "\n")).catch((err: unknown) => {
      if (!this.failed) this.opts.onFailure?.(`cannot write the watch log ${this.opts.file}: ${(err as Error).message}`);
      this.failed = true;
      void this.handle?.close().catch(() => undefined);
      this.handle = undefined;
    });
  }

  /** Wait for every line written so far to reach the file, then close it. */
  async close(): Promise<void> {
    await this.queue;
    await this.handle?.close().catch(() => undefined);
    this.handle = undefined;
  }

  private async append(text: string): Promise<void> {
    const data = Buffer.from(text);
    if (this.handle && this.size > 0 && this.size + data.length > this.opts.maxBytes) await this.rotate();
    if (!this.handle) {
      await makeDirs(path.dirname(this.opts.file), 0o700);
      this.handle = await fs.open(this.opts.file, "a", 0o600);
      this.size = (await this.handle.stat()).size;
      if (this.size > 0 && this.size + data.length > this.opts.maxBytes) await this.rotate();
    }
    // An "a" handle appends wherever the position says; the size we track is the file's length.
    await writeFully(this.handle!, data, this.size);
    this.size += data.length;
  }

  private async rotate(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
    const file = this.opts.file;
    await fs.rm(`${file}.${this.opts.keep}`, { force: true });
    for (let i = this.opts.keep - 1; i >= 1; i--) {
      await fs.rename(`${file}.${i}`, `${file}.${i + 1}`).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "ENOENT") throw err;
      });
    }
    await fs.rename(file, `${file}.1`);
    this.handle = await fs.open(file, "a", 0o600);
    this.size = 0;
  }
}
