// Claude Code's cleanupPeriodDays sweep, recognised for what it is, with the real CLI, offline: two
// real sessions are made; the first one's transcript is aged 40 days and snapshotted, then unlinked
// as the sweep does, while the second, newer session stays. The next snapshot (by `snapshot`, and
// by a running watcher for a third session) is no suspected loss: it is tagged agent-cleanup with a
// cleanup record, the watcher's log names the removed session, `status` lists it (text and --json),
// and `forget` with a policy that would remove the snapshot holding it keeps that snapshot; the
// swept session is then restored from it byte for byte. The last case lets Claude Code sweep by its
// own hand: 2.1.328 starts its housekeeping in a `-p` run too, and sweeps 5 s after start-up work
// is released, so a `-p` run whose answer streams for longer than that removes the aged transcript
// (the interactive REPL starts it at the first prompt and puts it off by 10 minutes while the user
// is active: bench/claude-sweep.ts waits for that one).

import { existsSync, readFileSync, unlinkSync, utimesSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { claudeConfigDir, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { cli, initRepo, ok, snapshot } from "../helpers/cli.js";
import { type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";
import { readLog, startWatch, stopWatch, waitFor, waitReady, watchEnv, type RunningWatch } from "../watch/watch-helpers.js";

const DAY = 24 * 60 * 60 * 1000;

interface Listed {
  id: string;
  tags: string[];
}

describe("Claude Code: the cleanup sweep is recorded, and what it took stays restorable", () => {
  let sb: Sandbox;
  let server: FakeModelServer;
  let watch: RunningWatch | undefined;
  afterAll(async () => {
    if (watch && watch.child.exitCode === null) watch.child.kill("SIGKILL");
    await server?.close();
    sb?.cleanup();
  });

  it("sweep → agent-cleanup tag and record, watcher log, status, forget keeps the holder, restore byte-identical", async () => {
    sb = makeSandbox("claude-sweep");
    writePiConfigFiles(sb.agentDir);
    const env = watchEnv(sb);
    server = await startClaudeModel([say("First session.")]);
    const old = await runClaude(sb, server, "first");
    server.setScript([say("Second session.")]);
    const fresh = await runClaude(sb, server, "second");
    const oldBytes = readFileSync(old.transcript);
    const rel = (abs: string) => path.relative(claudeConfigDir(sb), abs).split(path.sep).join("/");

    // Last written 40 days ago, as the snapshot of that day recorded it.
    const aged = new Date(Date.now() - 40 * DAY);
    utimesSync(old.transcript, aged, aged);
    await initRepo(sb);
    const holder = await snapshot(sb, [], { env });

    // The sweep: transcripts older than cleanupPeriodDays (30 by default) are unlinked.
    unlinkSync(old.transcript);
    const swept = await cli(sb, ["snapshot", "--json"], { env });
    expect(swept.code, swept.stderr).toBe(0);
    expect(swept.stderr).not.toMatch(/SUSPECTED LOSS/);
    expect(swept.json<{ tags: string[]; suspectLoss: unknown }>()).toMatchObject({ tags: ["agent-cleanup"], suspectLoss: null, cleanup: { agents: [{ agent: "claude", days: 30, sessions: 1 }] } });
    // The snapshot says so itself, as a note (exit 0), naming where the session stays.
    expect(swept.stderr).toMatch(/agent cleanup: 1 claude session file\(s\) .* older than 30 days were removed/);
    const sweptId = swept.json<{ snapshotId: string }>().snapshotId;

    // A third session, swept while a watcher runs: its log names it.
    server.setScript([say("Third session.")]);
    const third = await runClaude(sb, server, "third");
    const thirdBytes = readFileSync(third.transcript);
    utimesSync(third.transcript, aged, aged);
    const holder2 = await snapshot(sb, [], { env });
    watch = startWatch(sb);
    await waitReady(sb, watch);
    unlinkSync(third.transcript);
    const event = await waitFor(
      () => `an agent-cleanup event (log: ${JSON.stringify(readLog(sb).slice(-5))}; stderr: ${watch!.stderr()})`,
      () => readLog(sb).find((e) => e.event === "agent-cleanup"),
      30_000,
    );
    expect(event.level).toBe("warn");
    expect(event.agents).toEqual([expect.objectContaining({ agent: "claude", days: 30, sessions: 1, sample: [`claude:${rel(third.transcript)}`] })]);
    expect(event.message).toContain(rel(third.transcript));
    expect(readLog(sb).some((e) => e.event === "suspect-loss")).toBe(false);
    await waitFor("the watcher's stderr line", () => watch!.stderr().includes("agent cleanup: 1 claude session file(s) (1 file(s)) older than 30 days were removed (cleanupPeriodDays 30 (not set: the default))"));
    expect((await stopWatch(watch)).code).toBe(0);
    const watchSwept = event.snapshot as string;

    // The tag and the record, in the listing and in the snapshot objects.
    const listed = (await ok(sb, ["snapshots", "--json"], { env })).json<Listed[]>();
    expect(listed.find((s) => s.id === sweptId)?.tags).toEqual(["agent-cleanup"]);
    expect(listed.find((s) => s.id === watchSwept)?.tags).toEqual(["agent-cleanup"]);
    expect(event.against).not.toBe(holder.snapshotId);

    // status names the removed sessions, newest first, and stays healthy about them.
    const status = await cli(sb, ["status", "--json"], { env });
    const report = status.json<{ cleanups: { snapshot: string; against: string; agents: { agent: string; sessions: number; sample: string[] }[] }[]; problems: string[] }>();
    expect(report.cleanups.map((c) => [c.snapshot, c.against])).toEqual([
      [watchSwept, event.against],
      [sweptId, holder.snapshotId],
    ]);
    expect(report.cleanups[1].agents).toEqual([expect.objectContaining({ agent: "claude", sessions: 1, sample: [`claude:${rel(old.transcript)}`] })]);
    expect(report.problems.join("\n")).not.toMatch(/loss|cleanup/);
    const text = await cli(sb, ["status"], { env });
    expect(text.stdout).toMatch(new RegExp(`claude cleanup .*removed 1 session file\\(s\\) older than 30 days \\(claude:${rel(old.transcript).replace(/[.]/g, "\\.")}\\); kept in snapshot ${holder.snapshotId.slice(0, 8)}`));

    // forget --keep-last 1 would remove both holders; it keeps them, and the records, with the reason.
    const forgot = (await ok(sb, ["forget", "--keep-last", "1", "--json"], { env })).json<{ keep: { id: string; reasons: string[] }[]; remove: { id: string }[] }>();
    const reasons = new Map(forgot.keep.map((k) => [k.id, k.reasons]));
    expect(reasons.get(holder.snapshotId)).toEqual([`holds 1 session file(s) claude's cleanup removed (snapshot ${sweptId.slice(0, 8)})`]);
    expect(reasons.get(event.against)).toEqual([`holds 1 session file(s) claude's cleanup removed (snapshot ${watchSwept.slice(0, 8)})`]);
    expect(reasons.get(sweptId)).toEqual([`records claude's cleanup of 1 session file(s), kept in ${holder.snapshotId.slice(0, 8)}`]);
    expect(forgot.remove.map((r) => r.id)).toContain(holder2.snapshotId);
    await ok(sb, ["prune", "--json"], { env });

    // Restorable after forget and prune: the swept sessions come back byte for byte, the newer one is untouched.
    await ok(sb, ["restore", holder.snapshotId, "--agent", "claude", "--path", rel(old.transcript), "--json"], { env });
    expect(readFileSync(old.transcript).equals(oldBytes)).toBe(true);
    await ok(sb, ["restore", event.against, "--agent", "claude", "--path", rel(third.transcript), "--json"], { env });
    expect(readFileSync(third.transcript).equals(thirdBytes)).toBe(true);
    expect(readFileSync(fresh.transcript).length).toBeGreaterThan(0);
  });

  it("the real sweep: a `claude -p` run that outlives the 5 s housekeeping delay removes the aged transcript itself; the snapshot after it is agent-cleanup, and restore brings the session back", async () => {
    const real = makeSandbox("claude-real-sweep");
    const model = await startClaudeModel([say("An old session.")]);
    try {
      const env = watchEnv(real);
      writePiConfigFiles(real.agentDir);
      const old = await runClaude(real, model, "old one");
      const oldBytes = readFileSync(old.transcript);
      const aged = new Date(Date.now() - 40 * DAY);
      utimesSync(old.transcript, aged, aged);
      await initRepo(real);
      const holder = await snapshot(real, [], { env });

      // An answer streamed word by word for about 10 s: the run outlives the housekeeping delay.
      model.setScript([say(Array.from({ length: 50 }, (_, i) => `w${i}`).join(" "), { chunkDelayMs: 200 })]);
      const slow = await runClaude(real, model, "a slow answer please");
      expect(existsSync(old.transcript)).toBe(false);
      expect(existsSync(path.join(claudeConfigDir(real), ".last-cleanup"))).toBe(true);
      expect(existsSync(slow.transcript)).toBe(true);

      const swept = (await ok(real, ["snapshot", "--json"], { env })).json<{ tags: string[]; suspectLoss: unknown; cleanup: { against: string } }>();
      const rel = path.relative(claudeConfigDir(real), old.transcript).split(path.sep).join("/");
      expect(swept).toMatchObject({ tags: ["agent-cleanup"], suspectLoss: null, cleanup: { against: holder.snapshotId, agents: [{ agent: "claude", days: 30, sessions: 1, sample: [`claude:${rel}`] }] } });
      await ok(real, ["restore", holder.snapshotId, "--agent", "claude", "--path", rel, "--json"], { env });
      expect(readFileSync(old.transcript).equals(oldBytes)).toBe(true);
    } finally {
      await model.close();
      real.cleanup();
    }
  });
});
