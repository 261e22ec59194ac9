// A small HTTP proxy in front of s3rver that counts every request each tool makes (server side,
// so restic's requests count the same way as pi-guard's), and decodes `aws-chunked` uploads.
//
// Why the decoding: restic 0.14 (minio-go) signs PUTs over plain http with streaming SigV4
// (`x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD`, body in `aws-chunked` framing).
// s3rver 3.7.1 does not understand that framing and stores the chunk headers as object bytes
// (`1b7;chunk-signature=…\r\n{"created":…`), so `restic init` succeeds and the next command fails
// with "Unmarshal: invalid character …". `-o s3.bucket-lookup=path` and region settings do not
// change the signing; SigV2 (via ~/.mc/config.json) is rejected by s3rver ("signature does not
// match"). The proxy strips the framing (s3rver does not verify V4 signatures) and forwards the
// plain body; nothing else is changed.
import http from "node:http";
import type { AddressInfo } from "node:net";

export type RequestKind = "GET" | "GET range" | "LIST" | "PUT" | "HEAD" | "DELETE" | "POST";

export interface Counts {
  total: number;
  byKind: Partial<Record<RequestKind, number>>;
  /** Response body bytes sent to the client (what a download costs). */
  bytesDown: number;
  /** Request body bytes received from the client, after decoding. */
  bytesUp: number;
}

export interface CountingProxy {
  port: number;
  endpoint: string;
  /** Counts since the proxy started, per bucket prefix (the first path segment after the bucket). */
  snapshot(): Map<string, Counts>;
  close(): Promise<void>;
}

const emptyCounts = (): Counts => ({ total: 0, byKind: {}, bytesDown: 0, bytesUp: 0 });

/** `a - b` per kind, for the requests of one step. */
export function diffCounts(a: Counts | undefined, b: Counts | undefined): Counts {
  const out = emptyCounts();
  const x = a ?? emptyCounts();
  const y = b ?? emptyCounts();
  out.total = x.total - y.total;
  out.bytesDown = x.bytesDown - y.bytesDown;
  out.bytesUp = x.bytesUp - y.bytesUp;
  for (const k of Object.keys(x.byKind) as RequestKind[]) {
    const n = (x.byKind[k] ?? 0) - (y.byKind[k] ?? 0);
    if (n) out.byKind[k] = n;
  }
  return out;
}

function kindOf(req: http.IncomingMessage, url: URL, key: string): RequestKind {
  const m = req.method ?? "GET";
  if (m === "GET") {
    if (key === "" || url.searchParams.has("list-type") || url.searchParams.has("prefix") || url.searchParams.has("delimiter")) return "LIST";
    return req.headers.range ? "GET range" : "GET";
  }
  return (["PUT", "HEAD", "DELETE", "POST"].includes(m) ? m : "GET") as RequestKind;
}

/** Decode an `aws-chunked` body: `<hex size>;chunk-signature=…\r\n<bytes>\r\n` … `0;…\r\n\r\n`. */
export function decodeAwsChunked(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let o = 0;
  for (;;) {
    const eol = body.indexOf("\r\n", o);
    if (eol < 0) throw new Error("aws-chunked body: chunk header without end of line");
    const size = parseInt(body.subarray(o, eol).toString("latin1").split(";")[0], 16);
    if (!Number.isInteger(size) || size < 0) throw new Error("aws-chunked body: bad chunk size");
    if (size === 0) break;
    const start = eol + 2;
    if (start + size + 2 > body.length) throw new Error("aws-chunked body: chunk runs past the end");
    parts.push(body.subarray(start, start + size));
    o = start + size + 2;
  }
  return Buffer.concat(parts);
}

/**
 * Counts are kept per "repository": the first path segment after the bucket (`/bucket/restic/…`
 * → `restic`), so each tool's requests are told apart with both in one bucket.
 */
export async function startCountingProxy(upstreamPort: number, opts: { onRequest?: (line: string) => void } = {}): Promise<CountingProxy> {
  const counts = new Map<string, Counts>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const segs = url.pathname.split("/").filter(Boolean);
    const key = segs.slice(1).join("/");
    const repo = segs[1] ?? url.searchParams.get("prefix")?.split("/")[0] ?? "";
    const c = counts.get(repo) ?? emptyCounts();
    counts.set(repo, c);
    c.total++;
    const kind = kindOf(req, url, key);
    c.byKind[kind] = (c.byKind[kind] ?? 0) + 1;
    opts.onRequest?.(`${kind} ${url.pathname}${url.search}`);
    const chunks: Buffer[] = [];
    req.on("data", (d: Buffer) => chunks.push(d));
    req.on("end", () => {
      let body: Buffer = Buffer.concat(chunks);
      const headers = { ...req.headers };
      const sha = String(headers["x-amz-content-sha256"] ?? "");
      if (sha.startsWith("STREAMING-")) {
        try {
          body = decodeAwsChunked(body);
        } catch (err) {
          res.writeHead(400).end(String((err as Error).message));
          return;
        }
        headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD";
        delete headers["x-amz-decoded-content-length"];
        delete headers["x-amz-trailer"];
        const enc = String(headers["content-encoding"] ?? "")
          .split(",")
          .map((e) => e.trim())
          .filter((e) => e && e !== "aws-chunked");
        if (enc.length) headers["content-encoding"] = enc.join(",");
        else delete headers["content-encoding"];
      }
      c.bytesUp += body.length;
      delete headers["transfer-encoding"];
      if (body.length || req.method === "PUT" || req.method === "POST") headers["content-length"] = String(body.length);
      const up = http.request({ host: "127.0.0.1", port: upstreamPort, method: req.method, path: req.url, headers }, (ures) => {
        res.writeHead(ures.statusCode ?? 502, ures.headers);
        ures.on("data", (d: Buffer) => (c.bytesDown += d.length));
        ures.pipe(res);
      });
      up.on("error", (err) => {
        if (!res.headersSent) res.writeHead(502);
        res.end(String(err.message));
      });
      up.end(body);
    });
  });
  // Both tools keep connections alive; the default 5 s keep-alive is fine, headers must not time out.
  server.headersTimeout = 0;
  server.requestTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    endpoint: `http://127.0.0.1:${port}`,
    snapshot: () => new Map([...counts].map(([k, v]) => [k, { ...v, byKind: { ...v.byKind } }])),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
