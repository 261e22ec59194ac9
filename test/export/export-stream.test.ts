// The streamed Markdown and JSON exports equal the in-memory rendering (the reference) byte for
// byte, on sessions made by pi's real agent loop (branched, labelled, named, forked, with tool
// calls, thinking and a key in a prompt) and on the real pi fixtures; with --branch and --redact.

import { readFileSync } from "node:fs";
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
