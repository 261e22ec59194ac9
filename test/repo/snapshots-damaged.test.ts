// Every snapshot object damaged is damage, not an empty repository: "no snapshots yet" would
// invite starting over. A machine without pi-guard's local cache (a new machine, a wiped data dir)
// reads the snapshot objects themselves, and every command that lists them must say they are
// damaged (exit 3) and name `pi-guard check` and `repair`. With only some damaged, the good ones
// still work, with a warning.

import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, initRepo, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { makeSandbox, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
let first: SnapshotJson;
let second: SnapshotJson;
let pristine: string;

/** Flip bits all over an object, as a bad disk or a bad copy would. */
function damage(file: string): void {
  const data = readFileSync(file);
  for (let i = 16; i < data.length; i += 7) data[i] ^= 0x55;
  writeFileSync(file, data);
}

/** A fresh copy of the repository with the given snapshot objects damaged, and no local cache. */
function damagedRepo(name: string, which: (id: string) => boolean): string {
  const repo = path.join(sb.root, `repo-${name}`);
  rmSync(repo, { recursive: true, force: true });
  cpSync(pristine, repo, { recursive: true });
  for (const f of readdirSync(path.join(repo, "snapshots"))) if (which(f)) damage(path.join(repo, "snapshots", f));
  // What this machine remembers of the repository would hide the damage: a new machine has none.
  for (const d of ["cache", "catalog", "search"]) rmSync(path.join(sb.dataHome, "pi-guard", d), { recursive: true, force: true });
  return repo;
}

beforeAll(async () => {
  sb = makeSandbox("snapdamage");
  writePiConfigFiles(sb.agentDir);
  await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("project"), turns: [{ user: "Remember the ibis", assistant: [fauxText("The ibis is remembered.")] }] });
  await initRepo(sb);
  first = await snapshot(sb);
  writeFileSync(path.join(sb.agentDir, "settings.json"), JSON.stringify({ theme: "light" }));
  second = await snapshot(sb);
  pristine = path.join(sb.root, "pristine");
  cpSync(sb.repo, pristine, { recursive: true });
});

afterAll(() => sb?.cleanup());

const DAMAGED = /snapshot.*damaged/i;

describe("every snapshot object damaged", () => {
  let env: Record<string, string>;
  beforeAll(() => {
    env = { PI_GUARD_REPO: damagedRepo("all", () => true) };
  });

  for (const args of [["snapshots"], ["--json", "snapshots"], ["restore", "latest", "--target", "@TARGET@"], ["status"], ["--json", "status"]]) {
    it(`${args.join(" ")}: exit 3, says the snapshots are damaged and names check and repair`, async () => {
      const r = await cli(sb, args.map((a) => (a === "@TARGET@" ? path.join(sb.root, "restored") : a)), { env });
      const line = expectOneLineError(r, 3);
      expect(line).toMatch(DAMAGED);
      expect(line).toContain("pi-guard check");
      expect(line).toContain("pi-guard repair --from");
      expect(r.stdout + r.stderr).not.toMatch(/no snapshots? yet/i);
    });
  }

  it("doctor: an error naming the damage and the repair, never 'no snapshots yet'", async () => {
    const r = await cli(sb, ["--json", "doctor"], { env });
    expect(r.code).toBe(1);
    const check = r.json<{ checks: { name: string; status: string; message: string }[] }>().checks.find((c) => c.name === "last snapshot");
    expect(check).toMatchObject({ status: "error", message: expect.stringMatching(DAMAGED) });
    expect(check!.message).toContain("pi-guard repair --from");
    expect(r.stdout).not.toMatch(/no snapshots? yet/i);
  });

  it("sessions list: lists the live sessions, then says the snapshots are damaged (exit 3)", async () => {
    const r = await cli(sb, ["sessions", "list"], { env });
    expect(r.code, r.stderr).toBe(3);
    expect(r.stdout).toContain("live only");
    expect(r.stderr).toMatch(DAMAGED);
    expect(r.stderr).toContain("pi-guard check");
    expect(r.stderr).toContain("pi-guard repair --from");
    expect(r.stderr).not.toMatch(/^\s+at /m);
  });

  it("once the objects are healed (the same names put back, as repair --from does), sessions list sees the snapshots again", async () => {
    const repo = env.PI_GUARD_REPO;
    for (const f of readdirSync(path.join(pristine, "snapshots"))) cpSync(path.join(pristine, "snapshots", f), path.join(repo, "snapshots", f));
    const r = await cli(sb, ["sessions", "list"], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("live + 2 snapshots");
    expect(r.stderr).toBe("");
  });
});

describe("one snapshot object damaged, one good", () => {
  let env: Record<string, string>;
  beforeAll(() => {
    env = { PI_GUARD_REPO: damagedRepo("one", (f) => f.startsWith(first.snapshotId)) };
  });

  it("snapshots lists the good one and warns about the other", async () => {
    const r = await cli(sb, ["snapshots"], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(second.snapshotId.slice(0, 8));
    expect(r.stderr).toContain(first.snapshotId.slice(0, 8));
    expect(r.stderr).toContain("pi-guard check");
  });

  it("restore latest restores the good one", async () => {
    const r = await cli(sb, ["--json", "restore", "latest", "--target", path.join(sb.root, "restored-one")], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.json<{ snapshotId: string }>().snapshotId).toBe(second.snapshotId);
  });

  it("sessions list works and warns that a snapshot could not be read", async () => {
    const r = await cli(sb, ["sessions", "list"], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("live + 1 snapshot");
    expect(r.stderr).toMatch(/1 of 2 snapshots could not be read/);
    expect(r.stderr).toContain("pi-guard check");
  });
});
