import { isIP } from "node:net";
import { stat } from "node:fs/promises";
import { Readable } from "node:stream";
import type { S3Client } from "@aws-sdk/client-s3";
import { RepoError } from "../repo/errors.js";
import { TEMP_INFIX } from "./local.js";
import { describeS3Error, type S3ErrorContext } from "./s3-errors.js";
import { bodyBuffer, bodyChunks, collectRange, ObjectExists, ObjectNotFound, TargetError, throwIfAborted, type ObjectInfo, type OpOptions, type PutBody, type PutOptions, type PutStream, type Target } from "./target.js";

type Sdk = typeof import("@aws-sdk/client-s3");

export interface S3TargetOptions {
  bucket: string;
  /** Objects live under `<prefix>/`; "" for the bucket's root. */
  prefix: string;
  env?: NodeJS.ProcessEnv;
  /** Multipart part size for a put of a stream (lib-storage); S3's minimum is 5 MiB. */
  partSize?: number;
  /** A stream larger than this is a multipart upload; up to it, one PUT (S3 takes up to 5 GiB in one). */
  multipartThreshold?: number;
  /** Parts uploaded at once per file. */
  queueSize?: number;
}

const DEFAULT_REGION = "us-east-1";
const quiet = (): void => undefined;
const SILENT_LOGGER = { trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet };
/**
 * Streams up to this size go up in one PUT: a pack (16 MiB by default, at most 1 GiB) is one
 * request, as restic sends it, rather than a start, parts and a completion.
 */
export const S3_MULTIPART_THRESHOLD = 64 * 1024 * 1024;

/** The endpoint from the environment (the SDK's own names), and whether it needs path-style URLs. */
export function s3Endpoint(env: NodeJS.ProcessEnv): { endpoint?: string; host: string; pathStyle: boolean } {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  let host = "";
  if (endpoint) {
    try {
      host = new URL(endpoint).host;
    } catch {
      throw new RepoError(`${env.AWS_ENDPOINT_URL_S3 ? "AWS_ENDPOINT_URL_S3" : "AWS_ENDPOINT_URL"} is not a URL: "${endpoint}"`, "usage");
    }
  }
  const hostname = host.replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
  // A server on an IP or localhost has no DNS for <bucket>.<host>: virtual-host style cannot work.
  const automatic = !!endpoint && (isIP(hostname) !== 0 || hostname === "localhost" || hostname.endsWith(".localhost"));
  const forced = env.PI_GUARD_S3_PATH_STYLE;
  const pathStyle = forced === undefined || forced === "" ? automatic : forced === "1" || forced.toLowerCase() === "true";
  return { endpoint, host, pathStyle };
}

/**
 * A repository under a prefix of an S3 bucket (AWS, MinIO, R2, B2, ...), through the AWS SDK.
 * Credentials come from the SDK's standard chain and are never stored by pi-guard. Retries are
 * left to RetryTarget (the SDK makes one attempt per call), which waits out an outage for its
 * budget and says so. The SDK loads on first use: commands that never touch S3 do not pay for it.
 */
export class S3Target implements Target {
  readonly location: string;
  readonly localPath = undefined;
  private readonly bucket: string;
  private readonly root: string;
  private readonly env: NodeJS.ProcessEnv;
  private readonly endpoint: ReturnType<typeof s3Endpoint>;
  private readonly partSize: number;
  private readonly queueSize: number;
  private readonly multipartThreshold: number;
  private sdk?: Promise<{ sdk: Sdk; client: S3Client; region: string }>;
  private bucketSeen = false;
  /** false once the server said it cannot do conditional puts; then ifAbsent is head-then-put. */
  conditionalPuts: boolean | undefined;

  constructor(opts: S3TargetOptions) {
    this.bucket = opts.bucket;
    this.root = opts.prefix ? `${opts.prefix}/` : "";
    this.location = `s3://${opts.bucket}${opts.prefix ? `/${opts.prefix}` : ""}`;
    this.env = opts.env ?? process.env;
    this.endpoint = s3Endpoint(this.env);
    this.partSize = opts.partSize ?? 5 * 1024 * 1024;
    this.queueSize = opts.queueSize ?? 4;
    this.multipartThreshold = Math.max(opts.multipartThreshold ?? S3_MULTIPART_THRESHOLD, this.partSize);
  }

  private connect(): Promise<{ sdk: Sdk; client: S3Client; region: string }> {
    this.sdk ??= (async () => {
      const sdk = await import("@aws-sdk/client-s3");
      const region = await resolveRegion(sdk, this.env);
      // The environment's keys come first in the SDK's chain too; they are read from `env` (not
      // only process.env) so a library caller's environment is the one used. Otherwise the chain.
      const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_SESSION_TOKEN: sessionToken } = this.env;
      const client = new sdk.S3Client({
        region,
        ...(accessKeyId && secretAccessKey ? { credentials: { accessKeyId, secretAccessKey, sessionToken } } : {}),
        endpoint: this.endpoint.endpoint,
        forcePathStyle: this.endpoint.pathStyle,
        maxAttempts: 1,
        // The SDK warns on the console when a streamed put fails ("non-retryable streaming
        // request"); the failure itself is thrown, described in one line, and retried by RetryTarget.
        logger: SILENT_LOGGER,
        // Short connect timeout: a try at a server that is down fails in seconds, and RetryTarget
        // decides whether to try again.
        requestHandler: { connectionTimeout: 3000, requestTimeout: 120_000 },
        // Objects carry their own SHA-256 names; the SDK's default trailing checksums break
        // S3-compatible servers that do not know them (aws-chunked uploads).
        requestChecksumCalculation: "WHEN_REQUIRED",
        responseChecksumValidation: "WHEN_REQUIRED",
      });
      return { sdk, client, region };
    })();
    return this.sdk;
  }

  private k(key: string): string {
    return this.root + key;
  }

  private async fail(err: unknown, op: string, key?: string, signal?: AbortSignal): Promise<Error> {
    if (signal?.aborted) return signal.reason as Error;
    const region = await this.sdk?.then((s) => s.region).catch(() => undefined);
    const ctx: S3ErrorContext = { bucket: this.bucket, location: this.location, endpointHost: this.endpoint.host, region, profile: this.env.AWS_PROFILE || undefined, op, key };
    return describeS3Error(err, ctx);
  }

  /** HEAD answers carry no error code; a listing's do, so it names what a bare 403 or 400 meant. */
  private async diagnose(err: unknown, op: string, key?: string, signal?: AbortSignal): Promise<Error> {
    if (signal?.aborted) return signal.reason as Error;
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === 403 || status === 400 || status === 301) {
      const { sdk, client } = await this.connect();
      try {
        await client.send(new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.root, MaxKeys: 1 }));
      } catch (listErr) {
        return this.fail(listErr, "list", this.root.replace(/\/$/, ""));
      }
    }
    return this.fail(err, op, key);
  }

  async get(key: string, opts: OpOptions = {}): Promise<Buffer> {
    const { sdk, client } = await this.connect();
    try {
      const res = await client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.k(key) }), { abortSignal: opts.signal });
      return await bodyBytes(res.Body);
    } catch (err) {
      throw await this.fail(err, "get", key, opts.signal);
    }
  }

  /** One ranged GET, gathered into one buffer of the asked size. */
  getRange(key: string, offset: number, length: number, opts: OpOptions = {}): Promise<Buffer> {
    return collectRange(this.readRange(key, offset, length, opts), length, key);
  }

  /**
   * One ranged GET whose body is handed on chunk by chunk as the socket delivers it. Breaking out
   * early destroys the body (the connection is not reused). A server that ignores Range sends the
   * whole object: the asked part is cut out of it; a ranged answer longer than asked is an error.
   */
  async *readRange(key: string, offset: number, length: number, opts: OpOptions = {}): AsyncIterable<Uint8Array> {
    throwIfAborted(opts.signal);
    if (length <= 0) {
      if (!(await this.head(key, opts))) throw new ObjectNotFound(key);
      return;
    }
    const { sdk, client } = await this.connect();
    let res;
    try {
      res = await client.send(
        new sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.k(key), Range: `bytes=${offset}-${offset + length - 1}` }),
        { abortSignal: opts.signal },
      );
    } catch (err) {
      if ((err as { name?: string }).name === "InvalidRange") return;
      throw await this.fail(err, "get", key, opts.signal);
    }
    const body = res.Body as (AsyncIterable<Uint8Array> & { destroy?: () => void }) | undefined;
    if (!body || typeof body[Symbol.asyncIterator] !== "function") return;
    const ranged = !!res.ContentRange;
    let skip = ranged ? 0 : offset;
    let left = length;
    try {
      for await (const chunk of body) {
        let c = chunk;
        if (skip > 0) {
          if (c.length <= skip) {
            skip -= c.length;
            continue;
          }
          c = c.subarray(skip);
          skip = 0;
        }
        if (c.length > left) {
          if (ranged) throw new RepoError(`the server sent more than the ${length} bytes asked for of ${key}`, "corrupt");
          c = c.subarray(0, left);
        }
        left -= c.length;
        if (c.length > 0) yield c;
        if (left === 0 && !ranged) return;
      }
    } catch (err) {
      if (err instanceof RepoError) throw err;
      throw await this.fail(err, "get", key, opts.signal);
    } finally {
      // Stopped before the end (an error, or the caller broke out): the rest is never read, so
      // the connection cannot be reused. A body read to its end keeps its connection alive.
      if (left > 0) body.destroy?.();
    }
  }

  /**
   * One PUT for a buffer and for a stream up to `multipartThreshold`; a larger stream is a
   * multipart upload (lib-storage). A finished file of the stated size (a pack's staging file) is
   * sent as it is read, never gathered into a second buffer, its size checked as it goes: a read
   * that fails aborts the request, and S3 stores nothing of a request cut short. Any other stream
   * is gathered first, so its size is checked before anything is sent (a server such as s3rver
   * keeps what it got of a cut request). A PUT that succeeded is not checked with a HEAD: S3 answers
   * 200 only once it has stored the whole body of the stated length, and with `sha256` (a
   * content-addressed object: its name) it checks the bytes too (x-amz-checksum-sha256) and stores
   * nothing that differs (BadDigest, retried); that costs no hashing here, the name is the hash.
   */
  async put(key: string, data: PutBody, opts: PutOptions = {}): Promise<void> {
    if (!Buffer.isBuffer(data) && data.size > this.multipartThreshold) return this.putMultipart(key, data, opts);
    throwIfAborted(opts.signal);
    if (!Buffer.isBuffer(data) && !(await isWholeFile(data))) data = await bodyBuffer(data, key, opts.signal);
    const { sdk, client } = await this.connect();
    if (opts.ifAbsent && (await this.head(key, opts))) throw new ObjectExists(key);
    const size = Buffer.isBuffer(data) ? data.length : data.size;
    const checksum = opts.sha256 && /^[0-9a-f]{64}$/.test(opts.sha256) ? Buffer.from(opts.sha256, "hex").toString("base64") : undefined;
    let body: StreamedBody | undefined;
    const send = async (conditional: boolean) => {
      // A stream is opened again for each send (a retried put reads its bytes from the start).
      body = Buffer.isBuffer(data) ? undefined : streamedBody(data, key, opts.signal);
      try {
        return await client.send(
          new sdk.PutObjectCommand({
            Bucket: this.bucket,
            Key: this.k(key),
            Body: body ? body.stream : (data as Buffer),
            ContentLength: size,
            ...(checksum ? { ChecksumSHA256: checksum } : {}),
            ...(conditional ? { IfNoneMatch: "*" } : {}),
          }),
          { abortSignal: body ? body.signal : opts.signal },
        );
      } finally {
        body?.stream.destroy();
      }
    };
    try {
      await send(!!opts.ifAbsent && this.conditionalPuts !== false);
      if (opts.ifAbsent) this.conditionalPuts ??= true;
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      // The body's own failure (it ran short or long, or its file could not be read) as it is.
      if (body?.error !== undefined) throw body.error;
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (opts.ifAbsent && (e.name === "PreconditionFailed" || e.$metadata?.httpStatusCode === 412)) throw new ObjectExists(key);
      if (opts.ifAbsent && (e.name === "NotImplemented" || e.$metadata?.httpStatusCode === 501)) {
        // The server cannot put conditionally (older MinIO, B2): the head above is all the
        // protection there is against a racing writer.
        this.conditionalPuts = false;
        try {
          await send(false);
          return;
        } catch (again) {
          if (body?.error !== undefined) throw body.error;
          throw await this.fail(again, "put", key, opts.signal);
        }
      }
      throw await this.fail(err, "put", key, opts.signal);
    }
  }

  /** A stream above multipartThreshold, in parts of partSize; the size stored is checked afterwards. */
  private async putMultipart(key: string, data: PutStream, opts: PutOptions): Promise<void> {
    throwIfAborted(opts.signal);
    const { client } = await this.connect();
    if (opts.ifAbsent && (await this.head(key, opts))) throw new ObjectExists(key);
    const { Upload } = await import("@aws-sdk/lib-storage");
    const body = streamedBody(data, key, opts.signal);
    const upload = new Upload({
      client,
      params: { Bucket: this.bucket, Key: this.k(key), Body: body.stream, ContentLength: data.size },
      partSize: this.partSize,
      queueSize: this.queueSize,
      leavePartsOnError: false,
    });
    const onAbort = () => void upload.abort().catch(() => undefined);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      // An abort that came while the SDK loaded fired no event.
      if (opts.signal?.aborted) onAbort();
      await upload.done();
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (body.error !== undefined) throw body.error;
      throw await this.fail(err, "put", key, opts.signal);
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
      body.stream.destroy();
    }
    const stored = await this.head(key, opts);
    if (stored?.size !== data.size) {
      throw new TargetError(`S3 stored ${stored ? `${stored.size} of ${data.size}` : `none of the ${data.size}`} bytes of ${key} in ${this.location}`, "io", true);
    }
  }

  async head(key: string, opts: OpOptions = {}): Promise<ObjectInfo | undefined> {
    const { sdk, client } = await this.connect();
    try {
      const res = await client.send(new sdk.HeadObjectCommand({ Bucket: this.bucket, Key: this.k(key) }), { abortSignal: opts.signal });
      this.bucketSeen = true;
      return { key, size: Number(res.ContentLength ?? 0), modified: res.LastModified?.getTime() };
    } catch (err) {
      const described = await this.diagnose(err, "head", key, opts.signal);
      if (!(described instanceof ObjectNotFound)) throw described;
    }
    // A HEAD 404 does not say whether the object or the whole bucket is missing; ask once.
    if (!this.bucketSeen) {
      try {
        await client.send(new sdk.HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: opts.signal });
        this.bucketSeen = true;
      } catch (err) {
        throw await this.diagnose(err, "head bucket", undefined, opts.signal);
      }
    }
    return undefined;
  }

  async *list(prefix: string, opts: OpOptions = {}): AsyncIterable<ObjectInfo> {
    const { sdk, client } = await this.connect();
    const base = prefix.replace(/\/$/, "");
    const full = this.root + (base ? `${base}/` : "");
    let token: string | undefined;
    do {
      let page;
      try {
        page = await client.send(new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: full, ContinuationToken: token }), { abortSignal: opts.signal });
      } catch (err) {
        throw await this.fail(err, "list", base, opts.signal);
      }
      this.bucketSeen = true;
      for (const obj of page.Contents ?? []) {
        if (!obj.Key || obj.Key.endsWith("/")) continue;
        const key = obj.Key.slice(this.root.length);
        if (key.includes(TEMP_INFIX)) continue;
        yield { key, size: Number(obj.Size ?? 0), modified: obj.LastModified?.getTime() };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async delete(key: string, opts: OpOptions = {}): Promise<void> {
    const { sdk, client } = await this.connect();
    try {
      await client.send(new sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: this.k(key) }), { abortSignal: opts.signal });
    } catch (err) {
      const described = await this.fail(err, "delete", key, opts.signal);
      if (!(described instanceof ObjectNotFound)) throw described;
    }
  }
}

interface StreamedBody {
  stream: Readable;
  /** Aborted when the body fails (so the request does not wait for bytes that never come), or with `signal`. */
  signal: AbortSignal;
  /** Why the body failed, once it has. */
  error?: unknown;
}

/** A put body as a stream checked against its size (bodyChunks); its failure aborts the request. */
function streamedBody(data: PutStream, key: string, signal?: AbortSignal): StreamedBody {
  const failed = new AbortController();
  const out: StreamedBody = { stream: undefined as unknown as Readable, signal: signal ? AbortSignal.any([signal, failed.signal]) : failed.signal };
  const chunks = async function* () {
    try {
      yield* bodyChunks(data, key, signal);
    } catch (err) {
      out.error = err;
      failed.abort(err);
      throw err;
    }
  };
  out.stream = Readable.from(chunks(), { objectMode: false });
  // The failure is kept in `error` and aborts the request; the SDK pipes the stream without a listener.
  out.stream.on("error", () => undefined);
  return out;
}

/** A body that is a finished file on this machine holding exactly its stated size. */
async function isWholeFile(data: PutStream): Promise<boolean> {
  if (!data.movableFile) return false;
  const st = await stat(data.movableFile).catch(() => undefined);
  return st?.isFile() === true && st.size === data.size;
}

async function bodyBytes(body: unknown): Promise<Buffer> {
  const b = body as { transformToByteArray?: () => Promise<Uint8Array> } | undefined;
  if (!b?.transformToByteArray) return Buffer.alloc(0);
  const bytes = await b.transformToByteArray();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The SDK's own region chain (AWS_REGION, the profile's region, ...); us-east-1 when it has none. */
async function resolveRegion(sdk: Sdk, env: NodeJS.ProcessEnv): Promise<string> {
  if (env.AWS_REGION) return env.AWS_REGION;
  if (env.AWS_DEFAULT_REGION) return env.AWS_DEFAULT_REGION;
  const probe = new sdk.S3Client({});
  try {
    return await probe.config.region();
  } catch {
    return DEFAULT_REGION;
  } finally {
    probe.destroy();
  }
}
