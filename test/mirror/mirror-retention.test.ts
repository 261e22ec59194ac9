// The scheduled retention job keeps each copy of the repository in check: it forgets and prunes
// in the repository and then in every mirror (a mirror only grows otherwise), and a mirror that
// cannot be reached fails its own part while the others are still done.

import { readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli, ok } from "../helpers/cli.js";
import { copyFixtures, makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { writeConfig } from "./mirror-helpers.js";

const sandboxes: Sandbox[] = [];
afterEach(() => {
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

const ids = async (sb: Sandbox, repo: string) => (await ok(sb, ["snapshots", "--json", "--repo", repo])).json<{ id: string }[]>().map((s) => s.id);
const packs = (repo: string) => readdirSync(path.join(repo, "data"), { recursive: true }).filter((n) => String(n).length > 60).length;

describe("retention in mirrors", () => {
  it("run-scheduled retention forgets and prunes in the repository and in each mirror; a mirror that is not there fails only its part", { timeout: 60_000 }, async () => {
    const sb = makeSandbox("mirror-retention");
    sandboxes.push(sb);
    copyFixtures(sb.agentDir);
    const mirror = path.join(sb.root, "mirror");
    // A mirror that cannot be reached or made: its folder would be under a file.
    writeFileSync(path.join(sb.root, "a-file"), "not a folder");
    const missing = path.join(sb.root, "a-file", "mirror");
    writeConfig(sb, { mirrors: [mirror], retention: { keepLast: 1 } });
    await ok(sb, ["init"]);
    for (let i = 0; i < 3; i++) {
      // A change each time, so that every snapshot has data of its own that prune can drop.
      copyFixtures(path.join(sb.agentDir, "sessions", `--copy${i}--`));
      await ok(sb, ["snapshot", "--json"]);
    }
    expect(await ids(sb, mirror)).toHaveLength(3);
    const mirrorPacks = packs(mirror);

    const ran = (await ok(sb, ["run-scheduled", "--job", "retention", "--json"])).json<{ ran: { ok: boolean; summary: string }[] }>().ran[0];
    expect(ran.ok).toBe(true);
    const parts = ran.summary.split(" | ");
    expect(parts).toHaveLength(2);
    expect(parts[0]).toMatch(new RegExp(`^${sb.repo}: forgot 2 snapshot\\(s\\), kept 1; deleted `));
    expect(parts[1]).toMatch(new RegExp(`^${mirror}: forgot 2 snapshot\\(s\\), kept 1; deleted `));
    const newest = await ids(sb, sb.repo);
    expect(newest).toHaveLength(1);
    expect(await ids(sb, mirror)).toEqual(newest);
    expect(packs(mirror)).toBeLessThan(mirrorPacks);
    expect((await ok(sb, ["check", "--all", "--read-data", "--json"])).code).toBe(0);

    // A mirror that cannot be reached: its part fails, named; the repository and the other mirror are done.
    writeConfig(sb, { mirrors: [missing, mirror], retention: { keepLast: 1 } });
    // The snapshot is saved, and shipped to the mirror that is there; the missing one fails it (exit 1).
    copyFixtures(path.join(sb.agentDir, "sessions", "--copy3--"));
    expect((await cli(sb, ["snapshot", "--json"])).code).toBe(1);
    const failed = await cli(sb, ["run-scheduled", "--job", "retention", "--json"]);
    expect(failed.code).toBe(1);
    const after = failed.json<{ ran: { ok: boolean; summary: string }[] }>().ran[0];
    expect(after.ok).toBe(false);
    const [repoPart, missingPart, mirrorPart] = after.summary.split(" | ");
    expect(repoPart).toMatch(new RegExp(`^${sb.repo}: forgot 1 snapshot\\(s\\), kept 1; `));
    expect(missingPart).toMatch(new RegExp(`^${missing}: FAILED: \\S`));
    expect(mirrorPart).toMatch(new RegExp(`^${mirror}: forgot 1 snapshot\\(s\\), kept 1; `));
  });
});
