// Mirrors between two folders, through the built CLI: a snapshot is shipped to the mirror of the
// config file, the mirror alone restores it byte for byte under the same id, `copy` copies all or
// only the newest snapshots, a location holding another repository is refused in one line, and a
// copy killed with SIGKILL leaves the destination valid with nothing half-visible.
// About 15-25 s: the kill test copies 56 MiB (several 16 MiB packs) so that it is killed mid-copy.

import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok, spawnCli, collect } from "../helpers/cli.js";
import { copyFixtures, fingerprint, makeSandbox, treeState, type Sandbox } from "../helpers/tmp.js";
import { writeConfig } from "./mirror-helpers.js";

const sandboxes: Sandbox[] = [];
afterEach(() => {
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

function setup(label: string, mirrors: string[] = []): Sandbox {
  const sb = makeSandbox(label);
  sandboxes.push(sb);
  copyFixtures(sb.agentDir);
  writeConfig(sb, { mirrors });
  return sb;
}


const ids = async (sb: Sandbox, repo: string) => (await ok(sb, ["snapshots", "--json", "--repo", repo])).json<{ id: string }[]>().map((s) => s.id);

describe("mirrors between folders", () => {
  it("snapshot ships to the mirror; the mirror alone restores it byte-identical under the same id", { timeout: 60_000 }, async () => {
    const sb = setup("mirror-ship");
    const mirror = path.join(sb.root, "mirror");
    writeConfig(sb, { mirrors: [mirror] });
    await ok(sb, ["init"]);
    const first = (await ok(sb, ["snapshot", "--json"])).json();
    expect(first.mirrors).toHaveLength(1);
    expect(first.mirrors[0]).toMatchObject({ mirror, ok: true, created: true });
    expect(first.mirrors[0].copy.copied).toEqual([first.snapshotId]);
    expect(first.mirrors[0].copy.blobsCopied).toBeGreaterThan(0);

    writeFileSync(path.join(sb.agentDir, "extra.txt"), randomBytes(10_000));
    const second = await ok(sb, ["snapshot"]);
    expect(second.stdout).toMatch(new RegExp(`mirror ${mirror.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: 1 snapshot\\(s\\) copied`));
    const secondId = (await ids(sb, sb.repo)).at(-1)!;
    expect(await ids(sb, mirror)).toEqual(await ids(sb, sb.repo));

    // The mirror holds the same config and keys: the same key file opens it.
    const check = (await ok(sb, ["check", "--read-data", "--json", "--repo", mirror])).json();
    expect(check.ok).toBe(true);
    const dest = sb.dir("restored");
    const restored = (await ok(sb, ["restore", "latest", "--json", "--target", dest, "--repo", mirror])).json();
    expect(restored.snapshotId).toBe(secondId);
    expect(fingerprint(treeState(dest))).toEqual(fingerprint(treeState(sb.agentDir)));
  });

  it("copy of all snapshots and of --latest; a second copy has nothing to do", { timeout: 60_000 }, async () => {
    const sb = setup("mirror-copy");
    await ok(sb, ["init"]);
    for (let i = 0; i < 3; i++) {
      writeFileSync(path.join(sb.agentDir, `note-${i}.txt`), randomBytes(50_000));
      await ok(sb, ["snapshot"]);
    }
    const all = await ids(sb, sb.repo);
    expect(all).toHaveLength(3);
    const m = path.join(sb.root, "copy-dest");
    const latest = (await ok(sb, ["copy", "--to", m, "--latest", "--json"])).json();
    expect(latest[0].copy).toMatchObject({ selected: 1, copied: [all[2]], present: [], failed: [] });
    expect(await ids(sb, m)).toEqual([all[2]]);
    const rest = (await ok(sb, ["copy", "--to", m, "--json"])).json();
    expect(rest[0].copy).toMatchObject({ selected: 3, copied: [all[0], all[1]], present: [all[2]], failed: [] });
    expect(await ids(sb, m)).toEqual(all);
    const again = (await ok(sb, ["copy", "--to", m, "--json"])).json();
    expect(again[0].copy).toMatchObject({ copied: [], present: all, blobsCopied: 0, packsWritten: 0 });
    expect((await ok(sb, ["check", "--read-data", "--json", "--repo", m])).json().ok).toBe(true);
    // The oldest snapshot (copied by the second run, after --latest) restores from the copy as from the original.
    for (const id of [all[0]]) {
      const a = sb.dir(`a-${id.slice(0, 8)}`);
      const b = sb.dir(`b-${id.slice(0, 8)}`);
      await ok(sb, ["restore", id, "--target", a]);
      await ok(sb, ["restore", id, "--target", b, "--repo", m]);
      expect(fingerprint(treeState(b))).toEqual(fingerprint(treeState(a)));
    }
  });

  it("copy to a location that holds another repository is refused in one line, and writes nothing there", { timeout: 60_000 }, async () => {
    const sb = setup("mirror-foreign");
    await ok(sb, ["init"]);
    await ok(sb, ["snapshot"]);
    const other = path.join(sb.root, "other-repo");
    await ok(sb, ["init", "--repo", other]);
    const before = readdirSync(other).sort();
    const r = await cli(sb, ["copy", "--to", other]);
    const line = expectOneLineError(r, 1);
    expect(line).toMatch(/holds repository [0-9a-f]{8}, not [0-9a-f]{8}/);
    expect(readdirSync(other).sort()).toEqual(before);
    expect(existsSync(path.join(other, "snapshots")) ? readdirSync(path.join(other, "snapshots")) : []).toEqual([]);
    // Without a destination: a usage error.
    expectOneLineError(await cli(sb, ["copy"]), 2);
  });

  it("a snapshot whose data is damaged in the source is named and not copied; the others are", { timeout: 60_000 }, async () => {
    const sb = setup("mirror-src-damage");
    await ok(sb, ["init"]);
    await ok(sb, ["snapshot"]);
    const packsBefore = new Set(readdirSync(path.join(sb.repo, "data"), { recursive: true }).map(String));
    writeFileSync(path.join(sb.agentDir, "second.bin"), randomBytes(300_000));
    await ok(sb, ["snapshot"]);
    const [first, second] = await ids(sb, sb.repo);
    // The second snapshot's data pack: the largest new one.
    const fresh = readdirSync(path.join(sb.repo, "data"), { recursive: true }).map(String).filter((f) => /[0-9a-f]{64}$/.test(f) && !packsBefore.has(f));
    const pack = fresh.map((f) => path.join(sb.repo, "data", f)).sort((a, b) => statSync(b).size - statSync(a).size)[0];
    const buf = readFileSync(pack);
    buf[1000] ^= 0x01;
    writeFileSync(pack, buf);
    const m = path.join(sb.root, "src-damage-dest");
    const r = await cli(sb, ["copy", "--to", m, "--json"]);
    expect(r.code).toBe(3);
    const report = r.json()[0].copy;
    expect(report.copied).toEqual([first]);
    expect(report.failed.map((f: { id: string }) => f.id)).toEqual([second]);
    expect(r.stderr).toContain(`snapshot ${second.slice(0, 8)} cannot be copied from ${sb.repo}`);
    expect(await ids(sb, m)).toEqual([first]);
    expect((await ok(sb, ["check", "--read-data", "--json", "--repo", m])).json().ok).toBe(true);
  });

  it("a copy killed with SIGKILL after its first pack leaves the destination valid, with no snapshot visible; the next copy completes", { timeout: 120_000 }, async () => {
    const sb = setup("mirror-kill");
    await ok(sb, ["init"]);
    // Random bytes: several 16 MiB packs, so the copy is still writing when it is killed.
    writeFileSync(path.join(sb.agentDir, "big.bin"), randomBytes(56 * 1024 * 1024));
    await ok(sb, ["snapshot"]);
    const m = path.join(sb.root, "killed-dest");
    const child = spawnCli(sb, ["copy", "--to", m]);
    const done = collect(child);
    const packs = () => (existsSync(path.join(m, "data")) ? readdirSync(path.join(m, "data"), { recursive: true }).filter((f) => /[0-9a-f]{64}$/.test(String(f))).length : 0);
    while (packs() === 0 && child.exitCode === null) await new Promise((r) => setTimeout(r, 10));
    child.kill("SIGKILL");
    const killed = await done;
    expect(killed.signal).toBe("SIGKILL");
    expect(await ids(sb, m)).toEqual([]);
    const check = (await ok(sb, ["check", "--json", "--repo", m])).json();
    expect(check.ok).toBe(true);
    const copy = (await ok(sb, ["copy", "--to", m, "--json"])).json();
    expect(copy[0].copy.copied).toHaveLength(1);
    expect((await ok(sb, ["check", "--read-data", "--json", "--repo", m])).json().ok).toBe(true);
    const a = sb.dir("ka");
    await ok(sb, ["restore", "latest", "--target", a, "--repo", m]);
    expect(fingerprint(treeState(a))).toEqual(fingerprint(treeState(sb.agentDir)));
  });
});
