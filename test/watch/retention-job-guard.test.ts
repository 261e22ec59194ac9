// The scheduled forget and retention jobs never empty a group either (issue 17, item 1): a bad
// "keepTags" in the config makes the daily job refuse, in the repository and in the mirror, with
// nothing forgotten and prune not run; the job fails (ok: false) in words that name the refusal,
// and `status` is unhealthy, naming it. Real CLI, real repository and a real local mirror.

import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writeFileExact, writePiConfigFiles } from "../helpers/tmp.js";
import { writeConfig } from "../mirror/mirror-helpers.js";

const sandboxes: Sandbox[] = [];
afterEach(() => {
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

const ids = async (sb: Sandbox, repo: string) => (await ok(sb, ["snapshots", "--json", "--repo", repo])).json<{ id: string }[]>().map((s) => s.id).sort();

describe("scheduled retention with a policy that would empty a group", () => {
  it("run-scheduled forget and retention refuse in the repository and the mirror; nothing goes; status names the failure", { timeout: 60_000 }, async () => {
    const sb = makeSandbox("retention-job-guard");
    sandboxes.push(sb);
    writePiConfigFiles(sb.agentDir);
    const mirror = path.join(sb.root, "mirror");
    writeConfig(sb, { mirrors: [mirror], retention: { keepTags: ["typo-tag"] } });
    await ok(sb, ["init"]);
    for (let i = 0; i < 2; i++) {
      writeFileExact(path.join(sb.sessionsDir, "--proj--", `s${i}.jsonl`), `{"n":${i}}\n`, 0o644);
      await ok(sb, ["snapshot", "--json"]);
    }
    const inRepo = await ids(sb, sb.repo);
    const inMirror = await ids(sb, mirror);
    expect(inRepo).toHaveLength(2);
    expect(inMirror.length).toBeGreaterThan(0);

    const forget = await cli(sb, ["run-scheduled", "--job", "forget", "--json"]);
    expect(forget.code, forget.stdout + forget.stderr).toBe(1);
    const forgetRun = forget.json<{ ran: { ok: boolean; summary: string }[] }>().ran[0];
    expect(forgetRun.ok).toBe(false);
    expect(forgetRun.summary).toMatch(/^REFUSED: the policy keeps no snapshot of host \S+ .*; nothing was forgotten/);

    const retention = await cli(sb, ["run-scheduled", "--job", "retention", "--json"]);
    expect(retention.code).toBe(1);
    const run = retention.json<{ ran: { ok: boolean; summary: string }[] }>().ran[0];
    expect(run.ok).toBe(false);
    const [repoPart, mirrorPart] = run.summary.split(" | ");
    expect(repoPart).toMatch(new RegExp(`^${sb.repo}: FAILED: REFUSED: the policy keeps no snapshot of host .*nothing was forgotten.*; prune not run$`));
    expect(mirrorPart).toMatch(new RegExp(`^${mirror}: FAILED: REFUSED: .*; prune not run$`));
    expect(await ids(sb, sb.repo)).toEqual(inRepo);
    expect(await ids(sb, mirror)).toEqual(inMirror);

    // A retention that refuses is a guard not doing its job: status is unhealthy until a run succeeds.
    const status = await cli(sb, ["status", "--json"]);
    expect(status.code).toBe(1);
    const report = status.json<{ healthy: boolean; problems: string[]; problemKinds: { kind: string; subject?: string }[] }>();
    expect(report.healthy).toBe(false);
    expect(report.problems.join("\n")).toMatch(/scheduled job retention failed at [^\n]*: [^\n]*REFUSED/);
    expect(report.problemKinds).toContainEqual(expect.objectContaining({ kind: "job-failed", subject: "retention" }));
  });
});
