// The restic engine against the real restic binary and real pi sessions: pi-guard drives restic,
// and the repository stays one that plain restic reads and checks.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok, type RestoreJson } from "../helpers/cli.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

const PASSWORD = "correct horse battery staple";
let sb: Sandbox;
let resticRepo: string;
let env: Record<string, string>;
/** Session A as of the first and the second snapshot (pi appended a turn in between). */
let aV1: Buffer;
let aV2: Buffer;
let aFile: string;
let aId: string;
let bFile: string;
let bId: string;
let snap1: { snapshotId: string; time: string };
let snap2: { snapshotId: string; time: string };
/** The pre-restore snapshot the in-place restore took. */
let undoId: string;

/** Plain restic, with the password through its own environment. */
function restic(args: string[]): string {
  return execFileSync("restic", args, { env: { PATH: process.env.PATH!, HOME: sb.home, RESTIC_REPOSITORY: resticRepo, RESTIC_PASSWORD: PASSWORD }, encoding: "utf8" });
}

beforeAll(async () => {
  sb = makeSandbox("restic");
  resticRepo = path.join(sb.root, "restic-repo");
  env = { ...sb.env, PI_GUARD_REPO: `restic:${resticRepo}`, PI_GUARD_PASSWORD: PASSWORD };
  writePiConfigFiles(sb.agentDir);
  await ok(env, ["init"]);
  const made = await makePiSession({
    agentDir: sb.agentDir,
    cwd: path.join(sb.root, "project-a"),
    turns: [
      { user: "first question", assistant: [fauxText("first answer")] },
      { user: "second question", assistant: [fauxText("second answer")] },
    ],
    afterTurn: async (index, file) => {
      if (index === 0) {
        snap1 = (await ok(env, ["snapshot", "--json"])).json();
        aV1 = readFileSync(file!);
        // Restic snapshot times are what pi-guard chooses by: the next one must be later.
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  });
  aFile = made.file;
  aId = made.sessionId;
  aV2 = readFileSync(aFile);
  const b = await makePiSession({ agentDir: sb.agentDir, cwd: path.join(sb.root, "project-b"), turns: [{ user: "other project", assistant: [fauxText("ok")] }] });
  bFile = b.file;
  bId = b.sessionId;
  // What pi-guard's default excludes leave out (bin/, any node_modules) must stay out of restic too.
  for (const f of ["bin/pi", "extensions/x/node_modules/dep/index.js", "node_modules/top.js"]) {
    mkdirSync(path.dirname(path.join(sb.agentDir, f)), { recursive: true });
    writeFileSync(path.join(sb.agentDir, f), "excluded");
  }
  writeFileSync(path.join(sb.agentDir, "extensions/x/kept.js"), "kept");
  snap2 = (await ok(env, ["snapshot", "--json", "--tag", "mine"])).json();
}, 120_000);

afterAll(() => sb?.cleanup());

describe("restic engine", () => {
  it("snapshots into a normal restic repository that plain restic lists and checks", () => {
    expect(aV2.length).toBeGreaterThan(aV1.length);
    const listed = JSON.parse(restic(["snapshots", "--json"])) as { id: string; tags: string[]; paths: string[] }[];
    expect(listed.map((s) => s.id)).toEqual([snap1.snapshotId, snap2.snapshotId]);
    for (const s of listed) {
      expect(s.tags).toContain("pi-guard");
      expect(s.tags.some((t) => t.startsWith("pi-guard-root:agent:"))).toBe(true);
      expect(s.paths).toContain(sb.agentDir);
    }
    expect(listed[1].tags).toContain("mine");
    expect(restic(["check", "--read-data"])).toMatch(/no errors were found/);
    // The default excludes are restic excludes anchored at the root: nothing under bin/ goes in.
    const files = restic(["ls", snap2.snapshotId]).split("\n");
    expect(files).toContain(path.join(sb.agentDir, "auth.json"));
    expect(files).toContain(path.join(sb.agentDir, "extensions/x/kept.js"));
    expect(files.filter((f) => f.includes("/bin/") || f.includes("node_modules"))).toEqual([]);
  });

  it("lists pi-guard's snapshots with their roots, and ignores restic snapshots that are not pi-guard's", async () => {
    const other = path.join(sb.root, "unrelated");
    mkdirSync(other, { recursive: true });
    writeFileSync(path.join(other, "x"), "x");
    restic(["backup", "-q", other]);
    const list = (await ok(env, ["snapshots", "--json"])).json<{ id: string; tags: string[]; roots: { name: string; path: string }[] }[]>();
    expect(list.map((s) => s.id)).toEqual([snap1.snapshotId, snap2.snapshotId]);
    expect(list[1].tags).toEqual(["mine"]);
    expect(list[0].roots).toContainEqual({ name: "agent", path: sb.agentDir });
  });

  it("restores by time: a moment between the two snapshots gives the older bytes", async () => {
    const t1 = Date.parse(snap1.time);
    const t2 = Date.parse(snap2.time);
    expect(t2).toBeGreaterThan(t1);
    const between = new Date(t1 + Math.floor((t2 - t1) / 2)).toISOString();
    const out = sb.dir("restore-between");
    const r = (await ok(env, ["restore", between, "--target", out, "--json"])).json<RestoreJson>();
    expect(r.snapshotId).toBe(snap1.snapshotId);
    const rel = path.relative(sb.agentDir, aFile);
    expect(readFileSync(path.join(out, rel)).equals(aV1)).toBe(true);
    expect(existsSync(path.join(out, path.relative(sb.agentDir, bFile)))).toBe(false);
    // auth.json keeps its 0600.
    expect(statSync(path.join(out, "auth.json")).mode & 0o777).toBe(0o600);

    const latest = sb.dir("restore-latest");
    await ok(env, ["restore", "latest", "--target", latest]);
    expect(readFileSync(path.join(latest, rel)).equals(aV2)).toBe(true);

    const only = (await ok(env, ["restore", "latest", "--path", "*.json", "--target", sb.dir("restore-path"), "--json"])).json<RestoreJson>();
    expect(only.files.map((f) => f.path).sort()).toEqual(["auth.json", "models.json", "settings.json"]);
  });

  it("restores one session by id prefix, and names the snapshot that has it when the chosen one does not", async () => {
    const out = sb.dir("restore-session");
    // pi's ids are UUIDv7: sessions made in the same second share their first 8 characters.
    const prefix = bId.slice(0, 24);
    const r = (await ok(env, ["restore", "latest", "--session", prefix, "--target", out, "--json"])).json<RestoreJson>();
    expect(r.files.map((f) => f.path)).toEqual([path.relative(sb.agentDir, bFile)]);
    expect(readFileSync(path.join(out, path.relative(sb.agentDir, bFile)))).toEqual(readFileSync(bFile));
    const missing = await cli(env, ["restore", "latest", "--session", "ffffffff", "--target", sb.dir("none")]);
    expect(expectOneLineError(missing, 1)).toMatch(/restic snapshot [0-9a-f]{8} holds no session whose id starts with "ffffffff", and no other snapshot a pi session of that id/);
    // Session B came after the first snapshot: asking that one for it names the snapshot that has it.
    const older = await cli(env, ["restore", snap1.snapshotId.slice(0, 8), "--session", bId, "--target", sb.dir("none")]);
    expect(expectOneLineError(older, 1)).toContain(`the last snapshot that does is ${snap2.snapshotId.slice(0, 8)}`);
  });

  it("restores in place without destroying: what it replaces is snapshotted first, files it does not know stay", async () => {
    const auth = path.join(sb.agentDir, "auth.json");
    const original = readFileSync(auth);
    writeFileSync(auth, '{"changed": true}');
    const extra = path.join(sb.agentDir, "notes.txt");
    writeFileSync(extra, "mine");
    const dry = (await ok(env, ["restore", "latest", "--dry-run", "--json"])).json<RestoreJson>();
    expect(dry.files.map((f) => [f.path, f.action])).toEqual([["auth.json", "replace"]]);
    expect(readFileSync(auth, "utf8")).toBe('{"changed": true}');

    const r = (await ok(env, ["restore", "latest", "--json"])).json<RestoreJson>();
    expect(r.replace).toBe(1);
    expect(r.undoSnapshot).toMatch(/^[0-9a-f]{64}$/);
    undoId = r.undoSnapshot!;
    expect(readFileSync(auth).equals(original)).toBe(true);
    expect(readFileSync(extra, "utf8")).toBe("mine");
    expect(readFileSync(aFile).equals(aV2)).toBe(true);
    // The pre-restore snapshot holds the replaced bytes; "latest" still means the real snapshot.
    const undo = sb.dir("undo");
    await ok(env, ["restore", r.undoSnapshot!.slice(0, 8), "--target", undo]);
    expect(readFileSync(path.join(undo, "auth.json"), "utf8")).toBe('{"changed": true}');
    const again = (await ok(env, ["restore", "latest", "--json"])).json<RestoreJson>();
    expect(again.snapshotId).toBe(snap2.snapshotId);
    expect(again.undoSnapshot).toBeNull();
    expect(again.replace + again.create).toBe(0);
    rmSync(extra);
  });

  it("restores in place on a new machine: roots go where this machine's config puts them, nothing to save first", async () => {
    const home = sb.dir("new-machine-home");
    const agentDir = path.join(home, "elsewhere", "agent");
    const fresh = { PI_CODING_AGENT_DIR: agentDir, HOME: home, XDG_DATA_HOME: path.join(home, "data"), XDG_CONFIG_HOME: path.join(home, "config") };
    const r = (await ok(env, ["restore", "latest", "--json"], { env: fresh })).json<RestoreJson>();
    expect(r.snapshotId).toBe(snap2.snapshotId);
    expect(r.undoSnapshot).toBeNull();
    expect(r.replace).toBe(0);
    expect(readFileSync(path.join(agentDir, path.relative(sb.agentDir, aFile))).equals(aV2)).toBe(true);
    expect(statSync(path.join(agentDir, "auth.json")).mode & 0o777).toBe(0o600);
  });

  it("sessions list --deleted shows a session deleted after the snapshot, and sessions show reads it from restic", async () => {
    const saved = readFileSync(bFile);
    rmSync(bFile);
    try {
      const deleted = (await ok(env, ["sessions", "list", "--deleted", "--json"])).json<{ id: string; deleted: boolean; project: string; lastSnapshot: { snapshotId: string } }[]>();
      expect(deleted.map((s) => s.id)).toEqual([bId]);
      expect(deleted[0].project).toBe(path.join(sb.root, "project-b"));
      // The newest snapshot holding it is the pre-restore one, taken after snap2.
      expect(deleted[0].lastSnapshot.snapshotId).toBe(undoId);
      const all = (await ok(env, ["sessions", "list", "--json"])).json<{ id: string; deleted: boolean }[]>();
      expect(all.find((s) => s.id === aId)?.deleted).toBe(false);
      const text = await ok(env, ["sessions", "list", "--deleted"]);
      expect(text.stdout).toMatch(/DELETED, in 2 snapshots/);
      // Its conversation is read back from restic (dump of the newest copy, length checked).
      const shown = (await ok(env, ["sessions", "show", bId, "--json"])).json<{ source: string; header: { id: string }; path: unknown[] }>();
      expect(shown.source).toBe(`restic snapshot ${undoId.slice(0, 8)} ${bFile}`);
      expect(shown.header.id).toBe(bId);
      expect(shown.path.length).toBeGreaterThan(0);
      expect((await ok(env, ["sessions", "show", bId])).stdout).toContain("other project");
    } finally {
      writeFileSync(bFile, saved);
    }
  });

  it("forget decides by pi-guard's policy (pre-restore snapshots kept, not counted), restic forgets and prunes; check runs restic check", async () => {
    const dry = (await ok(env, ["forget", "--keep-last", "1", "--dry-run", "--json"])).json<{ keep: { id: string }[]; remove: { id: string }[] }>();
    expect(dry.remove.map((s) => s.id)).toEqual([snap1.snapshotId]);
    // The pre-restore snapshot is kept by --keep-tag pre-restore, as pi-guard's own forget keeps it.
    expect(dry.keep.map((s) => s.id).sort()).toEqual([snap2.snapshotId, undoId].sort());
    expect(JSON.parse(restic(["snapshots", "--json"]))).toHaveLength(4);
    const done = (await ok(env, ["forget", "--keep-last", "1", "--prune", "--json"])).json<{ removed: number; pruned: boolean }>();
    expect(done).toMatchObject({ removed: 1, pruned: true });
    expect((JSON.parse(restic(["snapshots", "--json"])) as { id: string }[]).map((s) => s.id)).not.toContain(snap1.snapshotId);
    const check = (await ok(env, ["check", "--json"])).json<{ ok: boolean }>();
    expect(check.ok).toBe(true);
  });

  it("a repository another restic holds locked is one line naming restic unlock", async () => {
    // A backup reading stdin holds its (shared) lock until stdin closes; restic check wants an exclusive one.
    const holder = spawn("restic", ["backup", "--stdin", "--stdin-filename", "held"], {
      env: { PATH: process.env.PATH!, HOME: sb.home, RESTIC_REPOSITORY: resticRepo, RESTIC_PASSWORD: PASSWORD },
      stdio: ["pipe", "ignore", "ignore"],
    });
    try {
      const locks = path.join(resticRepo, "locks");
      for (let i = 0; i < 200 && readdirSync(locks).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(readdirSync(locks).length).toBeGreaterThan(0);
      const r = await cli(env, ["check"]);
      expect(expectOneLineError(r, 1)).toMatch(/restic repository is locked by another process .*restic unlock/);
    } finally {
      holder.kill("SIGKILL");
      await new Promise((r) => holder.once("close", r));
      restic(["unlock"]);
    }
  });

  it("commands that make no sense on restic, and --delete, are one-line usage errors", async () => {
    expect(expectOneLineError(await cli(env, ["prune"]), 2)).toMatch(/is a restic repository/);
    expect(expectOneLineError(await cli(env, ["restore", "latest", "--delete"]), 2)).toMatch(/--delete is not available/);
    expect(expectOneLineError(await cli(env, ["init", "--key-file-only"]), 2)).toMatch(/restic has no key files/);
    expect(expectOneLineError(await cli(env, ["init"]), 1)).toMatch(/a restic repository already exists there/);
  });
});

describe("restic engine errors", () => {
  it("an empty restic: location is a usage error", async () => {
    const r = await cli(sb.env, ["snapshots"], { env: { PI_GUARD_REPO: "restic:" } });
    expect(expectOneLineError(r, 2)).toMatch(/name the restic repository after "restic:"/);
  });

  it("restic missing from PATH is one line naming how to install it", async () => {
    const r = await cli(env, ["snapshots"], { env: { PATH: sb.dir("empty-path") } });
    expect(expectOneLineError(r, 2)).toMatch(/restic is not installed.*apt-get install restic/);
  });

  it("a wrong password is one line", async () => {
    const r = await cli(env, ["snapshots"], { env: { PI_GUARD_PASSWORD: "wrong" } });
    expect(expectOneLineError(r, 1)).toMatch(/wrong password/);
  });

  it("only a key file: restic needs a password, and says how to give one", async () => {
    const r = await cli(env, ["snapshots"], { env: { PI_GUARD_PASSWORD: undefined } });
    expect(expectOneLineError(r, 1)).toMatch(/restic repository needs a password: set PI_GUARD_PASSWORD/);
  });

  it("a local restic repository inside the agent dir is refused, as a native one is", async () => {
    const r = await cli(env, ["init"], { env: { PI_GUARD_REPO: `restic:local:${path.join(sb.agentDir, "restic")}` } });
    expect(expectOneLineError(r, 2)).toMatch(/inside the agent dir/);
    expect(existsSync(path.join(sb.agentDir, "restic"))).toBe(false);
  });

  it("a missing repository is one line", async () => {
    const r = await cli(env, ["snapshots"], { env: { PI_GUARD_REPO: `restic:${path.join(sb.root, "nowhere")}` } });
    expect(expectOneLineError(r, 1)).toMatch(/no restic repository there/);
  });

  /** A fake restic: `version` answers as `version` says, every other command prints `output`. */
  function fakeRestic(name: string, version: string, output: string, exit = 0): string {
    const dir = sb.dir(`fake-${name}`);
    const file = path.join(dir, "restic");
    writeFileSync(file, `#!/bin/sh\nif [ "$1" = version ]; then echo '${version}'; exit 0; fi\ncat <<'EOF'\n${output}\nEOF\nexit ${exit}\n`);
    chmodSync(file, 0o755);
    return dir;
  }

  it("hostile output from a fake restic is one clear error, never a crash", async () => {
    const v = "restic 0.14.0 compiled with go1.19.8 on linux/amd64";
    const cases: [string, string, string[]][] = [
      ["garbage", "\x1b[31mnot json at all", ["snapshots"]],
      ["object", '{"snapshots": 1}', ["snapshots"]],
      ["bad-id", '[{"id":"../../etc","time":"2026-01-01T00:00:00Z","tags":["pi-guard"],"paths":["/x"]}]', ["snapshots"]],
      ["bad-time", `[{"id":"${"a".repeat(64)}","time":"yesterday-ish","tags":["pi-guard"],"paths":["/x"]}]`, ["restore", "latest", "--target", "/tmp/never-written"]],
      ["no-summary", '{"message_type":"status","files_done":1,"bytes_done":2}', ["snapshot"]],
      ["two-docs", "[]\n[]", ["snapshots"]],
      ["find", '[{"snapshot":"../x","matches":[]}]', ["sessions", "list"]],
      ["find-node", `[{"snapshot":"${"b".repeat(64)}","matches":[{"path":"relative","size":-1}]}]`, ["sessions", "list"]],
    ];
    for (const [name, output, args] of cases) {
      const dir = fakeRestic(name, v, output);
      const r = await cli(env, args, { env: { PATH: `${dir}:${process.env.PATH}` } });
      expect(expectOneLineError(r, 1), name).toMatch(/restic \w+ printed output pi-guard cannot read/);
    }
    expect(existsSync("/tmp/never-written")).toBe(false);
  });

  it("a snapshot listing with paths outside the roots or with .. restores only the safe files, into the target", async () => {
    const id = "c".repeat(64);
    const tag = `pi-guard-root:agent:${Buffer.from("/r/agent").toString("base64url")}`;
    const dir = sb.dir("fake-hostile-ls");
    const file = path.join(dir, "restic");
    const snapshots = JSON.stringify([{ id, time: "2026-01-01T00:00:00Z", hostname: "h", tags: ["pi-guard", tag], paths: ["/r/agent"] }]);
    const ls = [
      { struct_type: "snapshot", id },
      { struct_type: "node", type: "file", path: "/r/agent/ok.txt", size: 3, mode: 420 },
      { struct_type: "node", type: "file", path: "/r/agent/../escape", size: 3, mode: 420 },
      { struct_type: "node", type: "file", path: "/etc/passwd", size: 3, mode: 420 },
    ].map((l) => JSON.stringify(l)).join("\n");
    writeFileSync(
      file,
      `#!/bin/sh
case "$1" in
  version) echo 'restic 0.14.0 compiled with go1.19.8 on linux/amd64' ;;
  snapshots) echo '${snapshots}' ;;
  ls) cat <<'LISTING'
${ls}
LISTING
  ;;
  restore) while [ "$1" != "--target" ]; do shift; done; mkdir -p "$2/r/agent" && printf abc > "$2/r/agent/ok.txt" ;;
  *) exit 1 ;;
esac
`,
    );
    chmodSync(file, 0o755);
    const out = path.join(sb.dir("hostile-target"), "into");
    const r = await cli(env, ["restore", "latest", "--target", out, "--json"], { env: { PATH: `${dir}:${process.env.PATH}` } });
    expect(r.code, r.stderr).toBe(1);
    const report = r.json<RestoreJson>();
    expect(report.files.map((f) => f.path)).toEqual(["ok.txt"]);
    expect(readFileSync(path.join(out, "ok.txt"), "utf8")).toBe("abc");
    expect(report.failed).toEqual([expect.objectContaining({ path: "../escape", kind: "refused" })]);
    expect(existsSync(path.join(out, "..", "escape"))).toBe(false);
  });

  /** A fake restic that answers per subcommand and records its argv and RESTIC_* environment. */
  function scriptedRestic(name: string, answers: Record<string, { out?: string; err?: string; exit?: number }>): { dir: string; log: string } {
    const dir = sb.dir(`scripted-${name}`);
    const log = path.join(dir, "log");
    const cases = Object.entries(answers)
      .map(([cmd, a]) => `  ${cmd}) cat <<'OUT'\n${a.out ?? ""}\nOUT\n${a.err ? `    echo '${a.err}' >&2\n` : ""}    exit ${a.exit ?? 0} ;;`)
      .join("\n");
    writeFileSync(
      path.join(dir, "restic"),
      `#!/bin/sh\nprintf '%s\\n' "ARGV $*" >> '${log}'\nenv | grep '^RESTIC_' >> '${log}'\ncase "$1" in\n  version) echo 'restic 0.14.0 compiled with go1.19.8 on linux/amd64' ;;\n${cases}\n  *) exit 1 ;;\nesac\n`,
    );
    chmodSync(path.join(dir, "restic"), 0o755);
    return { dir, log };
  }

  it("the password reaches restic only through its environment, never its arguments", async () => {
    const { dir, log } = scriptedRestic("argv", { snapshots: { out: "[]" } });
    await ok(env, ["snapshots"], { env: { PATH: `${dir}:${process.env.PATH}`, RESTIC_PASSWORD_COMMAND: "echo other" } });
    const text = readFileSync(log, "utf8");
    expect(text).toContain(`RESTIC_PASSWORD=${PASSWORD}`);
    expect(text).toContain(`RESTIC_REPOSITORY=${resticRepo}`);
    expect(text).not.toContain("RESTIC_PASSWORD_COMMAND");
    for (const line of text.split("\n").filter((l) => l.startsWith("ARGV"))) expect(line).not.toContain(PASSWORD);
  });

  it("a backup restic could not read completely names the path and exits 3", async () => {
    const id = "d".repeat(64);
    const tag = `pi-guard-root:agent:${Buffer.from(sb.agentDir).toString("base64url")}`;
    const { dir } = scriptedRestic("partial", {
      backup: {
        out: '{"message_type":"summary","files_new":1,"files_changed":0,"files_unmodified":0,"data_added":10,"total_bytes_processed":10,"snapshot_id":"dddddddd"}',
        err: `{"message_type":"error","error":{"Op":"open","Path":"x","Err":13},"during":"archival","item":"${sb.agentDir}/locked.json"}`,
        exit: 3,
      },
      snapshots: { out: JSON.stringify([{ id, time: new Date().toISOString(), hostname: "h", tags: ["pi-guard", tag], paths: [sb.agentDir] }]) },
      // The suspect-loss guard's `restic ls latest`: no earlier snapshot of this host (restic prints nothing, exit 0).
      ls: {},
    });
    const r = await cli(env, ["snapshot", "--json"], { env: { PATH: `${dir}:${process.env.PATH}` } });
    expect(r.code, r.stderr).toBe(3);
    expect(r.json<{ snapshotId: string; skipped: { path: string }[] }>()).toMatchObject({ snapshotId: id, skipped: [{ path: `${sb.agentDir}/locked.json` }] });
    expect(r.stderr).toContain("locked.json");
    expect(r.stderr).toMatch(/restic snapshot dddddddd is incomplete: 1 path/);
  });

  it("a restic older than 0.14.0, or something that is not restic, is refused in one line", async () => {
    const old = fakeRestic("old", "restic 0.9.6 compiled with go1.13 on linux/amd64", "[]");
    expect(expectOneLineError(await cli(env, ["snapshots"], { env: { PATH: `${old}:${process.env.PATH}` } }), 2)).toMatch(/restic 0\.9\.6 is too old: the restic engine needs restic 0\.14\.0/);
    const impostor = fakeRestic("impostor", "hello", "[]");
    expect(expectOneLineError(await cli(env, ["snapshots"], { env: { PATH: `${impostor}:${process.env.PATH}` } }), 2)).toMatch(/not a restic version/);
  });
});

describe("restic engine: hosts", () => {
  it("files backups under pi-guard's host name, and restore chooses by host as on a native repository", async () => {
    const alpha = { ...env, PI_GUARD_HOST: "alpha-host" };
    const made = (await ok(alpha, ["snapshot", "--json"])).json<{ snapshotId: string }>();
    const listed = JSON.parse(restic(["snapshots", "--json"])) as { id: string; hostname: string }[];
    expect(listed.find((s) => s.id === made.snapshotId)?.hostname).toBe("alpha-host");
    const target = path.join(sb.root, "by-host");
    const restored = (await ok(env, ["restore", "latest", "--host", "alpha-host", "--target", target, "--json"])).json<RestoreJson & { host: string }>();
    expect(restored).toMatchObject({ snapshotId: made.snapshotId, host: "alpha-host" });
    expect(readFileSync(path.join(target, path.relative(sb.agentDir, aFile)))).toEqual(readFileSync(aFile));
    // Several hosts now, none of them this one: a one-line refusal listing them.
    const elsewhere = await cli({ ...env, PI_GUARD_HOST: "gamma-host" }, ["restore", "latest", "--target", path.join(sb.root, "refused")]);
    expect(expectOneLineError(elsewhere, 2)).toMatch(/several hosts and none of this one \(gamma-host\): choose one with --host: .*alpha-host \(1\)/);
    expect(existsSync(path.join(sb.root, "refused"))).toBe(false);
  });
});
