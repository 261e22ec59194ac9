// pi-guard's pi extension, loaded by the real pi 1.6.0 CLI (RPC mode, Node 22) with the faux
// provider: snapshots on the extension's request, the in-flight journal after kill -9, the footer
// status, and that nothing it meets reaches pi.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli, initRepo, ok } from "../helpers/cli.js";
import { validatePi1 } from "../helpers/pi1.js";
import { makeSandbox, sha256File, type Sandbox } from "../helpers/tmp.js";
import { files, readLog, readState, restoredBytes, startWatch, stateDir, stopWatch, waitFor, watchEnv, type RunningWatch } from "../watch/watch-helpers.js";
import { startRpcPi, stopPi, type RpcPi } from "./pi-rpc.js";

const sandboxes: Sandbox[] = [];
const pis: RpcPi[] = [];
const watchers: RunningWatch[] = [];
afterEach(async () => {
  for (const p of pis.splice(0)) await stopPi(p, "SIGKILL");
  for (const w of watchers.splice(0)) if (w.child.exitCode === null && w.child.signalCode === null) await stopWatch(w, "SIGKILL");
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

/** A sandbox whose watcher snapshots a change only after ten minutes: a snapshot within seconds was asked for. */
async function scene(label: string): Promise<Sandbox> {
  const sb = makeSandbox(label);
  sandboxes.push(sb);
  mkdirSync(sb.agentDir, { recursive: true });
  const cfg = path.join(sb.configHome, "pi-guard");
  mkdirSync(cfg, { recursive: true });
  writeFileSync(path.join(cfg, "config.json"), JSON.stringify({ watch: { debounceMs: 600_000, maxDelayMs: 3_600_000, fullScanMs: 0 } }));
  await initRepo(sb);
  return sb;
}

function watch(sb: Sandbox): RunningWatch {
  const w = startWatch(sb);
  watchers.push(w);
  return w;
}

function pi(sb: Sandbox, o: Partial<Parameters<typeof startRpcPi>[0]> = {}): RpcPi {
  const p = startRpcPi({ sb, env: watchEnv(sb), cwd: path.join(sb.home, "proj"), replies: ["The answer is 42."], ...o });
  pis.push(p);
  return p;
}

/** pi's session files in the sandbox (pi 1.x creates one at the first user message). */
function piSessions(sb: Sandbox): string[] {
  const root = sb.sessionsDir;
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(root, f));
}

const LONG_ANSWER = Array.from({ length: 400 }, (_, i) => `Line ${i} of a long answer that pi is still streaming.`).join("\n");

describe("pi-guard's extension in pi 1.6.0", () => {
  it("asks the watcher for a snapshot at turn_end: the turn is restorable long before the watcher's own debounce (ten minutes here)", async () => {
    const sb = await scene("ext-turn");
    const w = watch(sb);
    await waitFor("the watcher's first snapshot", () => (readState(sb)?.snapshots.made ?? 0) >= 1, 30_000);
    // Streamed for about a second: longer than a journal flush.
    const p = pi(sb, { replies: [`The answer is 42. ${"More detail follows. ".repeat(20)}`], tokensPerSecond: 100 });
    p.prompt("What is the answer?");
    const turnEnd = await p.waitEvent("turn_end", (e) => e.type === "turn_end");
    const made = readState(sb)!.snapshots.made;
    const [file] = piSessions(sb);
    expect(file, "pi wrote no session file").toBeDefined();
    // Bounded wait, not a timing assertion: without the request nothing would be snapshotted for ten minutes.
    const state = await waitFor("a snapshot after turn_end", () => {
      const s = readState(sb);
      return s && s.snapshots.made > made && s.lastSnapshot ? s : undefined;
    }, 20_000);
    const restored = await restoredBytes(sb, state.lastSnapshot!.id, path.relative(sb.agentDir, file));
    expect(restored.toString("utf8")).toContain("The answer is 42.");
    const requested = readLog(sb).filter((l) => l.event === "requested");
    // turn_end and agent_settled follow each other within milliseconds: one request file may carry both.
    expect(requested.length).toBeGreaterThan(0);
    for (const l of requested) expect(["turn_end", "agent_settled"]).toContain(l.reason);
    expect(requested[0].pid).toBe(p.child.pid);
    // The footer says it is saved, once the watcher's state shows a snapshot begun after the turn.
    const saved = await waitFor("a 'saved' status", () => p.statuses().find((s) => /^pi-guard: saved \d+ s ago$/.test(s)), 20_000);
    expect(saved).toMatch(/saved/);
    expect(turnEnd.event.type).toBe("turn_end");
    // The answer was journalled while it streamed, and the journal went once pi had saved it.
    const inflight = path.join(stateDir(sb), "inflight");
    expect(existsSync(inflight)).toBe(true);
    await waitFor("the journal to be deleted", () => readdirSync(inflight).length === 0, 10_000);
    // session_shutdown asks once more (SIGTERM: pi's own shutdown path).
    expect(await stopPi(p)).not.toBe("SIGKILL");
    await waitFor("the session_shutdown request", () => readLog(sb).some((l) => l.event === "requested" && l.reason === "session_shutdown"), 20_000);
    await stopWatch(w);
  }, 120_000);

  it("kill -9 in the middle of a streamed answer: salvage --from-journals --install recovers the streamed text, marked; pi 1.6.0 loads the copy and resumes it", async () => {
    const sb = await scene("ext-kill");
    const p = pi(sb, { replies: [LONG_ANSWER], tokensPerSecond: 150 });
    p.prompt("Write a long answer.");
    const journalDir = path.join(stateDir(sb), "inflight");
    // Kill once the journal holds a good part of the answer (read while pi streams).
    const journal = await waitFor("a journal holding 400 characters", () => {
      const f = existsSync(journalDir) ? readdirSync(journalDir).find((n) => n.endsWith(".json")) : undefined;
      if (!f) return undefined;
      try {
        const j = JSON.parse(readFileSync(path.join(journalDir, f), "utf8"));
        return j.streamedChars >= 400 ? path.join(journalDir, f) : undefined;
      } catch {
        return undefined; // mid-rename: look again
      }
    }, 60_000);
    p.child.kill("SIGKILL");
    expect(await p.exited).toBe("SIGKILL");
    const streamed = p.streamedText();
    expect(streamed.length).toBeLessThan(LONG_ANSWER.length); // it really was cut mid-answer
    const [original] = piSessions(sb);
    const before = sha256File(original);
    expect(readFileSync(original, "utf8")).not.toContain("Line 1 of a long answer");

    // --install: the copy goes beside the original, where pi looks.
    const r = await ok(watchEnv(sb), ["salvage", "--from-journals", "--install", "--json"]);
    const report = r.json();
    expect(report.sessions).toHaveLength(1);
    const installed = piSessions(sb).filter((f) => f !== original);
    expect(installed).toHaveLength(1);
    expect(path.dirname(installed[0])).toBe(path.dirname(original));
    const text = readFileSync(installed[0], "utf8");
    const v = await validatePi1(text, { expectMessages: true });
    const last = [...v.entries].reverse().find((e) => e.type === "message" && (e.message as any).role === "assistant")!;
    const m = last.message as any;
    expect(m.stopReason).toBe("aborted");
    expect(m.errorMessage).toMatch(/^pi-guard: recovered from the in-flight journal/);
    const recovered = m.content.filter((b: any) => b.type === "text").map((b: any) => b.text).join("");
    expect(recovered.length).toBeGreaterThanOrEqual(400);
    expect(LONG_ANSWER.startsWith(recovered)).toBe(true);
    expect(streamed.startsWith(recovered)).toBe(true);
    // The user's prompt came along from the original file, and the copy names it as its parent.
    expect(v.context.messages.some((x) => x.role === "user")).toBe(true);
    expect(v.header.parentSession).toBe(original);
    expect(v.header.id).not.toBe(JSON.parse(readFileSync(original, "utf8").split("\n")[0]).id);
    // Only read: the original session and the journal are as they were.
    expect(sha256File(original)).toBe(before);
    expect(existsSync(journal)).toBe(true);

    // The real pi 1.6.0 resumes the copy: it holds the recovered answer, and the conversation goes on.
    const resumed = pi(sb, { replies: ["Carrying on."], withExtension: false, args: ["--session", installed[0]] });
    resumed.send({ type: "get_messages" });
    const got = await resumed.waitEvent("get_messages", (e) => e.type === "response" && e.command === "get_messages");
    expect(got.event.success).toBe(true);
    const texts = (got.event.data.messages as any[])
      .filter((x) => x.role === "assistant")
      .map((x) => (x.content as any[]).filter((b) => b.type === "text").map((b) => b.text).join(""));
    expect(texts).toContain(recovered);
    resumed.prompt("Please go on.");
    await resumed.waitEvent("agent_settled", (e) => e.type === "agent_settled");
    expect(readFileSync(installed[0], "utf8")).toContain("Carrying on.");
    await stopPi(resumed);
  }, 120_000);

  it("with the watcher stopped, the status says so (and pi is told once); no request is written", async () => {
    const sb = await scene("ext-stopped");
    const w = watch(sb);
    await waitFor("the watcher's first snapshot", () => (readState(sb)?.snapshots.made ?? 0) >= 1, 30_000);
    const p = pi(sb, { replies: ["one", "two"] });
    await waitFor("a first status", () => p.statuses().length > 0, 30_000);
    expect(p.statuses()[0]).not.toMatch(/NOT PROTECTED/);
    expect(await stopWatch(w)).toMatchObject({ code: 0 });
    const stopped = await waitFor("the 'watcher stopped' status", () => p.statuses().find((s) => s === "pi-guard: NOT PROTECTED: watcher stopped"), 20_000);
    expect(stopped).toBeDefined();
    p.prompt("first");
    await p.waitEvent("agent_settled", (e) => e.type === "agent_settled");
    p.prompt("second");
    const first = await p.waitEvent("turn_end", (e) => e.type === "turn_end");
    await p.waitEvent("agent_settled", (e) => e.type === "agent_settled", first.index);
    expect(p.notifications().filter((n) => n.includes("NOT PROTECTED"))).toHaveLength(1);
    expect(existsSync(files(sb).request)).toBe(false);
    expect(p.statuses().at(-1)).toBe("pi-guard: NOT PROTECTED: watcher stopped");
  }, 120_000);

  it("never hurts pi: with pi-guard's state dir unusable, pi still answers and saves its session", async () => {
    const sb = await scene("ext-hostile");
    const blocker = path.join(sb.root, "state-is-a-file");
    writeFileSync(blocker, "not a folder");
    const p = pi(sb, { env: { ...watchEnv(sb), XDG_STATE_HOME: blocker }, replies: ["still fine"], tokensPerSecond: 200 });
    p.prompt("hello");
    await p.waitEvent("agent_settled", (e) => e.type === "agent_settled");
    const [file] = piSessions(sb);
    expect(readFileSync(file, "utf8")).toContain("still fine");
    expect(p.events.some((e) => e.event.type === "extension_error" || /pi-guard/.test(JSON.stringify(e.event.error ?? "")))).toBe(false);
    expect(p.stderr()).not.toMatch(/pi-guard|pi-extension/);
  }, 120_000);
});

describe("pi-guard pi install-extension / uninstall-extension", () => {
  it("installs a loader pi discovers by itself, idempotently, with --dry-run and --json; uninstall removes only its own file", async () => {
    const sb = makeSandbox("ext-install");
    sandboxes.push(sb);
    mkdirSync(sb.agentDir, { recursive: true });
    const env = watchEnv(sb);
    const loader = path.join(sb.agentDir, "extensions", "pi-guard.js");
    const dry = (await ok(env, ["pi", "install-extension", "--dry-run", "--json"])).json();
    expect(dry).toMatchObject({ action: "installed", dryRun: true, loader });
    expect(existsSync(loader)).toBe(false);
    expect((await ok(env, ["pi", "install-extension", "--json"])).json()).toMatchObject({ action: "installed", dryRun: false });
    const text = readFileSync(loader, "utf8");
    expect((await ok(env, ["pi", "install-extension", "--json"])).json()).toMatchObject({ action: "unchanged" });
    expect(readFileSync(loader, "utf8")).toBe(text);
    expect((await ok(env, ["pi", "install-extension"])).stdout).toMatch(/already installed/);

    // pi 1.6.0 loads it from <agent dir>/extensions/ without -e: the status request arrives.
    const p = pi(sb, { withExtension: false });
    await waitFor("pi-guard's status from the installed extension", () => p.statuses().length > 0, 30_000);
    expect(p.statuses()[0]).toMatch(/^pi-guard: NOT PROTECTED/);
    await stopPi(p);

    expect((await ok(env, ["pi", "uninstall-extension", "--dry-run", "--json"])).json()).toMatchObject({ action: "removed", dryRun: true });
    expect(existsSync(loader)).toBe(true);
    expect((await ok(env, ["pi", "uninstall-extension", "--json"])).json()).toMatchObject({ action: "removed" });
    expect(existsSync(loader)).toBe(false);
    expect((await ok(env, ["pi", "uninstall-extension", "--json"])).json()).toMatchObject({ action: "absent" });

    // A file of the user's own under that name is never replaced or removed.
    writeFileSync(loader, "export default function () {}\n");
    for (const cmd of ["install-extension", "uninstall-extension"]) {
      const r = await cli(env, ["pi", cmd]);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toMatch(/not pi-guard's loader; it was left alone/);
    }
    expect(readFileSync(loader, "utf8")).toBe("export default function () {}\n");
  }, 120_000);
});
