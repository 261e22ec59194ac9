import type { ObjectInfo, OpOptions, PutBody, PutOptions, Target, TempScope } from "./target.js";

/** Forwards everything to `inner`; wrappers override what they change. */
export class TargetWrapper implements Target {
  readonly cleanTemp?: (olderThanMs: number, under?: string[], scope?: TempScope) => Promise<number>;

  constructor(readonly inner: Target) {
    if (inner.cleanTemp) this.cleanTemp = (olderThanMs, under, scope) => this.run(() => inner.cleanTemp!(olderThanMs, under, scope));
  }

  get location(): string {
    return this.inner.location;
  }

  get localPath(): string | undefined {
    return this.inner.localPath;
  }

  /** Every single-request operation goes through here. */
  protected run<T>(op: () => Promise<T>, _signal?: AbortSignal): Promise<T> {
    return op();
  }

  get(key: string, opts?: OpOptions): Promise<Buffer> {
    return this.run(() => this.inner.get(key, opts), opts?.signal);
  }

  getRange(key: string, offset: number, length: number, opts?: OpOptions): Promise<Buffer> {
    return this.run(() => this.inner.getRange(key, offset, length, opts), opts?.signal);
  }

  /** Streams are forwarded as they are; a wrapper that holds a slot or retries overrides this. */
  readRange(key: string, offset: number, length: number, opts?: OpOptions): AsyncIterable<Uint8Array> {
    return this.inner.readRange(key, offset, length, opts);
  }

  /** A retried put opens a stream body again from its first byte. */
  put(key: string, data: PutBody, opts?: PutOptions): Promise<void> {
    return this.run(() => this.inner.put(key, data, opts), opts?.signal);
  }

  head(key: string, opts?: OpOptions): Promise<ObjectInfo | undefined> {
    return this.run(() => this.inner.head(key, opts), opts?.signal);
  }

  list(prefix: string, opts?: OpOptions): AsyncIterable<ObjectInfo> {
    return this.inner.list(prefix, opts);
  }

  delete(key: string, opts?: OpOptions): Promise<void> {
    return this.run(() => this.inner.delete(key, opts), opts?.signal);
  }
}
