import { parentPort } from "node:worker_threads";
import { collectYoung } from "./collect.js";
import { sealBatch, openBatch, packReply, type SealRequest, type OpenRequest } from "./seal.js";

// Runs compression + encryption (or the reverse) off the main thread, which stays busy chunking
// and hashing. Buffers travel as transferred ArrayBuffers, so nothing is copied between threads.
parentPort!.on("message", (msg: SealRequest | OpenRequest) => {
  let garbage = true;
  try {
    const reply = packReply(msg.job, msg.op === "seal" ? sealBatch(msg) : openBatch(msg));
    const transfer = [reply.buffer];
    if (msg.returnBuffer && msg.buffer.byteLength > 0 && msg.buffer !== reply.buffer) {
      reply.input = msg.buffer;
      transfer.push(msg.buffer);
      // Both buffers of an open went back to be reused: that job left nothing big behind.
      garbage = msg.op === "seal" || reply.buffer !== msg.out;
    }
    parentPort!.postMessage(reply, transfer);
  } catch (err) {
    parentPort!.postMessage({ job: msg.job, error: (err as Error).message, kind: (err as { kind?: string }).kind });
  }
  // A job that kept its buffers leaves off-heap garbage (the buffer sent in, the decrypted or
  // compressed frames) that the worker's small heap would keep for tens of MB before collecting.
  if (garbage) collectYoung();
});
