import { bodyBuffer, ObjectExists, ObjectNotFound, throwIfAborted, type ObjectInfo, type OpOptions, type PutBody, type PutOptions, type Target } from "./target.js";

/**
 * Objects in a Map: for tests and for exercising the wrappers without a disk or a server. Values
 * are copied in and out, so a caller reusing its buffer cannot change a stored object.
 */
export class MemoryTarget implements Target {
  private readonly objects = new Map<string, Buffer>();
  private readonly times = new Map<string, number>();

  constructor(readonly location = "memory:") {}

  async get(key: string, opts: OpOptions = {}): Promise<Buffer> {
    throwIfAborted(opts.signal);
    const data = this.objects.get(key);
    if (!data) throw new ObjectNotFound(key);
    return Buffer.from(data);
  }

  async getRange(key: string, offset: number, length: number, opts: OpOptions = {}): Promise<Buffer> {
    throwIfAborted(opts.signal);
    const data = this.objects.get(key);
    if (!data) throw new ObjectNotFound(key);
    return Buffer.from(data.subarray(Math.min(offset, data.length), Math.min(offset + length, data.length)));
  }

  /** Copies in 64 KiB chunks, as a socket would deliver them. */
  async *readRange(key: string, offset: number, length: number, opts: OpOptions = {}): AsyncIterable<Uint8Array> {
    const data = await this.getRange(key, offset, length, opts);
    for (let at = 0; at < data.length; at += 64 * 1024) {
      throwIfAborted(opts.signal);
      yield data.subarray(at, at + 64 * 1024);
    }
  }

  async put(key: string, data: PutBody, opts: PutOptions = {}): Promise<void> {
    const stored = Buffer.isBuffer(data) ? Buffer.from(data) : await bodyBuffer(data, key, opts.signal);
    throwIfAborted(opts.signal);
    if (opts.ifAbsent && this.objects.has(key)) throw new ObjectExists(key);
    this.objects.set(key, stored);
    this.times.set(key, Date.now());
  }

  async head(key: string, opts: OpOptions = {}): Promise<ObjectInfo | undefined> {
    throwIfAborted(opts.signal);
    const data = this.objects.get(key);
    return data ? { key, size: data.length, modified: this.times.get(key) } : undefined;
  }

  async *list(prefix: string, opts: OpOptions = {}): AsyncIterable<ObjectInfo> {
    const base = prefix.replace(/\/$/, "");
    const keys = [...this.objects.keys()].filter((k) => base === "" || k.startsWith(`${base}/`)).sort();
    for (const key of keys) {
      throwIfAborted(opts.signal);
      const data = this.objects.get(key);
      if (data) yield { key, size: data.length, modified: this.times.get(key) };
    }
  }

  async delete(key: string, opts: OpOptions = {}): Promise<void> {
    throwIfAborted(opts.signal);
    this.objects.delete(key);
    this.times.delete(key);
  }
}
