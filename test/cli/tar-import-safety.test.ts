// `snapshot --from-tar` treats the archive as hostile: entries that could make a later restore
// write outside its target are refused, the whole archive with them, and each one is named.
// An import is tagged "import", records when it ran, and is never "latest" nor a parent.
// The tars are crafted with python3's tarfile module, not with our own writer.

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, initRepo, ok, restoreJson, snapshot } from "../helpers/cli.js";
import { listFiles, makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

interface Entry {
  name: string;
  type?: "file" | "dir" | "symlink" | "hardlink" | "fifo" | "chardev";
  data?: string;
  link?: string;
  /** Seconds since the epoch. */
  mtime?: number;
  /** Raw bytes of the name, latin-1 (for names that are not UTF-8). */
  latin1?: boolean;
}

const MAKE_TAR = `
import io, json, sys, tarfile
out, entries = sys.argv[1], json.loads(sys.argv[2])
types = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
         "hardlink": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE, "chardev": tarfile.CHRTYPE}
with tarfile.open(out, "w", format=tarfile.GNU_FORMAT, encoding="latin-1") as t:
    for e in entries:
        ti = tarfile.TarInfo(e["name"])
        ti.type = types[e.get("type", "file")]
        ti.linkname = e.get("link", "")
        ti.mtime = e.get("mtime", 1764500000)
        ti.mode = 0o755 if ti.type == tarfile.DIRTYPE else 0o644
        if ti.type == tarfile.REGTYPE:
            data = e.get("data", "x").encode()
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
        else:
            t.addfile(ti)
`;

function makeTar(file: string, entries: Entry[]): string {
  const r = spawnSync("python3", ["-c", MAKE_TAR, file, JSON.stringify(entries)], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`python3 tarfile failed: ${r.stderr}`);
  return file;
}

const SAFE: Entry[] = [
  { name: "auth.json", data: '{"evil":"tar copy"}\n' },
  { name: "sessions", type: "dir" },
  { name: "sessions/--p--", type: "dir" },
  { name: "sessions/--p--/s.jsonl", data: '{"type":"session","version":3,"id":"x"}\n' },
];

describe("snapshot --from-tar refuses unsafe archives", () => {
  let sb: Sandbox;
  let outside: string;

  beforeAll(async () => {
    sb = makeSandbox("tarsafe");
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);
    await snapshot(sb);
    outside = sb.dir("outside");
  });
  afterAll(() => sb?.cleanup());

  const cases: [string, Entry[], string][] = [
    ["../ at the start", [{ name: "../../x" }], '"../../x" has a ".." component'],
    ["../ inside", [{ name: "sessions/../../x" }], '"sessions/../../x" has a ".." component'],
    ["an absolute path", [{ name: "/tmp/pi-guard-abs-x" }], '"/tmp/pi-guard-abs-x" is an absolute path'],
    ["a file under a symlink", [{ name: "sessions/link", type: "symlink", link: "/tmp" }, { name: "sessions/link/f" }], '"sessions/link/f" lies under "sessions/link", which the archive made a symlink'],
    ["a hard link", [{ name: "sessions/hl", type: "hardlink", link: "auth.json" }], '"sessions/hl" is a hard link (to "auth.json")'],
    ["a fifo", [{ name: "sessions/fifo", type: "fifo" }], '"sessions/fifo" is a fifo'],
    ["a device", [{ name: "sessions/null", type: "chardev" }], '"sessions/null" is a character device'],
    ["a name that is not UTF-8", [{ name: "sessions/caf\u00e9.jsonl" }], "is not valid UTF-8"],
    ["an empty component", [{ name: "sessions//x.jsonl" }], '"sessions//x.jsonl" has an empty component'],
    ["a name too long for any file system", [{ name: `sessions/${"n".repeat(256)}.jsonl` }], "has a name component longer than 255 bytes"],
    ["a name given twice", [{ name: "auth.json", data: "{}" }], '"auth.json" appears twice'],
    ["a symlink over a folder", [{ name: "extensions/a.ts" }, { name: "extensions", type: "symlink", link: "/tmp" }], '"extensions" is not a folder, but earlier entries lie under it'],
    ["a file under a file", [{ name: "auth.json/x" }], '"auth.json/x" lies under "auth.json", which the archive made a file'],
  ];

  for (const [label, bad, expected] of cases) {
    it(`refuses ${label}, imports nothing, names the entry`, async () => {
      const file = makeTar(path.join(sb.root, `${label.replace(/\W+/g, "-")}.tar`), [...SAFE, ...bad]);
      const before = (await ok(sb, ["snapshots", "--json"])).json().length;
      const packsBefore = listFiles(path.join(sb.repo, "data")).length;
      const r = await cli(sb, ["snapshot", "--from-tar", file]);
      expect(r.code, r.stderr).toBe(1);
      const lines = r.stderr.trim().split("\n");
      expect(lines[0]).toMatch(/^pi-guard: refusing to import .*: 1 unsafe entry \(nothing was imported\)$/);
      expect(lines).toHaveLength(2);
      expect(lines[1]).toContain(expected);
      expect(r.stderr).not.toMatch(/^\s+at /m);
      expect((await ok(sb, ["snapshots", "--json"])).json()).toHaveLength(before);
      expect(listFiles(path.join(sb.repo, "data"))).toHaveLength(packsBefore);
      expect(listFiles(path.join(sb.repo, "tmp"))).toEqual([]);
    });
  }

  it("names every unsafe entry of an archive, one line each", async () => {
    const bad: Entry[] = [
      { name: "../../escape" },
      { name: "sessions/../../escape2" },
      { name: "/tmp/pi-guard-abs-escape" },
      { name: "sessions/link", type: "symlink", link: outside },
      { name: "sessions/link/planted.jsonl" },
      { name: "sessions/hl", type: "hardlink", link: "auth.json" },
    ];
    const file = makeTar(path.join(sb.root, "evil.tar"), [...SAFE, ...bad]);
    const r = await cli(sb, ["snapshot", "--from-tar", file]);
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split("\n");
    expect(lines[0]).toContain("5 unsafe entries (nothing was imported)");
    expect(lines.slice(1).map((l) => l.trim().split(" ")[0])).toEqual(
      ['"../../escape"', '"sessions/../../escape2"', '"/tmp/pi-guard-abs-escape"', '"sessions/link/planted.jsonl"', '"sessions/hl"'],
    );
    // Nothing anywhere: the import never wrote, and a restore of "latest" is still our own snapshot.
    expect(listFiles(outside)).toEqual([]);
    expect(existsSync("/tmp/pi-guard-abs-escape")).toBe(false);
    expect(existsSync(path.join(sb.root, "escape"))).toBe(false);
  });

  it("an import dated in the future is not latest, is tagged import, records its import time", async () => {
    const ownAuth = readFileSync(path.join(sb.agentDir, "auth.json"), "utf8");
    const future = Math.floor(Date.parse("2031-01-01T00:00:00Z") / 1000);
    const file = makeTar(path.join(sb.root, "future.tar"), SAFE.map((e) => ({ ...e, mtime: future })));
    const startedAt = Date.now();
    const imp = await snapshot(sb, ["--from-tar", file]);
    expect(imp.time).toBe("2031-01-01T00:00:00.000Z");
    const listed = (await ok(sb, ["snapshots", "--json"])).json<any[]>();
    const rec = listed.find((s) => s.id === imp.snapshotId);
    expect(rec.tags).toEqual(["import"]);
    expect(Date.parse(rec.imported)).toBeGreaterThanOrEqual(startedAt - 1000);
    expect(Date.parse(rec.imported)).toBeLessThanOrEqual(Date.now());

    // latest is our own snapshot, not the import: auth.json comes back as ours.
    const target = path.join(sb.root, "latest-target");
    const r = await restoreJson(sb, ["latest", "--target", target]);
    expect(r.snapshotId).not.toBe(imp.snapshotId);
    expect(readFileSync(path.join(target, "auth.json"), "utf8")).toBe(ownAuth);
    // Asked for by id, the import is there.
    const byId = path.join(sb.root, "import-target");
    await restoreJson(sb, [imp.snapshotId.slice(0, 12), "--target", byId]);
    expect(readFileSync(path.join(byId, "auth.json"), "utf8")).toBe('{"evil":"tar copy"}\n');

    // The next disk snapshot's parent is the previous disk snapshot, never the import.
    const next = await snapshot(sb);
    expect(next.parent).not.toBe(imp.snapshotId);
    expect(next.parent).toBe(r.snapshotId);
  });

  it("an import of an absolute-path tar made by GNU tar --absolute-names is refused", async () => {
    const file = path.join(sb.root, "gnu-abs.tar");
    const t = spawnSync("tar", ["--absolute-names", "-cf", file, path.join(sb.agentDir, "auth.json")], { encoding: "utf8" });
    expect(t.status, t.stderr).toBe(0);
    const r = await cli(sb, ["snapshot", "--from-tar", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`"${path.join(sb.agentDir, "auth.json")}" is an absolute path`);
  });

  it("setuid bits in an archive are not kept", async () => {
    const file = path.join(sb.root, "suid.tar");
    const r = spawnSync("python3", ["-c", `
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    ti = tarfile.TarInfo("auth.json"); ti.size = 2; ti.mode = 0o4755
    t.addfile(ti, io.BytesIO(b"{}"))
`, file], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const imp = await snapshot(sb, ["--from-tar", file]);
    const target = path.join(sb.root, "suid-target");
    await restoreJson(sb, [imp.snapshotId, "--target", target]);
    const { statSync } = await import("node:fs");
    expect(statSync(path.join(target, "auth.json")).mode & 0o7777).toBe(0o755);
  });
});
