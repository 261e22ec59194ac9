// What a snapshot takes: the whole agent dir (unknown files too) minus bin/, git/ and package
// trees; config-file includes/excludes; and a sessions dir moved out of the agent dir.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { initRepo, ok, restoreJson, snapshot } from "../helpers/cli.js";
import { makeSandbox, paths, treeState, type Sandbox } from "../helpers/tmp.js";

function write(root: string, rel: string, text = rel): void {
  mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  writeFileSync(path.join(root, rel), text);
}

describe("sources", () => {
  let sb: Sandbox;
  afterEach(() => sb.cleanup());

  it("backs up everything in the agent dir except bin/, git/ and node_modules", async () => {
    sb = makeSandbox("sources");
    const keep = ["sessions/--p--/a.jsonl", "auth.json", "models.json", "settings.json", "keybindings.json", "extensions/x/index.ts", "pi-hermes-memory/sessions.db", "npm/package.json"];
    const skip = ["bin/fd", "git/github.com/x/y/README", "npm/node_modules/left-pad/index.js", "extensions/x/node_modules/dep/index.js"];
    for (const rel of [...keep, ...skip]) write(sb.agentDir, rel);
    await initRepo(sb);
    await snapshot(sb);
    const target = sb.dir("out");
    await restoreJson(sb, ["latest", "--target", target]);
    const restored = paths(treeState(target));
    expect(restored.sort()).toEqual([...keep].sort());
  });

  it("honours includes and excludes from the config file", async () => {
    sb = makeSandbox("sources-config");
    for (const rel of ["sessions/--p--/a.jsonl", "auth.json", "cache/big.bin", "extensions/x/index.ts"]) write(sb.agentDir, rel);
    mkdirSync(path.join(sb.configHome, "pi-guard"), { recursive: true });
    writeFileSync(path.join(sb.configHome, "pi-guard", "config.json"), JSON.stringify({ sources: { exclude: ["cache/**"], include: ["sessions/**", "*.json"] } }));
    await initRepo(sb);
    const snap = await snapshot(sb);
    expect(snap.files).toBe(2);
    const target = sb.dir("out");
    await restoreJson(sb, ["latest", "--target", target]);
    expect(paths(treeState(target)).sort()).toEqual(["auth.json", "sessions/--p--/a.jsonl"]);
  });

  it("takes a sessions dir moved out of the agent dir as a second root and restores it in place", async () => {
    sb = makeSandbox("sources-moved");
    const moved = sb.dir("elsewhere-sessions");
    write(sb.agentDir, "auth.json", "{}");
    write(moved, "2026-11-30T10-00-00-000Z_0b9c5c3e-0000-4000-8000-000000000001.jsonl", '{"type":"session"}\n');
    const env = { PI_CODING_AGENT_SESSION_DIR: moved };
    await initRepo(sb);
    const snap = await snapshot(sb, [], { env });
    expect(snap.files).toBe(2);
    const listed = (await ok(sb, ["snapshots", "--json"], { env })).json<{ roots: { name: string; path: string }[] }[]>();
    expect(listed[0].roots).toEqual([
      { name: "agent", path: sb.agentDir },
      { name: "sessions", path: moved },
      { name: "pi-guard-meta", path: path.join(sb.dataHome, "pi-guard", "meta") },
    ]);
    const sessionFile = path.join(moved, "2026-11-30T10-00-00-000Z_0b9c5c3e-0000-4000-8000-000000000001.jsonl");
    rmSync(sessionFile);
    const r = await restoreJson(sb, ["latest"], { env });
    expect(r.create).toBe(1);
    expect(readFileSync(sessionFile, "utf8")).toBe('{"type":"session"}\n');
  });
});
