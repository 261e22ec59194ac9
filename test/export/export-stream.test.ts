// The streamed Markdown and JSON exports equal the in-memory rendering (the reference) byte for
// byte, on sessions made by pi's real agent loop (branched, labelled, named, forked, with tool
// calls, thinking and a key in a prompt) and on the real pi fixtures; with --branch and --redact.

import { readFileSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bufferSource } from "../../src/export/entry-stream.js";
import { exportSession, exportSessionTo, type ExportFormat } from "../../src/export/index.js";
import type { ExportSink } from "../../src/export/output.js";
import { loadSessionBytes } from "../../src/sessions/read.js";
import { makeWorld, SECRET, type World } from "../sessions/world.js";

let w: World;
beforeAll(async () => {
  w = await makeWorld("exportstream");
});
afterAll(() => w?.sb.cleanup());

function memorySink(): ExportSink & { text(): string; committed: boolean } {
  const parts: string[] = [];
  let bytes = 0;
  const sink = {
    committed: false,
    get bytes() {
      return bytes;
    },
    async write(t: string) {
      parts.push(t);
      bytes += Buffer.byteLength(t);
    },
    async commit() {
      sink.committed = true;
    },
    async abort() {},
    text: () => parts.join(""),
  };
  return sink;
}

const stamp = (text: string) => text.replace(/"exportedAt": "[^"]+"/, '"exportedAt": "T"');

async function both(file: string, format: ExportFormat, opts: { branch?: string; redact?: boolean }) {
  const bytes = readFileSync(file);
  const common = { format, branch: opts.branch, redact: opts.redact, agentDir: w.sb.agentDir, source: `live ${file}` };
  const reference = await exportSession(loadSessionBytes(bytes, "fallback-id"), common);
  const sink = memorySink();
  const written = await exportSessionTo(bufferSource(bytes), async () => sink, { ...common, fallbackId: "fallback-id" });
  expect(sink.committed).toBe(true);
  expect(written).toBe(Buffer.byteLength(sink.text()));
  return { reference: stamp(reference), streamed: stamp(sink.text()) };
}

describe("streamed export = in-memory export", () => {
  it.each(["markdown", "json"] as const)("%s: every session of the world, whole and redacted", async (format) => {
    const files = [w.main.file, w.main.fork!.file, ...w.fixtures.values()];
    for (const file of files) {
      for (const redact of [false, true]) {
        const { reference, streamed } = await both(file, format, { redact });
        expect(streamed, `${file} redact=${redact}`).toBe(reference);
      }
    }
  });

  it.each(["markdown", "json"] as const)("%s: every --branch of the branched session", async (format) => {
    for (const leaf of w.main.turnLeafIds) {
      const { reference, streamed } = await both(w.main.file, format, { branch: leaf });
      expect(streamed).toBe(reference);
    }
  });

  it.each(["markdown", "json"] as const)("%s: a hostile file (a result before its call in file order, a reused call id, a cycle)", async (format) => {
    const header = { type: "session", version: 3, id: "hostile-0000", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/p" };
    const at = "2026-01-01T00:00:01.000Z";
    const call = (id: string) => ({ type: "toolCall", id, name: "bash", arguments: { command: `echo ${id}` } });
    const lines = [
      header,
      { type: "message", id: "aaaaaaaa", parentId: null, timestamp: at, message: { role: "user", content: "go", timestamp: 1 } },
      { type: "message", id: "rrrrrrrr", parentId: "bbbbbbbb", timestamp: at, message: { role: "toolResult", toolCallId: "c1", toolName: "bash", content: [{ type: "text", text: "out 1" }], isError: false, timestamp: 1 } },
      { type: "message", id: "bbbbbbbb", parentId: "aaaaaaaa", timestamp: at, message: { role: "assistant", content: [call("c1"), call("c1"), call("c2")], provider: "p", model: "m", usage: { totalTokens: 9, cost: { total: 0.1 } }, stopReason: "toolUse", timestamp: 1 } },
      { type: "message", id: "ssssssss", parentId: "rrrrrrrr", timestamp: at, message: { role: "toolResult", toolCallId: "c2", toolName: "bash", content: [{ type: "text", text: "out 2" }], isError: true, timestamp: 1 } },
      { type: "label", id: "llllllll", parentId: "ssssssss", timestamp: at, targetId: "bbbbbbbb", label: "here" },
      { type: "message", id: "xxxxxxxx", parentId: "xxxxxxxx", timestamp: at, message: { role: "user", content: "self-parent", timestamp: 1 } },
      { type: "message", id: "zzzzzzzz", parentId: "llllllll", timestamp: at, message: { role: "assistant", content: [{ type: "text", text: "**done**" }], provider: "p", model: "m", stopReason: "stop", timestamp: 1 } },
    ];
    const file = `${w.sb.dir("hostile")}/hostile.jsonl`;
    writeFileSync(file, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
    const { reference, streamed } = await both(file, format, {});
    expect(streamed).toBe(reference);
    if (format === "markdown") expect(streamed).toContain("out 1");
  });

  it("redaction still reaches every streamed piece", async () => {
    const { streamed } = await both(w.main.file, "markdown", { redact: true });
    expect(streamed).not.toContain(SECRET);
    expect(streamed).toContain("[REDACTED");
    const json = await both(w.main.file, "json", { redact: true });
    expect(json.streamed).not.toContain(SECRET);
  });

  it("a bad --branch fails before any output is opened", async () => {
    let opened = false;
    await expect(
      exportSessionTo(bufferSource(readFileSync(w.main.file)), async () => ((opened = true), memorySink()), { format: "markdown", branch: "nope-nope", agentDir: w.sb.agentDir, source: "x", fallbackId: "x" }),
    ).rejects.toThrow(/no entry "nope-nope"/);
    expect(opened).toBe(false);
  });
});
