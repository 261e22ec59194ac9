// `sessions merge` and `sessions delete` through the real CLI. Merge output is checked with pi's
// own in-memory loader; delete must snapshot first, move (not unlink) the file into the trash,
// and `pi-guard restore latest --session ID` must bring the exact bytes back.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOneLineError, restoreJson } from "../helpers/cli.js";
import { makePiSession } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { makeSandbox, sha256File } from "../helpers/tmp.js";
import { run, runOk } from "./cli.js";
import { makeWorld, type World } from "./world.js";

let w: World;
beforeAll(async () => {
  w = await makeWorld("delmerge");
});
afterAll(() => w?.sb.cleanup());

type Row = { id: string; name: string | null; live: string | null; deleted: boolean; lastSnapshot: { snapshotId: string } | null; tags: string[] };
const list = async () => (await runOk(w.sb, ["--json", "sessions", "list"])).json<Row[]>();
const messagesOf = (text: string) => text.trim().split("\n").slice(1).map((l) => JSON.parse(l)).filter((e) => e.type === "message");

describe("sessions merge", () => {
  it("writes a new pi-valid session with both sessions' messages in time order", async () => {
    const before = sha256File(w.main.file);
    const r = (await runOk(w.sb, ["--json", "sessions", "merge", w.main.sessionId, w.gone.sessionId])).json<{ id: string; file: string; messages: number }>();
    expect(path.dirname(path.dirname(r.file))).toBe(w.sb.sessionsDir);
    const text = readFileSync(r.file, "utf8");
    const pi = validateWithPi(text, { expectMessages: true });
    expect(pi.header.id).toBe(r.id);

    const main = (await runOk(w.sb, ["--json", "sessions", "show", w.main.sessionId])).json<{ path: { type: string; id: string }[] }>();
    const gone = (await runOk(w.sb, ["--json", "sessions", "show", w.gone.sessionId])).json<{ path: { type: string; id: string }[] }>();
    const expected = [...main.path, ...gone.path].filter((e) => e.type === "message").length;
    const merged = messagesOf(text);
    expect(merged).toHaveLength(expected);
    expect(r.messages).toBe(expected);
    // Everything but tool results (kept right after their call) is in time order, as one chain.
    const stamps = merged.filter((e) => e.message.role !== "toolResult").map((e) => Date.parse(e.timestamp));
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    merged.forEach((e, i) => expect(e.parentId).toBe(i === 0 ? null : merged[i - 1].id));
    expect(text).toContain("Deleted session question about pelicans");
    expect(text).toContain("What is in notes.txt?");

    expect(sha256File(w.main.file)).toBe(before);
    expect((await list()).find((x) => x.id === r.id)?.name).toMatch(/^merge of Alpha notes \+ /);
  });

  it("never overwrites, and rejects bad input in one line", async () => {
    const existing = path.join(w.sb.root, "taken.jsonl");
    writeFileSync(existing, "keep me\n");
    expect(expectOneLineError(await run(w.sb, ["sessions", "merge", w.main.sessionId, w.gone.sessionId, "-o", existing]), 1)).toMatch(/exists: merge never overwrites/);
    expect(readFileSync(existing, "utf8")).toBe("keep me\n");
    expect(expectOneLineError(await run(w.sb, ["sessions", "merge", w.main.sessionId, w.gone.sessionId, "-o", path.join(existing, "m.jsonl")]), 1)).toMatch(/cannot write .*taken\.jsonl\/m\.jsonl: ENOTDIR/);
    expect(expectOneLineError(await run(w.sb, ["sessions", "merge", w.main.sessionId, "zzzz"]), 1)).toMatch(/no session matches "zzzz"/);
    expect(expectOneLineError(await run(w.sb, ["sessions", "merge", "01a2288", w.main.sessionId]), 2)).toMatch(/ambiguous/);
    expect(expectOneLineError(await run(w.sb, ["sessions", "merge", w.main.sessionId, w.main.sessionId.slice(0, 12)]), 2)).toMatch(/same session/);
  });
});

describe("sessions delete", () => {
  it("snapshots (with the tags), moves the file to the trash, and restore --session brings it back", async () => {
    await runOk(w.sb, ["sessions", "tag", w.main.sessionId, "keepme"]);
    const bytes = readFileSync(w.main.file);
    const r = (await runOk(w.sb, ["--json", "sessions", "delete", w.main.sessionId.slice(0, 13)])).json<{ id: string; from: string; to: string; snapshotId: string }>();
    expect(r).toMatchObject({ id: w.main.sessionId, from: w.main.file });
    expect(existsSync(w.main.file)).toBe(false);
    expect(r.to.startsWith(path.join(w.sb.dataHome, "pi-guard", "trash") + path.sep)).toBe(true);
    expect(readFileSync(r.to).equals(bytes)).toBe(true);
    expect(JSON.parse(readFileSync(path.join(path.dirname(r.to), "origin.json"), "utf8"))).toMatchObject({ id: w.main.sessionId, path: w.main.file, snapshotId: r.snapshotId });

    const row = (await list()).find((x) => x.id === w.main.sessionId)!;
    expect(row).toMatchObject({ deleted: true, live: null, tags: ["keepme"] });
    expect(row.lastSnapshot?.snapshotId).toBe(r.snapshotId);

    // The delete's snapshot also holds pi-guard's tags (the pi-guard-meta root).
    const target = w.sb.dir("restored-meta");
    await restoreJson(w.sb, [r.snapshotId, "--target", target]);
    expect(JSON.parse(readFileSync(path.join(target, ".pi-guard-meta", "tags.json"), "utf8")).sessions[w.main.sessionId]).toEqual(["keepme"]);

    // The first 8 characters are ambiguous here (two sessions started the same minute): the full id is not.
    const back = await restoreJson(w.sb, ["latest", "--session", w.main.sessionId]);
    expect(back.files.map((f) => f.path)).toEqual([path.relative(w.sb.agentDir, w.main.file)]);
    expect(readFileSync(w.main.file).equals(bytes)).toBe(true);
    expect((await list()).find((x) => x.id === w.main.sessionId)).toMatchObject({ deleted: false, live: w.main.file });
  });

  it("gives one clear line for unknown, ambiguous, already deleted sessions and a missing repository", async () => {
    expect(expectOneLineError(await run(w.sb, ["sessions", "delete", "zzzz"]), 1)).toMatch(/no session matches "zzzz"/);
    expect(expectOneLineError(await run(w.sb, ["sessions", "delete", "01a2288"]), 2)).toMatch(/ambiguous/);
    expect(expectOneLineError(await run(w.sb, ["sessions", "delete", w.gone.sessionId]), 1)).toMatch(/not on disk any more/);

    const bare = makeSandbox("delete-norepo");
    try {
      const s = await makePiSession({ agentDir: bare.agentDir, cwd: bare.dir("p"), turns: [{ user: "hi", assistant: ["hello"] }] });
      expect(expectOneLineError(await run(bare, ["sessions", "delete", s.sessionId]), 1)).toMatch(/pi-guard init/);
      expect(existsSync(s.file)).toBe(true);
    } finally {
      bare.cleanup();
    }
  });
});
