// package.json promises Node >= the engines floor. That promise holds only if every dependency
// agrees (npm warns EBADENGINE otherwise) and the CLI really runs on the oldest Node admitted: a
// backup, a restore, the HTML export (sanitize-html) and a search (better-sqlite3) on that Node.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, collect, PROJECT_ROOT } from "../helpers/cli.js";
import { copyFixtures, makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { floorNode, floorVersion } from "../helpers/tools.js";

// npm's own range matcher (a dependency of npm and of this project's tools; it ships no types).
const semver = createRequire(import.meta.url)("semver") as { satisfies(version: string, range: string): boolean };

describe("the Node floor in package.json's engines", () => {
  let sb: Sandbox;
  let node: string;
  beforeAll(() => {
    sb = makeSandbox("floor");
    node = floorNode();
  });
  afterAll(() => sb?.cleanup());
  const run = (args: string[]) => collect(spawn(node, [BIN, ...args], { cwd: sb.root, env: sb.env, stdio: ["ignore", "pipe", "pipe"] }));

  it("every installed package admits the floor (no EBADENGINE on Node " + floorVersion() + ")", () => {
    const lock = JSON.parse(readFileSync(path.join(PROJECT_ROOT, "package-lock.json"), "utf8"));
    const refusing = Object.entries(lock.packages as Record<string, { version?: string; engines?: { node?: string } }>)
      .filter(([name, p]) => name && typeof p.engines?.node === "string" && !semver.satisfies(floorVersion(), p.engines.node))
      .map(([name, p]) => `${name}@${p.version} wants node ${p.engines!.node}`);
    expect(refusing).toEqual([]);
  });

  it("the test binary is that Node", async () => {
    const r = await collect(spawn(node, ["--version"], { stdio: ["ignore", "pipe", "pipe"] }));
    expect(r.stdout.trim()).toBe(`v${floorVersion()}`);
  });

  it("backs up, restores byte-identical, exports HTML and searches on it", async () => {
    copyFixtures(sb.agentDir);
    const snap = await run(["snapshot", "--init", "--json"]);
    expect(snap.code, snap.stderr).toBe(0);
    const target = sb.dir("restored");
    const restored = await run(["restore", "latest", "--target", target, "--json"]);
    expect(restored.code, restored.stderr).toBe(0);
    const rel = path.join("sessions", "--some-cwd--", "pi-v3-branched.jsonl");
    expect(readFileSync(path.join(target, rel))).toEqual(readFileSync(path.join(sb.agentDir, rel)));
    const list = await run(["sessions", "list", "--json"]);
    expect(list.code, list.stderr).toBe(0);
    const id = (list.json() as { id: string; file?: string }[]).find((s) => JSON.stringify(s).includes("pi-v3-branched"))!.id;
    const html = await run(["export", id, "--format", "html"]);
    expect(html.code, html.stderr).toBe(0);
    expect(html.stdout).toMatch(/^<!doctype html>/i);
    const search = await run(["sessions", "search", "the", "--json"]);
    expect(search.code, search.stderr).toBe(0);
  });
});
