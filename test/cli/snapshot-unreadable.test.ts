// One unreadable session file or folder must not cost the whole backup: everything else is saved,
// each skipped path is named, the snapshot is tagged "incomplete" and the exit code is 3.
// Root ignores mode bits, so the CLI runs as `nobody` (setpriv) over a sandbox that nobody owns:
// the EACCES errors are real.

import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, initRepo, ok, PROJECT_ROOT, restoreJson } from "../helpers/cli.js";
import { copyFixtures, fingerprint, makeSandbox, type Sandbox, treeState, writePiConfigFiles } from "../helpers/tmp.js";

const root = process.getuid?.() === 0;
const canDrop = root && spawnSync("setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "true"]).status === 0;

function asNobody(sb: Sandbox, args: string[], env: Record<string, string> = {}) {
  return spawnSync("setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", process.execPath, BIN, ...args], {
    cwd: PROJECT_ROOT,
    env: { ...sb.env, ...env },
    encoding: "utf8",
  });
}

describe.skipIf(!canDrop)("snapshot with unreadable paths", () => {
  let sb: Sandbox;
  let firstId = "";
  const locked = ["sessions/--locked-file--/2026-11-30T10-00-00-000Z_a.jsonl", "sessions/--locked-dir--", "sessions/--no-search--/2026-11-30T10-00-00-000Z_c.jsonl"];

  beforeAll(async () => {
    sb = makeSandbox("unreadable");
    writePiConfigFiles(sb.agentDir);
    copyFixtures(sb.agentDir);
    for (const [dir, name] of [["--locked-file--", "a"], ["--locked-dir--", "b"], ["--no-search--", "c"]]) {
      mkdirSync(path.join(sb.sessionsDir, dir), { recursive: true });
      writeFileSync(path.join(sb.sessionsDir, dir, `2026-11-30T10-00-00-000Z_${name}.jsonl`), `{"type":"session","id":"${name}"}\n`);
    }
    await initRepo(sb);
    spawnSync("chown", ["-R", "nobody:nogroup", sb.root]);
    chmodSync(path.join(sb.agentDir, locked[0]), 0o000);
    chmodSync(path.join(sb.agentDir, locked[1]), 0o000);
    // Listable but not searchable: the name is seen, the file cannot be looked at.
    chmodSync(path.join(sb.sessionsDir, "--no-search--"), 0o644);
  });
  afterAll(() => {
    spawnSync("chmod", ["-R", "u+rwx", sb.root]);
    sb?.cleanup();
  });

  it("backs up everything else, names each skipped path, tags the snapshot incomplete, exits 3", async () => {
    const r = asNobody(sb, ["snapshot", "--json"]);
    expect(r.status, r.stderr).toBe(3);
    const out = JSON.parse(r.stdout);
    firstId = out.snapshotId;
    expect(out.tags).toEqual(["incomplete"]);
    expect(out.skipped).toEqual([
      { root: "agent", path: locked[1], error: "EACCES: permission denied" },
      { root: "agent", path: locked[0], error: "EACCES: permission denied" },
      { root: "agent", path: locked[2], error: "EACCES: permission denied" },
    ]);
    const warnings = r.stderr.trim().split("\n");
    expect(warnings).toEqual([
      `pi-guard: skipped ${locked[1]}: EACCES: permission denied`,
      `pi-guard: skipped ${locked[0]}: EACCES: permission denied`,
      `pi-guard: skipped ${locked[2]}: EACCES: permission denied`,
      `pi-guard: snapshot ${out.snapshotId.slice(0, 8)} is incomplete: 3 path(s) could not be read (tagged "incomplete")`,
    ]);

    // The snapshot object records them too.
    const listed = (await ok(sb, ["snapshots", "--json"])).json<any[]>();
    expect(listed.at(-1).skipped).toEqual(out.skipped);
    expect(listed.at(-1).tags).toEqual(["incomplete"]);

    // Every readable file is in it, byte for byte.
    const target = path.join(sb.root, "restored");
    await restoreJson(sb, [out.snapshotId, "--target", target]);
    const readable = (rel: string) => !locked.some((l) => rel === l || rel.startsWith(`${l}/`));
    const expected = fingerprint(treeState(sb.agentDir), readable);
    expect(Object.keys(expected).length).toBeGreaterThan(5);
    expect(fingerprint(treeState(target))).toEqual(expected);
    expect(readFileSync(path.join(target, "auth.json"), "utf8")).toBe(readFileSync(path.join(sb.agentDir, "auth.json"), "utf8"));
  });

  it("an agent dir that cannot be looked at is not \"missing\": it is named as skipped, exit 3", () => {
    const closed = sb.dir("closed");
    mkdirSync(path.join(closed, "agent"));
    spawnSync("chown", ["-R", "nobody:nogroup", closed]);
    chmodSync(closed, 0o000);
    const r = asNobody(sb, ["snapshot", "--json"], { PI_CODING_AGENT_DIR: path.join(closed, "agent") });
    expect(r.status, r.stderr).toBe(3);
    expect(JSON.parse(r.stdout).skipped).toEqual([{ root: "agent", path: "", error: "EACCES: permission denied" }]);
    expect(r.stderr).toContain("pi-guard: skipped .: EACCES: permission denied");
    chmodSync(closed, 0o755);
  });

  it("an in-place restore will not replace what its undo snapshot could not read", async () => {
    // Something to change, so that the restore has to take its undo snapshot.
    writeFileSync(path.join(sb.agentDir, "auth.json"), "{}\n");
    const r = asNobody(sb, ["restore", firstId]);
    expect(r.status, r.stderr).toBe(1);
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^pi-guard: cannot save sessions\/--locked-dir-- \(EACCES: permission denied\) and 2 more before restoring over it; nothing was restored$/);
  });
});
