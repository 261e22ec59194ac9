// restic's output as hostile input, and its errors as one line: the parsing functions alone.
import { describe, expect, it } from "vitest";
import { compareVersions, parseResticVersion } from "../../src/restic/binary.js";
import { escapePattern, excludeArgs } from "../../src/restic/backup.js";
import { resticEnv, resticError } from "../../src/restic/run.js";
import { nodeRoot, readSnapshot, rootTag } from "../../src/restic/snapshots.js";

const ID = "ab".repeat(32);

describe("restic versions", () => {
  it("reads restic's version line and nothing else", () => {
    expect(parseResticVersion("restic 0.14.0 compiled with go1.19.8 on linux/amd64\n")).toBe("0.14.0");
    expect(parseResticVersion("restic 0.17.3-dev (compiled manually) compiled with go1.23 on linux/amd64")).toBe("0.17.3");
    expect(parseResticVersion("restic version 1")).toBeUndefined();
    expect(parseResticVersion("rustic 0.14.0")).toBeUndefined();
    expect(compareVersions("0.9.6", "0.14.0")).toBeLessThan(0);
    expect(compareVersions("0.14.0", "0.14.0")).toBe(0);
    expect(compareVersions("1.0.0", "0.14.9")).toBeGreaterThan(0);
  });
});

describe("restic snapshots", () => {
  const root = { name: "agent", path: "/home/me/.pi/agent" };
  const snap = (o: object) => ({ id: ID, time: "2026-11-30T10:00:00.123456789+01:00", hostname: "h", tags: ["pi-guard", rootTag(root)], paths: [root.path], ...o });

  it("reads pi-guard's snapshots: UTC time, roots from tags, bookkeeping tags hidden", () => {
    expect(readSnapshot(snap({ tags: ["pi-guard", rootTag(root), "pre-restore"] }))).toEqual({
      id: ID,
      time: "2026-11-30T09:00:00.123Z",
      host: "h",
      user: "",
      tags: ["pre-restore"],
      roots: [root],
      paths: [root.path],
    });
    expect(readSnapshot(snap({ tags: ["other"] }))).toBeUndefined();
    expect(readSnapshot(snap({ tags: null }))).toBeUndefined();
  });

  it("a root tag counts only for one of the snapshot's own absolute paths and a safe name", () => {
    const forged = [
      rootTag({ name: "agent", path: "/etc" }),
      rootTag({ name: "../x", path: root.path }),
      "pi-guard-root:agent",
      "pi-guard-root:agent:!!!",
      rootTag({ name: "sessions", path: "relative/path" }),
    ];
    expect(readSnapshot(snap({ tags: ["pi-guard", ...forged], paths: [root.path, "relative/path"] }))?.roots).toEqual([]);
  });

  it("malformed snapshot objects are one clear error", () => {
    for (const bad of [null, 7, "x", [], { id: "short" }, snap({ id: ID.toUpperCase() }), snap({ time: "soon" }), snap({ tags: "pi-guard" }), snap({ paths: [1] })]) {
      expect(() => readSnapshot(bad), JSON.stringify(bad)).toThrow(/restic snapshots printed output pi-guard cannot read/);
    }
  });

  it("a node belongs to the deepest root holding it, never to a sibling with a common prefix", () => {
    const s = readSnapshot(
      snap({ tags: ["pi-guard", rootTag(root), rootTag({ name: "sessions", path: `${root.path}/sessions` })], paths: [root.path, `${root.path}/sessions`] }),
    )!;
    expect(nodeRoot(s, `${root.path}/auth.json`)).toEqual({ root: "agent", rel: "auth.json" });
    expect(nodeRoot(s, `${root.path}/sessions/x.jsonl`)).toEqual({ root: "sessions", rel: "x.jsonl" });
    expect(nodeRoot(s, `${root.path}-old/auth.json`)).toBeUndefined();
    expect(nodeRoot(s, root.path)).toBeUndefined();
  });
});

describe("restic excludes", () => {
  it("anchors pi-guard's relative globs at each root, the root taken literally", () => {
    expect(escapePattern("/home/a*b/[x]?\\")).toBe("/home/a\\*b/\\[x\\]\\?\\\\");
    const roots = [{ name: "agent", path: "/h/.pi/agent" }];
    expect(excludeArgs(roots, { include: [], exclude: ["bin", "**/node_modules"] })).toEqual(["--exclude", "/h/.pi/agent/bin", "--exclude", "/h/.pi/agent/**/node_modules"]);
    expect(() => excludeArgs(roots, { include: ["sessions/**"], exclude: [] })).toThrow(expect.objectContaining({ kind: "usage" }));
  });
});

describe("restic's environment and errors", () => {
  it("the repository and password go in restic's environment, and the user's own RESTIC_* cannot redirect it", () => {
    const env = resticEnv({ repository: "/r", password: "pw", env: { PATH: "/bin", RESTIC_PASSWORD_COMMAND: "evil", RESTIC_REPOSITORY_FILE: "/x", AWS_ACCESS_KEY_ID: "k" } });
    expect(env).toEqual({ PATH: "/bin", AWS_ACCESS_KEY_ID: "k", RESTIC_REPOSITORY: "/r", RESTIC_PASSWORD: "pw" });
    expect(resticEnv({ repository: "/r", passwordFile: "/pw", env: { RESTIC_PASSWORD: "other" } })).toEqual({ RESTIC_REPOSITORY: "/r", RESTIC_PASSWORD_FILE: "/pw" });
  });

  it("maps restic's stderr to one line of the right kind", () => {
    const cases: [string, number, string, RegExp][] = [
      ["Fatal: wrong password or no key found\n", 1, "wrong-password", /^wrong password/],
      ["Fatal: unable to open config file: stat /x/config: no such file or directory\nIs there a repository at the following location?\n/x\n", 1, "not-found", /no restic repository there/],
      ["Fatal: create repository at /x failed: Fatal: config file already exists\n", 1, "exists", /already exists/],
      ["unable to create lock in backend: repository is already locked exclusively by PID 7 on h by root (UID 0, GID 0)\nlock was created at 2026-11-30 10:00:00 (1s ago)\n", 1, "locked", /locked by another process .*restic unlock/],
      ["Fatal: unable to save snapshot: \u001b[31mdisk full\n", 1, "io", /^restic backup failed: unable to save snapshot: \?\[31mdisk full$/],
      ["", 1, "io", /failed: exit code 1/],
    ];
    for (const [stderr, code, kind, message] of cases) {
      const e = resticError("backup", code, stderr);
      expect(e.kind, stderr).toBe(kind);
      expect(e.message, stderr).toMatch(message);
      expect(e.message).not.toContain("\n");
    }
  });
});
