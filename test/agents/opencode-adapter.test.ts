// The opencode adapter against a database the real opencode 1.18.33 wrote, offline: where it
// looks (XDG_DATA_HOME, OPENCODE_DB), what it masks, how it reads the session/message/part rows
// into the common model without touching the live db's folder, what doctor says, and how the db
// comes back together with its side files.
import { mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveFiles } from "../../src/agents/files.js";
import { opencodeAdapter } from "../../src/agents/opencode/index.js";
import { findAgent } from "../../src/agents/registry.js";
import type { SessionMeta } from "../../src/agents/types.js";
import type { AssistantMessage, ToolResultMessage } from "../../src/model/session.js";
import { opencodeDataDir, runOpencode, startOpencodeModel } from "../helpers/agents/opencode.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
let server: FakeModelServer;
let sessionId: string;

beforeAll(async () => {
  sb = makeSandbox("opencode-adapter");
  server = await startOpencodeModel([callTool("bash", { command: "echo adapter-tool-output", description: "Echo" }, { thinking: "The user wants an echo." }), say("The echo printed adapter-tool-output.")]);
  sessionId = (await runOpencode(sb, server, "please echo something")).sessionId;
}, 240_000);
afterAll(async () => {
  await server?.close();
  sb?.cleanup();
});

const hz = () => ({ env: {}, repo: sb.repo, keyFile: path.join(sb.root, "key") }) as never;
const loc = () => opencodeAdapter.locate({ env: sb.env, home: sb.home });
const listing = (dir: string) => Object.fromEntries(readdirSync(dir).map((n) => [n, ((s) => [s.size, s.mtimeMs, s.ctimeMs])(statSync(path.join(dir, n)))]));

describe("opencode adapter", () => {
  it("is registered, and finds $XDG_DATA_HOME/opencode, the configured dir or ~/.local/share/opencode, and a db OPENCODE_DB puts elsewhere", () => {
    expect(findAgent("opencode")).toBe(opencodeAdapter);
    expect(opencodeAdapter.locate({ env: {}, home: sb.home })).toMatchObject({ dir: path.join(sb.home, ".local", "share", "opencode"), foundBy: "default" });
    expect(opencodeAdapter.locate({ env: { XDG_DATA_HOME: "/x/data" }, home: sb.home, config: { dir: "/y" } })).toMatchObject({ dir: "/x/data/opencode", foundBy: "env", via: "XDG_DATA_HOME" });
    expect(opencodeAdapter.locate({ env: {}, home: sb.home, config: { dir: "~/oc" } })).toMatchObject({ dir: path.join(sb.home, "oc"), foundBy: "config" });
    const moved = opencodeAdapter.locate({ env: { OPENCODE_DB: "/elsewhere/db/opencode.db" }, home: sb.home });
    expect(moved.roots.map((r) => [r.name, r.path])).toEqual([["opencode", path.join(sb.home, ".local", "share", "opencode")], ["opencode-db", "/elsewhere/db"]]);
    // A relative OPENCODE_DB stays inside the data dir: no root of its own.
    expect(opencodeAdapter.locate({ env: { OPENCODE_DB: "other.db" }, home: sb.home }).roots).toHaveLength(1);
    expect(loc().dir).toBe(opencodeDataDir(sb));
  });

  it("copies opencode.db as a sqlite-wal unit", () => {
    const rules = opencodeAdapter.copyRules(loc());
    expect(rules.find((r) => r.glob === "opencode*.db")?.kind).toBe("sqlite-wal");
    expect(opencodeAdapter.sessions.isSessionFile({ root: "opencode", path: "opencode.db" })).toBe(true);
    expect(opencodeAdapter.sessions.isSessionFile({ root: "opencode", path: "opencode.db-wal" })).toBe(false);
  });

  it("lists and reads the real session from a private copy, leaving the live db's folder as it was", async () => {
    const dir = opencodeDataDir(sb);
    const before = listing(dir);
    const metas: SessionMeta[] = [];
    for await (const m of opencodeAdapter.sessions.list(liveFiles(loc().roots))) metas.push(m);
    expect(metas).toHaveLength(1);
    expect(metas[0]).toMatchObject({ agent: "opencode", id: sessionId, cwd: path.join(sb.root, "opencode-project") });
    expect(metas[0]!.files.map((f) => f.path)).toEqual(["opencode.db", "opencode.db-wal"]);
    expect(metas[0]!.bytes).toBeGreaterThan(0);
    const s = await opencodeAdapter.sessions.read(liveFiles(loc().roots), metas[0]!);
    expect(listing(dir)).toEqual(before);
    expect(s.warnings).toEqual([]);
    expect(s.header).toMatchObject({ id: sessionId, cwd: path.join(sb.root, "opencode-project") });
    const messages = s.entries.filter((e) => e.type === "message").map((e) => e.message as AssistantMessage | ToolResultMessage);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    const first = messages[1] as AssistantMessage;
    expect(first.content.map((b) => b.type)).toEqual(["thinking", "toolCall"]);
    expect(first.content[1]).toMatchObject({ name: "bash", arguments: { command: "echo adapter-tool-output" } });
    expect(first).toMatchObject({ provider: "fake", model: "fake-model", stopReason: "toolUse", usage: { input: 110, cacheRead: 10, output: 30 } }); // opencode records input without the cached part
    expect(messages[2]).toMatchObject({ role: "toolResult", toolName: "bash", toolCallId: (first.content[1] as { id: string }).id, isError: false });
    expect(JSON.stringify(messages[2]!.content)).toContain("adapter-tool-output");
    expect(messages[3]).toMatchObject({ content: [{ type: "text", text: "The echo printed adapter-tool-output." }], stopReason: "stop" });
    expect(s.entries.every((e, i) => e.parentId === (i ? s.entries[i - 1]!.id : null))).toBe(true);
  });

  it("names auth.json as a secret and finds its key", async () => {
    writeFileSync(path.join(opencodeDataDir(sb), "auth.json"), JSON.stringify({ anthropic: { type: "api", key: "sk-ant-api03-" + "W".repeat(48) } }));
    expect(opencodeAdapter.secretFiles(loc())).toEqual([expect.objectContaining({ path: "auth.json", kind: "whole" })]);
    expect((await opencodeAdapter.secretValues(liveFiles(loc().roots), loc())).map((s) => s.value)).toContain("sk-ant-api03-" + "W".repeat(48));
  });

  it("doctor: the migrations hazard is a warning while pre-1.2 JSON sessions wait in storage/", async () => {
    expect((await opencodeAdapter.hazards(loc(), hz()))[0]).toMatchObject({ name: "opencode: migrations", status: "ok" });
    mkdirSync(path.join(opencodeDataDir(sb), "storage", "session"), { recursive: true });
    const [warn] = await opencodeAdapter.hazards(loc(), hz());
    expect(warn).toMatchObject({ name: "opencode: migrations", status: "warn" });
    expect(warn!.fix).toContain("pi-guard snapshot");
  });

  it("restores opencode.db with its -wal and -shm as one unit, and checks the db opencode will open", async () => {
    const db = { root: "opencode", path: "opencode.db" };
    const available = ["opencode.db", "opencode.db-wal", "opencode.db-shm", "auth.json"].map((p) => ({ root: "opencode", path: p }));
    const units = opencodeAdapter.restoreUnits([db, { root: "opencode", path: "auth.json" }], available);
    expect(units.map((u) => u.files.map((f) => f.path))).toEqual([["opencode.db", "opencode.db-wal", "opencode.db-shm"], ["auth.json"]]);
    const [check] = await opencodeAdapter.checkRestored(liveFiles(loc().roots), [units[0]!]);
    expect(check).toMatchObject({ ok: true, message: expect.stringContaining("1 session(s)") });
    // A file that is not a database fails the check, with a one-line reason.
    const bad = sb.dir("bad-opencode");
    writeFileSync(path.join(bad, "opencode.db"), "not a database at all, just text".repeat(200));
    const [failed] = await opencodeAdapter.checkRestored(liveFiles([{ name: "opencode", path: bad }]), [{ files: [db], why: "" }]);
    expect(failed!.ok).toBe(false);
    expect(failed!.message.split("\n")).toHaveLength(1);
  });
});
