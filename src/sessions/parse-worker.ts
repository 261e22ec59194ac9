import { parentPort } from "node:worker_threads";
import type { ParseReply, ParseRequest } from "./parse-pool.js";
import { segmentEntries } from "./search-segment.js";
import { summarizeSession } from "./summary.js";

// Parses sessions off the main thread: summaries for a cold `sessions list` (both cores), segments
// for the search index (the main thread inserts meanwhile). Session bytes arrive copied.
parentPort!.on("message", async (msg: ParseRequest) => {
  let reply: ParseReply;
  try {
    reply = msg.op === "summary" ? { job: msg.job, summary: await summarizeSession(msg.path, msg.fallbackId) } : { job: msg.job, segment: segmentEntries(Buffer.from(msg.bytes.buffer, msg.bytes.byteOffset, msg.bytes.byteLength), msg.from, msg.id) };
  } catch (err) {
    reply = { job: msg.job, error: (err as Error).message };
  }
  parentPort!.postMessage(reply);
});
