// `sessions merge` and `sessions delete` through the real CLI. Merge output is checked with pi's
// own in-memory loader; delete must snapshot first, move (not unlink) the file into the trash,
// and `pi-guard restore latest --session ID` must bring the exact bytes back.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOneLineError, restoreJson, snapshot } from "../helpers/cli.js";
import { fauxToolCall, forkPiSession, makePiSession } from "../helpers/pi-factory.js";
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

type Entry = { type: string; id: string; parentId: string | null; message?: { role: string; content?: unknown; toolCallId?: string } };
const identity = ({ parentId: _p, ...rest }: Entry) => JSON.stringify(rest);
const showPath = async (id: string) => (await runOk(w.sb, ["--json", "sessions", "show", id])).json<{ path: Entry[] }>().path.filter((e) => e.type === "message");

/**
 * A fork and its parent merged: every message once (no duplicate ids, no repeated tool-call ids,
 * each tool result paired with one call above it), and each source's branch is a path of the
 * merged tree, so the two join at the fork point.
 */
async function checkForkMerge(a: string, b: string): Promise<{ shared: number; messages: number }> {
  const [pa, pb] = [await showPath(a), await showPath(b)];
  const r = (await runOk(w.sb, ["--json", "sessions", "merge", a, b, "-o", path.join(w.sb.dir("merged"), `${a}-${b}.jsonl`)])).json<{ file: string; messages: number; shared: number }>();
  const text = readFileSync(r.file, "utf8");
  validateWithPi(text, { expectMessages: true }); // also rejects duplicate entry ids
  const entries = text.trim().split("\n").slice(1).map((l) => JSON.parse(l) as Entry);
  const messages = entries.filter((e) => e.type === "message");
  const union = new Set([...pa, ...pb].map(identity));
  expect(messages.map(identity).sort()).toEqual([...union].sort());
  expect(r.messages).toBe(union.size);
  expect(r.shared).toBe(pa.length + pb.length - union.size);

  const byId = new Map(entries.map((e) => [e.id, e]));
  const ancestors = (e: Entry) => {
    const out: Entry[] = [];
    for (let p = e.parentId ? byId.get(e.parentId) : undefined; p; p = p.parentId ? byId.get(p.parentId) : undefined) out.push(p);
    return out;
  };
  const callIds = (e: Entry) => (Array.isArray(e.message?.content) ? (e.message!.content as { type: string; id: string }[]).filter((c) => c.type === "toolCall").map((c) => c.id) : []);
  const calls = messages.flatMap(callIds);
  expect(new Set(calls).size).toBe(calls.length);
  for (const result of messages.filter((e) => e.message?.role === "toolResult")) {
    expect(calls.filter((c) => c === result.message!.toolCallId)).toHaveLength(1);
    expect(ancestors(result).some((x) => callIds(x).includes(result.message!.toolCallId!))).toBe(true);
  }
  // Each source's conversation is one branch of the merged tree, in its own order.
  if (r.shared > 0) {
    // Joined at the fork point: each source's conversation is one branch of the merged tree.
    for (const source of [pa, pb]) {
      const end = messages.find((m) => identity(m) === identity(source[source.length - 1]))!;
      expect([end, ...ancestors(end)].reverse().filter((e) => e.type === "message").map(identity)).toEqual(source.map(identity));
    }
  } else {
    messages.forEach((e, i) => expect(e.parentId).toBe(i === 0 ? null : messages[i - 1].id));
  }
  return { shared: r.shared, messages: r.messages };
}

describe("sessions merge of a fork and its parent", () => {
  it("joins a /fork (pi's createBranchedSession) at its fork point: shared messages once, each continuation a branch", async () => {
    const s = await makePiSession({
      agentDir: w.sb.agentDir,
      cwd: w.sb.dir("fork-project"),
      turns: [
        { user: "Read the config", assistant: [[fauxToolCall("read", { path: "config.json" })], "It is empty."] },
        { user: "Then list the folder", assistant: [[fauxToolCall("bash", { command: "ls" })], "Nothing there."] },
        { user: "Parent goes on", assistant: ["Parent's own answer."] },
      ],
      fork: { atTurn: 1, turns: [{ user: "The fork goes elsewhere", assistant: [[fauxToolCall("bash", { command: "pwd" })], "Somewhere else."] }] },
    });
    const r = await checkForkMerge(s.sessionId, s.fork!.sessionId);
    expect(r.shared).toBe(8); // two turns of user, tool call, tool result, answer
  });

  it("merges the world's /fork, whose copy pi itself cut at a labelled entry, without repeating anything", async () => {
    // pi 0.73.1's createBranchedSession drops label entries from the copied path without
    // re-parenting their children, so pi's (and our) branch of that fork starts after the label.
    await checkForkMerge(w.main.sessionId, w.main.fork!.sessionId);
  });

  it("joins a `pi --fork` copy (SessionManager.forkFrom) with new turns", async () => {
    const fork = await forkPiSession({ agentDir: w.sb.agentDir, cwd: w.sb.dir("forked-project"), parentFile: w.main.file, turns: [{ user: "Go on in the copy", assistant: [[fauxToolCall("bash", { command: "echo copy" })], "Copied and continued."] }] });
    const r = await checkForkMerge(fork.sessionId, w.main.sessionId);
    expect(r.shared).toBeGreaterThan(0);
  });

  it("joins the real pi 0.73.1 fixtures (forked.jsonl and its parent branched.jsonl)", async () => {
    const idOf = (name: string) => JSON.parse(readFileSync(w.fixtures.get(name)!, "utf8").split("\n")[0]).id as string;
    const r = await checkForkMerge(idOf("branched.jsonl"), idOf("forked.jsonl"));
    expect(r.shared).toBe(4);
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
    await restoreJson(w.sb, [r.snapshotId, "--target", target, "--with-meta"]);
    expect(JSON.parse(readFileSync(path.join(target, ".pi-guard-meta", "tags.json"), "utf8")).sessions[w.main.sessionId]).toEqual(["keepme"]);

    // The first 8 characters are ambiguous here (two sessions started the same minute): the full id is not.
    const back = await restoreJson(w.sb, ["latest", "--session", w.main.sessionId]);
    expect(back.files.map((f) => f.path)).toEqual([path.relative(w.sb.agentDir, w.main.file)]);
    expect(readFileSync(w.main.file).equals(bytes)).toBe(true);
    expect((await list()).find((x) => x.id === w.main.sessionId)).toMatchObject({ deleted: false, live: w.main.file });
  });

  it("prints a restore command that names its own snapshot, so it still works after later snapshots", async () => {
    const s = await makePiSession({ agentDir: w.sb.agentDir, cwd: w.sb.dir("later"), turns: [{ user: "Later question", assistant: ["Later answer."] }] });
    const bytes = readFileSync(s.file);
    const r = await runOk(w.sb, ["sessions", "delete", s.sessionId]);
    const printed = /(pi-guard restore \S+ --session \S+)/.exec(r.stdout + r.stderr)?.[1];
    expect(printed).toBeTruthy();
    expect(existsSync(s.file)).toBe(false);
    // `latest` no longer holds the session after this snapshot; the printed command must not depend on it.
    await snapshot(w.sb);
    const back = await run(w.sb, printed!.split(" ").slice(1));
    expect(back.code).toBe(0);
    expect(readFileSync(s.file).equals(bytes)).toBe(true);
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
