import { parentPort } from "node:worker_threads";
import type { ParseReply, ParseRequest } from "./parse-pool.js";
import { summarizeSession } from "./summary.js";

// Summarises sessions off the main thread, for a cold `sessions list` on every core. A job names
// a file; the summary (small: no text) goes back.
parentPort!.on("message", async (msg: ParseRequest) => {
  let reply: ParseReply;
  try {
    reply = { job: msg.job, summary: await summarizeSession(msg.path, msg.fallbackId) };
  } catch (err) {
    reply = { job: msg.job, error: (err as Error).message };
  }
  parentPort!.postMessage(reply);
});
