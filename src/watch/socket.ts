/**
 * `pi-guard snapshot` handed to the running watcher over a unix socket in the state dir
 * (`watcherFiles(...).socket`, mode 0600 in the 0700 state dir): the watcher has the repository
 * open and its index loaded, so the CLI neither unlocks nor loads anything.
 *
 * Protocol, one JSON object per line, each way:
 * - the CLI sends `{"v":1,"op":"snapshot","fingerprint":…}` (at most MAX_REQUEST_BYTES);
 * - the watcher answers `{"declined":"why"}` when it cannot take the snapshot exactly as a direct
 *   run would (another repository, other roots or filter, mirrors, a watcher failing or stopping),
 *   or `{"accepted":true}`, then `{"waiting":true}` every KEEPALIVE_MS, then `{"result":…}` (an
 *   EngineBackupResult) or `{"failed":"why"}`.
 * Whatever else happens (no socket, a stale one, a dead or silent watcher, a malformed or huge
 * line) the CLI runs the snapshot itself: the hand-off is only ever a faster way to the same result.
 *
 * The request joins the next snapshot that begins after it (see Watcher.handOff): a snapshot
 * already under way may have read the files before the caller's last write.
 */
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import net from "node:net";
import type { Config } from "../config/config.js";
import type { EngineBackupResult } from "../engine/types.js";

const MAX_REQUEST_BYTES = 4096;
/** A result names every skipped or special path: bounded, but generously. */
const MAX_REPLY_BYTES = 8 * 1024 * 1024;
const REQUEST_READ_MS = 2000;
const KEEPALIVE_MS = 1000;
/** The CLI gives up on a watcher that says nothing for this long (stopped with SIGSTOP, wedged). */
const SILENCE_MS = 10_000;
const CONNECT_MS = 1000;

/** What the watcher answers a request with (Watcher.handOff). */
export type HandOffAnswer = { declined: string } | { wait: Promise<{ result: EngineBackupResult } | { failed: string }> };

/**
 * The facts of a config that decide what a snapshot takes and how it is judged: the CLI and the
 * watcher must agree on every one of them for the watcher's snapshot to be the CLI's.
 * `repo` is the repository the watcher has open (a reload does not change it).
 */
export function snapshotFingerprint(config: Config, repo: string, host: string): string {
  const facts = {
    repo,
    host,
    agentDir: config.agentDir,
    roots: config.roots,
    rootAgents: config.rootAgents,
    filter: config.filter,
    snapshot: config.snapshot,
    suspectLoss: config.watch.suspectLoss,
    agents: config.agents.filter((a) => a.guarded),
    mirrors: config.mirrors,
  };
  return createHash("sha256").update(JSON.stringify(facts)).digest("hex");
}

/** The watcher's side: listen on `file` and hand each well-formed request to `onRequest`. */
export class SnapshotSocket {
  private server: net.Server | undefined;
  private readonly clients = new Set<net.Socket>();

  constructor(
    private readonly file: string,
    private readonly onRequest: (fingerprint: string) => HandOffAnswer,
    private readonly onError: (message: string) => void,
  ) {}

  async start(): Promise<void> {
    // The caller holds the watcher lock: a socket file here is a crashed watcher's.
    await fs.rm(this.file, { force: true });
    const server = net.createServer((c) => this.serve(c));
    server.on("error", (err) => this.onError(`the snapshot socket ${this.file} failed: ${err.message}; \`pi-guard snapshot\` runs on its own`));
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(this.file, () => {
          server.off("error", reject);
          resolve();
        });
      });
      await fs.chmod(this.file, 0o600);
    } catch (err) {
      server.close();
      this.onError(`cannot listen on ${this.file}: ${(err as Error).message}; \`pi-guard snapshot\` runs on its own`);
      return;
    }
    this.server = server;
  }

  private serve(c: net.Socket): void {
    this.clients.add(c);
    c.on("close", () => this.clients.delete(c));
    c.on("error", () => undefined);
    const timer = setTimeout(() => c.destroy(), REQUEST_READ_MS);
    let buf = "";
    const onData = (d: Buffer) => {
      buf += d.toString("utf8");
      const nl = buf.indexOf("\n");
      if (nl < 0) {
        if (buf.length > MAX_REQUEST_BYTES) c.destroy();
        return;
      }
      clearTimeout(timer);
      c.off("data", onData);
      this.answer(c, buf.slice(0, nl));
    };
    c.on("data", onData);
  }

  private answer(c: net.Socket, line: string): void {
    const send = (v: unknown) => {
      if (!c.destroyed) c.write(JSON.stringify(v) + "\n");
    };
    let req: { v?: unknown; op?: unknown; fingerprint?: unknown } | undefined;
    try {
      req = JSON.parse(line);
    } catch {
      // answered below
    }
    if (!req || typeof req !== "object" || req.v !== 1 || req.op !== "snapshot" || typeof req.fingerprint !== "string") {
      send({ declined: "malformed request" });
      return void c.end();
    }
    const answer = this.onRequest(req.fingerprint);
    if ("declined" in answer) {
      send(answer);
      return void c.end();
    }
    send({ accepted: true });
    const keepalive = setInterval(() => send({ waiting: true }), KEEPALIVE_MS);
    answer.wait
      .then(send, (err: unknown) => send({ failed: (err as Error)?.message ?? String(err) }))
      .finally(() => {
        clearInterval(keepalive);
        c.end();
      });
  }

  close(): void {
    this.server?.close();
    this.server = undefined;
    for (const c of this.clients) c.destroy();
  }
}

/** Why the hand-off did not happen (the CLI then runs the snapshot itself), or the watcher's result. */
export type HandOffOutcome = { result: EngineBackupResult } | { direct: string };

/**
 * The CLI's side: ask the watcher listening on `file` for a snapshot and wait for its result.
 * Never throws: every way it can fail is a reason to run the snapshot directly.
 */
export async function askWatcher(file: string, fingerprint: string): Promise<HandOffOutcome> {
  const st = await fs.lstat(file).catch(() => undefined);
  if (!st) return { direct: "no watcher socket" };
  if (!st.isSocket() || (process.getuid && st.uid !== process.getuid())) return { direct: `${file} is not a socket of this user` };
  return new Promise<HandOffOutcome>((resolve) => {
    let done = false;
    let accepted = false;
    let buf = "";
    const c = net.connect(file);
    const finish = (o: HandOffOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      c.destroy();
      resolve(o);
    };
    let timer = setTimeout(() => finish({ direct: "the watcher did not answer" }), CONNECT_MS);
    const quiet = () => {
      clearTimeout(timer);
      timer = setTimeout(() => finish({ direct: `the watcher said nothing for ${SILENCE_MS / 1000} s` }), SILENCE_MS);
    };
    c.on("connect", () => {
      c.write(JSON.stringify({ v: 1, op: "snapshot", fingerprint }) + "\n");
      quiet();
    });
    c.on("error", (err) => finish({ direct: `the watcher socket: ${err.message}` }));
    c.on("close", () => finish({ direct: accepted ? "the watcher went away before it answered" : "the watcher closed the connection" }));
    c.on("data", (d: Buffer) => {
      buf += d.toString("utf8");
      if (buf.length > MAX_REPLY_BYTES) return finish({ direct: "the watcher's answer is too long" });
      quiet();
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let msg: Record<string, unknown>;
        try {
          msg = JSON.parse(line);
        } catch {
          return finish({ direct: "the watcher's answer is not JSON" });
        }
        if (msg.accepted === true) accepted = true;
        else if (msg.waiting === true) continue;
        else if (typeof msg.declined === "string") return finish({ direct: `the watcher declined: ${msg.declined}` });
        else if (typeof msg.failed === "string") return finish({ direct: `the watcher's snapshot failed: ${msg.failed}` });
        else if (accepted && isResult(msg.result)) return finish({ result: msg.result });
        else return finish({ direct: "the watcher's answer is not understood" });
      }
    });
  });
}

/** Enough of an EngineBackupResult to print: anything else is not trusted. */
function isResult(v: unknown): v is EngineBackupResult {
  const r = v as EngineBackupResult | null;
  const s = r?.snapshot;
  return (
    typeof r === "object" &&
    r !== null &&
    r.engine === "native" &&
    Array.isArray(r.mirrors) &&
    typeof s === "object" &&
    s !== null &&
    typeof s.id === "string" &&
    typeof s.time === "string" &&
    Array.isArray(s.tags) &&
    typeof s.summary === "object" &&
    s.summary !== null &&
    Array.isArray(s.skipped) &&
    Array.isArray(s.changedWhileRead) &&
    Array.isArray(s.special)
  );
}

/**
 * `pi-guard snapshot` without options a watcher cannot honour: the running watcher's snapshot, or
 * why the caller must take it itself. Mirrors are shipped by a direct run (the watcher ships them
 * in batches), and a restic repository has no watcher.
 */
export async function snapshotByWatcher(config: Config): Promise<HandOffOutcome> {
  if (config.mirrors.length) return { direct: "the config names mirrors" };
  const [{ isResticLocation }, { watcherFiles }, { hostName }] = await Promise.all([import("../engine/open.js"), import("./state.js"), import("../host.js")]);
  if (isResticLocation(config)) return { direct: "a restic repository" };
  return askWatcher(watcherFiles(config.stateDir, config.agentDir).socket, snapshotFingerprint(config, config.repo, hostName()));
}
