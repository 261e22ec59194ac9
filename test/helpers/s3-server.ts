// A real S3 server (s3rver from npm) on 127.0.0.1 for tests, in a child process: the AWS SDK and
// the AWS CLI speak the real S3 HTTP protocol to it. s3rver knows one account, S3RVER/S3RVER; it
// rejects an unknown access key but does not verify V4 signatures (a wrong secret passes).

import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), "s3rver-child.mjs");

export const S3RVER_KEY = "S3RVER";

export interface S3Server {
  port: number;
  endpoint: string;
  dir: string;
  bucket: string;
  child: ChildProcess;
  /** Environment for a pi-guard (or aws) process talking to this server. */
  env: Record<string, string>;
  /** Resolves at the next multipart part upload the server receives. */
  nextPart(): Promise<void>;
  /** Resolves when the next pack upload begins: a one-request PUT under data/, or a multipart part. */
  nextPackUpload(): Promise<void>;
  /** Multipart parts and one-request PUTs under data/ this server has received so far. */
  uploads(): { parts: number; singlePuts: number };
  stop(): Promise<void>;
}

export interface S3ServerOptions {
  /** The first listing that holds this key still shows it, but the key is deleted before the answer goes out. */
  vanishAfterList?: string;
}

export async function startS3Server(dir: string, bucket: string, port = 0, opts: S3ServerOptions = {}): Promise<S3Server> {
  const env = opts.vanishAfterList ? { ...process.env, S3RVER_VANISH_AFTER_LIST: opts.vanishAfterList } : process.env;
  const child = spawn(process.execPath, [CHILD, dir, String(port), bucket], { stdio: ["ignore", "pipe", "pipe"], env });
  let partWaiters: (() => void)[] = [];
  let packWaiters: (() => void)[] = [];
  const seen = { parts: 0, singlePuts: 0 };
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const actualPort = await new Promise<number>((resolve, reject) => {
    let buf = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      buf += d;
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const m = /^LISTENING (\d+)$/.exec(line);
        if (m) resolve(Number(m[1]));
        if (line === "PART") seen.parts++;
        if (line === "PACK") seen.singlePuts++;
        if (line === "PART" || line === "PACK") {
          const waiters = line === "PART" ? [...partWaiters, ...packWaiters] : packWaiters;
          if (line === "PART") partWaiters = [];
          packWaiters = [];
          for (const w of waiters) w();
        }
      }
    });
    child.on("exit", (code) => reject(new Error(`s3rver exited ${code} before listening: ${stderr}`)));
  });
  let stopping = false;
  // A server that dies under a test turns every later request into ECONNREFUSED; say why it died.
  child.on("exit", (code, signal) => {
    if (!stopping) process.stderr.write(`s3rver on port ${actualPort} exited unexpectedly (code ${code}, signal ${signal}):\n${stderr}\n`);
  });
  const endpoint = `http://127.0.0.1:${actualPort}`;
  return {
    port: actualPort,
    endpoint,
    dir,
    bucket,
    child,
    env: { AWS_ACCESS_KEY_ID: S3RVER_KEY, AWS_SECRET_ACCESS_KEY: S3RVER_KEY, AWS_ENDPOINT_URL: endpoint, AWS_REGION: "us-east-1" },
    nextPart: () => new Promise<void>((resolve) => partWaiters.push(resolve)),
    nextPackUpload: () => new Promise<void>((resolve) => packWaiters.push(resolve)),
    uploads: () => ({ ...seen }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        stopping = true;
        child.once("exit", () => resolve());
        child.kill("SIGKILL");
      }),
  };
}
