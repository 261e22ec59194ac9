// Issue 17: `restore --target` and `archive` put pi-guard's own metadata root as .pi-guard-meta/
// inside the restored agent tree, so a user who copies that tree back into ~/.pi/agent gets
// pi-guard's files in pi's dir. Now both leave it out unless --with-meta asks for it.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRepo, ok, snapshot } from "../helpers/cli.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { fingerprint, makeSandbox, type Sandbox, treeState, writePiConfigFiles } from "../helpers/tmp.js";

describe("restore --target and archive: the agent tree holds only the agent dir", () => {
  let sb: Sandbox;

  beforeAll(async () => {
    sb = makeSandbox("layout");
    writePiConfigFiles(sb.agentDir);
    const s = await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("project"), turns: [{ user: "tag me", assistant: [fauxText("ok")] }] });
    await initRepo(sb);
    await ok(sb, ["sessions", "tag", s.sessionId, "keep"]);
    await snapshot(sb);
  }, 120_000);

  afterAll(() => sb?.cleanup());

  it("restore --target: exactly the agent dir, no .pi-guard-meta; --with-meta adds it", async () => {
    const t = path.join(sb.root, "t");
    await ok(sb, ["restore", "latest", "--target", t]);
    expect(fingerprint(treeState(t))).toEqual(fingerprint(treeState(sb.agentDir)));
    expect(existsSync(path.join(t, ".pi-guard-meta"))).toBe(false);

    const m = path.join(sb.root, "m");
    await ok(sb, ["restore", "latest", "--target", m, "--with-meta"]);
    expect(existsSync(path.join(m, ".pi-guard-meta", "tags.json"))).toBe(true);
  });

  it("archive: no .pi-guard-meta/ in the tarball; --with-meta adds it", async () => {
    const a = path.join(sb.root, "a.tar.gz");
    await ok(sb, ["archive", "latest", "-o", a]);
    const names = execFileSync("tar", ["tzf", a], { encoding: "utf8" }).split("\n").filter(Boolean);
    expect(names.some((n) => n.startsWith("sessions/"))).toBe(true);
    expect(names.filter((n) => n.includes("pi-guard-meta"))).toEqual([]);

    const b = path.join(sb.root, "b.tar.gz");
    await ok(sb, ["archive", "latest", "-o", b, "--with-meta"]);
    expect(execFileSync("tar", ["tzf", b], { encoding: "utf8" })).toContain(".pi-guard-meta/tags.json");
  });
});
