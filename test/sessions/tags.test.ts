// `sessions tag` / `untag` through the real CLI: tags land in pi-guard's meta folder, filter
// `sessions list`, work on a snapshot-only session, and never touch pi's files.

import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOneLineError } from "../helpers/cli.js";
import { fingerprint, treeState } from "../helpers/tmp.js";
import { run, runOk } from "./cli.js";
import { makeWorld, type World } from "./world.js";

let w: World;
beforeAll(async () => {
  w = await makeWorld("tags");
});
afterAll(() => w?.sb.cleanup());

const ids = async (...args: string[]) => (await runOk(w.sb, ["--json", "sessions", "list", ...args])).json<{ id: string }[]>().map((r) => r.id);

describe("sessions tag / untag", () => {
  it("adds and removes tags kept in the meta folder, never in pi's files", async () => {
    const before = fingerprint(treeState(w.sb.agentDir));
    const tagged = (await runOk(w.sb, ["--json", "sessions", "tag", w.main.sessionId.slice(0, 13), "python", "decorator"])).json<{ id: string; tags: string[] }>();
    expect(tagged).toEqual({ id: w.main.sessionId, tags: ["decorator", "python"] });
    await runOk(w.sb, ["sessions", "tag", w.gone.sessionId, "python"]); // only in a snapshot now
    expect((await ids("--tag", "python")).sort()).toEqual([w.main.sessionId, w.gone.sessionId].sort());

    const file = path.join(w.sb.dataHome, "pi-guard", "meta", "tags.json");
    expect(JSON.parse(readFileSync(file, "utf8")).sessions[w.main.sessionId]).toEqual(["decorator", "python"]);

    const out = await runOk(w.sb, ["sessions", "untag", w.main.sessionId, "python"]);
    expect(out.stdout).toMatch(/#decorator/);
    expect(await ids("--tag", "python")).toEqual([w.gone.sessionId]);
    expect(await ids("--tag", "decorator")).toEqual([w.main.sessionId]);
    await runOk(w.sb, ["sessions", "untag", w.main.sessionId, "decorator"]);
    expect(await ids("--tag", "decorator")).toEqual([]);
    expect(fingerprint(treeState(w.sb.agentDir))).toEqual(before);
    expect(existsSync(path.join(w.sb.dataHome, "pi-guard", "tags.json"))).toBe(false);
  });

  it("gives one clear line for unknown ids, ambiguous prefixes and bad tag names", async () => {
    expect(expectOneLineError(await run(w.sb, ["sessions", "tag", "zzzz", "x"]), 1)).toMatch(/no session matches "zzzz"/);
    expect(expectOneLineError(await run(w.sb, ["sessions", "untag", "01a2288", "x"]), 2)).toMatch(/ambiguous/);
    expect(expectOneLineError(await run(w.sb, ["sessions", "tag", w.main.sessionId, "two words"]), 2)).toMatch(/is not a tag/);
    expect(existsSync(path.join(w.sb.dataHome, "pi-guard", "meta", "tags.json"))).toBe(true);
  });

  it("reports a tags file that cannot be written in one line, leaving the old one", async () => {
    // Tests may run as root, where permissions do not stop a write: a file where the folder should be does.
    const meta = path.join(w.sb.dataHome, "pi-guard", "meta");
    renameSync(meta, `${meta}.saved`);
    writeFileSync(meta, "not a folder");
    try {
      expect(expectOneLineError(await run(w.sb, ["sessions", "tag", w.main.sessionId, "x"]), 1)).toMatch(/cannot write .*tags\.json/);
    } finally {
      rmSync(meta);
      renameSync(`${meta}.saved`, meta);
    }
    expect(await ids("--tag", "python")).toEqual([w.gone.sessionId]);
  });
});
