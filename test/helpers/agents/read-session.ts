// What the agents' end-to-end tests check of a real session as pi-guard reads it: the adapter's
// reader over the live files or a snapshot's, and the common model holding the prompt, the tool
// call with its result, the answer and usage.

import { expect } from "vitest";
import { liveFiles, snapshotFiles } from "../../../src/agents/files.js";
import type { AgentAdapter, AgentSession, FileReader } from "../../../src/agents/types.js";
import { loadConfig } from "../../../src/config/config.js";
import { openRepository } from "../../../src/engine.js";
import { SnapshotReader } from "../../../src/restore/snapshot-reader.js";
import type { Sandbox } from "../tmp.js";

/** The session as the adapter reads it into the common model, live or from a snapshot. */
export async function readSession(adapter: AgentAdapter, sb: Sandbox, id: string, snapshotId?: string): Promise<AgentSession> {
  const loc = adapter.locate({ env: sb.env, home: sb.home });
  const read = async (files: FileReader) => {
    for await (const m of adapter.sessions.list(files)) if (m.id === id) return adapter.sessions.read(files, m);
    throw new Error(`session ${id} is not listed in ${files.where}`);
  };
  if (!snapshotId) return read(liveFiles(loc.roots));
  const repo = await openRepository(loadConfig({}, sb.env));
  const reader = await SnapshotReader.open(repo);
  try {
    const record = (await reader.snapshots()).find((r) => r.id === snapshotId)!;
    return await read(await snapshotFiles(reader, { ...record.snapshot, id: snapshotId }));
  } finally {
    await reader.close();
  }
}

/** What the common model must hold of the session: the prompt, the tool call with its result, the answer, usage. */
export function expectMapped(s: AgentSession, toolName: string): void {
  const messages = s.entries.filter((e) => e.type === "message").map((e) => (e as { message: { role: string; content?: unknown; usage?: { input: number; output: number }; toolCallId?: string } }).message);
  const text = JSON.stringify(messages);
  expect(messages.some((m) => m.role === "user" && JSON.stringify(m.content).includes("please run echo"))).toBe(true);
  const call = messages.flatMap((m) => (m.role === "assistant" && Array.isArray(m.content) ? (m.content as { type: string; name?: string; id?: string }[]) : [])).find((b) => b.type === "toolCall" && b.name === toolName);
  expect(call, `a ${toolName} tool call`).toBeDefined();
  const result = messages.find((m) => m.role === "toolResult" && m.toolCallId === call!.id);
  expect(JSON.stringify(result)).toContain("tool-said-hello");
  expect(text).toContain("The tool printed it.");
  expect(messages.some((m) => m.role === "assistant" && (m.usage?.input ?? 0) + (m.usage?.output ?? 0) > 0)).toBe(true);
  expect(s.leafId).not.toBeNull();
}
