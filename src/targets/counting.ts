import type { ObjectInfo, OpOptions, PutBody, PutOptions, Target } from "./target.js";
import { TargetWrapper } from "./wrap.js";

/** Requests sent to a target, by the classes storage providers bill by. */
export interface RequestCounts {
  /** PUT-like: put, each part of a multipart upload (plus its start and completion), delete. */
  puts: number;
  /** GET-like: get, ranged get, head. */
  gets: number;
  /** Listings, one per page of up to LIST_PAGE keys. */
  lists: number;
}

/** A put of a stream above `threshold` bytes is a multipart upload in parts of `partSize`. */
export interface MultipartSplit {
  partSize: number;
  threshold: number;
}

/** S3's ListObjectsV2 page size. */
const LIST_PAGE = 1000;

/**
 * Counts the requests that reach the storage, so the watcher can report PUTs per day. It wraps
 * the bare storage target (inside the retry and limit wrappers), so a retried request counts each
 * time it is sent. One call of the Target interface is one request, except a put of a stream
 * above the multipart threshold (an S3 multipart upload: one request per part, plus two) and a listing (one
 * per page). Checks the S3 target makes on its own (the HEAD of a put that must not overwrite, the
 * size check after a multipart upload) are not seen here.
 */
export class CountingTarget extends TargetWrapper {
  constructor(
    inner: Target,
    /** How the storage splits a big put of a stream into parts (S3), if it does. */
    private readonly multipart?: MultipartSplit,
    /** Where to add the counts: pass one object to count across several opened targets. */
    readonly counts: RequestCounts = { puts: 0, gets: 0, lists: 0 },
  ) {
    super(inner);
    const names = inner.listNames?.bind(inner);
    if (names) {
      this.listNames = (prefix: string, opts?: OpOptions) => {
        this.counts.lists++;
        return names(prefix, opts);
      };
    }
  }

  listNames?: (prefix: string, opts?: OpOptions) => Promise<string[]>;

  override get(key: string, opts?: OpOptions): Promise<Buffer> {
    this.counts.gets++;
    return super.get(key, opts);
  }

  override getRange(key: string, offset: number, length: number, opts?: OpOptions): Promise<Buffer> {
    this.counts.gets++;
    return super.getRange(key, offset, length, opts);
  }

  override async *readRange(key: string, offset: number, length: number, opts?: OpOptions): AsyncIterable<Uint8Array> {
    this.counts.gets++;
    yield* super.readRange(key, offset, length, opts);
  }

  override head(key: string, opts?: OpOptions): Promise<ObjectInfo | undefined> {
    this.counts.gets++;
    return super.head(key, opts);
  }

  override put(key: string, data: PutBody, opts?: PutOptions): Promise<void> {
    const m = this.multipart;
    this.counts.puts += m && !Buffer.isBuffer(data) && data.size > m.threshold ? Math.ceil(data.size / m.partSize) + 2 : 1;
    return super.put(key, data, opts);
  }

  override delete(key: string, opts?: OpOptions): Promise<void> {
    this.counts.puts++;
    return super.delete(key, opts);
  }

  override async *list(prefix: string, opts?: OpOptions): AsyncIterable<ObjectInfo> {
    this.counts.lists++;
    let n = 0;
    for await (const info of super.list(prefix, opts)) {
      if (++n > LIST_PAGE && (n - 1) % LIST_PAGE === 0) this.counts.lists++;
      yield info;
    }
  }
}
