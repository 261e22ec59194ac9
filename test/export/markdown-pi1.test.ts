// The streamed Markdown export equals the in-memory one (the reference) on sessions pi 1.6.0
// wrote: the system prompt replay and the context-edit marks, which the stream resolves without
// holding the session, come out byte for byte the same on every branch, redacted or not.

import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bufferSource } from "../../src/export/entry-stream.js";
import { exportSession, exportSessionTo } from "../../src/export/index.js";
import type { ExportSink } from "../../src/export/output.js";
import { readSessionText } from "../../src/agents/pi/parse.js";
import { leaves, buildTree } from "../../src/model/tree.js";
import { loadSessionBytes } from "../../src/sessions/read.js";
import { makePi1World, type Pi1World } from "../sessions/pi1-world.js";

let w: Pi1World;
beforeAll(async () => {
  w = await makePi1World("pi1-mdstream");
}, 180_000);
afterAll(() => w?.sb.cleanup());

function memorySink(): ExportSink & { text(): string } {
  const parts: string[] = [];
  return {
    get bytes() {
      return Buffer.byteLength(parts.join(""));
    },
    async write(t: string) {
      parts.push(t);
    },
    async commit() {},
    async abort() {},
    text: () => parts.join(""),
  };
}

describe("streamed Markdown = in-memory Markdown on pi 1.6.0 sessions", () => {
  it("every leaf of every session, whole and redacted", async () => {
    let withBoth = 0;
    for (const file of [w.rich.file, w.rich.fork!.file, w.quokka.file]) {
      const bytes = readFileSync(file);
      for (const leaf of leaves(buildTree(readSessionText(bytes).entries))) {
        for (const redact of [false, true]) {
          const opts = { format: "markdown" as const, branch: leaf.id, redact, agentDir: w.sb.agentDir, source: `live ${file}` };
          const reference = await exportSession(loadSessionBytes(bytes, "fallback-id"), opts);
          const sink = memorySink();
          await exportSessionTo(bufferSource(bytes), async () => sink, { ...opts, fallbackId: "fallback-id" });
          expect(sink.text(), `${file} ${leaf.id} redact=${redact}`).toBe(reference);
          if (/## System (prompt|update)/.test(reference) && /## Context edit/.test(reference)) withBoth++;
        }
      }
    }
    expect(withBoth).toBeGreaterThanOrEqual(4); // system entries and context edits were on the branches compared
  });
});
