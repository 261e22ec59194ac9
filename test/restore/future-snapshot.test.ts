// Issue 17 item 11: a snapshot dated in the future (a wrong clock once) is never what "latest"
// means. restore latest and archive latest skip it and name it (id, time); when nothing else is
// left they refuse and name it; restore <id> still takes it, with a warning. The same holds on the
// restic engine, where restic itself wrote the future time (`restic backup --time`).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rootTag, PI_GUARD_TAG } from "../../src/restic/snapshots.js";
import { cli, expectOneLineError, initRepo, ok, snapshot } from "../helpers/cli.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";
import { openRepo, retime } from "../repo/prune-fixture.js";

/** Three days ahead: what a machine whose clock was wrong once wrote. */
const FUTURE = new Date(Date.now() + 3 * 24 * 3600_000);

describe("restore latest and a snapshot dated in the future (native repository)", () => {
  let sb: Sandbox;
  let good: string;
  let future: string;
  let futureTime: string;

  beforeAll(async () => {
    sb = makeSandbox("future");
    writePiConfigFiles(sb.agentDir);
    await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("project"), turns: [{ user: "hello", assistant: [fauxText("hi there")] }] });
    await initRepo(sb);
    good = (await snapshot(sb)).snapshotId;
    // The newer snapshot holds different settings, so restoring the wrong one would show.
    writePiConfigFiles(sb.agentDir);
    const settings = path.join(sb.agentDir, "settings.json");
    execFileSync("sh", ["-c", `printf '{"theme":"future"}' > '${settings}'`]);
    const taken = (await snapshot(sb)).snapshotId;
    future = await retime(await openRepo(sb), taken, FUTURE);
    futureTime = FUTURE.toISOString();
  }, 120_000);

  afterAll(() => sb?.cleanup());

  it("restore latest skips it, names it on stderr and in --json, and restores the newest real one", async () => {
    const r = await ok(sb, ["restore", "latest", "--json", "--target", path.join(sb.root, "latest")]);
    const out = r.json<{ snapshotId: string; warnings: string[] }>();
    expect(out.snapshotId).toBe(good);
    expect(r.stderr).toContain(future.slice(0, 8));
    expect(r.stderr).toContain(futureTime);
    expect(r.stderr).toMatch(/in the future/);
    expect(out.warnings.join("\n")).toContain(future.slice(0, 8));
    expect(readFileSync(path.join(sb.root, "latest", "settings.json"), "utf8")).not.toContain("future");
  });

  it("archive latest skips it too", async () => {
    const r = await ok(sb, ["archive", "latest", "-o", path.join(sb.root, "a.tar.gz"), "--json"]);
    expect(r.json<{ snapshotId: string }>().snapshotId).toBe(good);
    expect(r.stderr).toContain(future.slice(0, 8));
  });

  it("restore <id> of the future snapshot still works, with a warning", async () => {
    const r = await ok(sb, ["restore", future.slice(0, 8), "--json", "--target", path.join(sb.root, "by-id")]);
    expect(r.json<{ snapshotId: string }>().snapshotId).toBe(future);
    expect(r.stderr).toMatch(/in the future/);
    expect(readFileSync(path.join(sb.root, "by-id", "settings.json"), "utf8")).toContain("future");
  });

  it("when every snapshot is dated in the future, latest refuses and names them", async () => {
    await retime(await openRepo(sb), good, new Date(FUTURE.getTime() - 3600_000));
    const line = expectOneLineError(await cli(sb, ["restore", "latest", "--dry-run"]), 1);
    expect(line).toMatch(/in the future/);
    expect(line).toContain(future.slice(0, 8));
    // A time expression cannot reach them either: nothing is at or before now.
    expectOneLineError(await cli(sb, ["restore", "1 minute ago", "--dry-run"]), 1);
  });
});

describe("restore latest and a snapshot dated in the future (restic engine)", () => {
  const PASSWORD = "future password";
  let sb: Sandbox;
  let env: Record<string, string>;
  let resticRepo: string;
  let good: string;

  beforeAll(async () => {
    sb = makeSandbox("future-restic");
    resticRepo = path.join(sb.root, "restic-repo");
    env = { ...sb.env, PI_GUARD_REPO: `restic:${resticRepo}`, PI_GUARD_PASSWORD: PASSWORD, PI_GUARD_HOST: "laptop" };
    writePiConfigFiles(sb.agentDir);
    await ok(env, ["init"]);
    good = (await ok(env, ["snapshot", "--json"])).json<{ snapshotId: string }>().snapshotId;
    // restic itself writes a snapshot dated three days ahead, tagged as pi-guard tags its own.
    execFileSync("sh", ["-c", `printf '{"theme":"future"}' > '${path.join(sb.agentDir, "settings.json")}'`]);
    const stamp = FUTURE.toISOString().slice(0, 19).replace("T", " ");
    execFileSync(
      "restic",
      ["backup", "--time", stamp, "--host", "laptop", "--tag", PI_GUARD_TAG, "--tag", rootTag({ name: "agent", path: sb.agentDir }), "--", sb.agentDir],
      { env: { PATH: process.env.PATH!, HOME: sb.home, RESTIC_REPOSITORY: resticRepo, RESTIC_PASSWORD: PASSWORD, TZ: "UTC" } },
    );
  }, 120_000);

  afterAll(() => sb?.cleanup());

  it("restore latest skips it and says so", async () => {
    const r = await ok(env, ["restore", "latest", "--json", "--target", path.join(sb.root, "latest")]);
    expect(r.json<{ snapshotId: string }>().snapshotId).toBe(good);
    expect(r.stderr).toMatch(/in the future/);
    expect(readFileSync(path.join(sb.root, "latest", "settings.json"), "utf8")).not.toContain("future");
  });
});
