// `pi-guard verify`: the live files against a snapshot, byte for byte (every byte of each live file
// hashed at the snapshot's chunk boundaries and compared with its blob ids). Exit 0 only when
// identical; differences, missing and new files are named; it only reads.

import { appendFileSync, mkdirSync, readdirSync, statSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, initRepo, ok, snapshot } from "../helpers/cli.js";
import { copyFixtures, fingerprint, makeSandbox, type Sandbox, treeState, writePiConfigFiles } from "../helpers/tmp.js";

interface Difference {
  root: string;
  path: string;
  status: "changed" | "missing" | "new" | "unreadable";
  type: string;
  from?: number;
  snapshotSize?: number;
  liveSize?: number;
}

describe("pi-guard verify", () => {
  let sb: Sandbox;
  let sessions: string[];
  let firstId = "";
  beforeAll(async () => {
    sb = makeSandbox("verify");
    writePiConfigFiles(sb.agentDir);
    sessions = copyFixtures(sb.agentDir);
    symlinkSync("models.json", path.join(sb.agentDir, "models-link.json"));
    await initRepo(sb);
    firstId = (await snapshot(sb)).snapshotId;
  });
  afterAll(() => sb?.cleanup());

  it("exits 0 and says identical when the live files are the snapshot's bytes", async () => {
    const r = await ok(sb, ["verify", "--json"]);
    const j = r.json();
    expect(j).toMatchObject({ snapshotId: firstId, identical: true, differences: [] });
    expect(j.files).toBe(sessions.length + 3 + 1);
    expect(j.same).toBe(j.files);
    expect(j.bytes).toBeGreaterThan(1_000_000);
    const human = await ok(sb, ["verify"]);
    expect(human.stdout).toMatch(/identical/);
    expect(human.stdout).toContain(firstId.slice(0, 8));
  });

  it("names changed, grown, missing and new files and a retargeted link, exits 1, and changes nothing", async () => {
    const [edited, grown, removed] = sessions;
    const grownSize = statSync(grown).size;
    writeFileSync(edited, Buffer.from(readdirSync(path.dirname(edited)).join("\n").padEnd(statSync(edited).size, "#")));
    appendFileSync(grown, '{"type":"message","id":"ffffffff","parentId":null}\n');
    unlinkSync(removed);
    writeFileSync(path.join(sb.agentDir, "new-file.txt"), "new\n");
    unlinkSync(path.join(sb.agentDir, "models-link.json"));
    symlinkSync("settings.json", path.join(sb.agentDir, "models-link.json"));
    const before = fingerprint(treeState(sb.agentDir));
    const mtimes = sessions.slice(0, 2).map((f) => statSync(f).mtimeMs);

    const r = await cli(sb, ["verify", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const j = r.json();
    expect(j.identical).toBe(false);
    const rel = (f: string) => path.relative(sb.agentDir, f);
    const by = new Map<string, Difference>(j.differences.map((d: Difference) => [d.path, d]));
    expect(by.get(rel(edited))).toMatchObject({ root: "agent", status: "changed", type: "file", from: 0 });
    // The snapshot's bytes are the start of the grown file: the first difference is where it ended.
    expect(by.get(rel(grown))).toMatchObject({ status: "changed", from: grownSize, snapshotSize: grownSize, liveSize: statSync(grown).size });
    expect(by.get(rel(removed))).toMatchObject({ status: "missing", type: "file" });
    expect(by.get("new-file.txt")).toMatchObject({ status: "new", type: "file" });
    expect(by.get("models-link.json")).toMatchObject({ status: "changed", type: "symlink" });
    expect(j.differences).toHaveLength(5);
    expect(j.same).toBe(j.files - 4);

    const human = await cli(sb, ["verify"]);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(new RegExp(`changed\\s+${rel(edited).replaceAll(".", "\\.")}`));
    expect(human.stdout).toMatch(/missing\s+/);
    expect(human.stdout).toMatch(/new\s+new-file\.txt/);
    expect(human.stdout).toMatch(/NOT identical/);

    // It only reads.
    expect(fingerprint(treeState(sb.agentDir))).toEqual(before);
    expect(sessions.slice(0, 2).map((f) => statSync(f).mtimeMs)).toEqual(mtimes);
  });

  it("verifies against a snapshot given by id, and a new snapshot makes it identical again", async () => {
    const second = (await snapshot(sb)).snapshotId;
    expect((await ok(sb, ["verify", "--json"])).json()).toMatchObject({ snapshotId: second, identical: true });
    const old = await cli(sb, ["verify", firstId.slice(0, 8), "--json"]);
    expect(old.code).toBe(1);
    expect(old.json().snapshotId).toBe(firstId);
  });

  it("a snapshot that does not exist is a one-line error", async () => {
    const line = expectOneLineError(await cli(sb, ["verify", "deadbeef"]));
    expect(line).toMatch(/deadbeef/);
  });

  it("files the filter excludes are not new; --help shows examples", async () => {
    const nm = path.join(sb.agentDir, "node_modules", "x");
    mkdirSync(nm, { recursive: true });
    writeFileSync(path.join(nm, "index.js"), "x");
    expect((await ok(sb, ["verify", "--json"])).json().identical).toBe(true);
    const help = await ok(sb, ["verify", "--help"]);
    expect(help.stdout).toMatch(/Examples:/);
    expect(help.stdout).toMatch(/pi-guard verify/);
  });
});
