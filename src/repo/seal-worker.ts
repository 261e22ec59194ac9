import { parentPort } from "node:worker_threads";
import { collectAfter, collectYoung } from "./collect.js";
import { sealBatch, sealedBytes, openBatch, openAndWrite, packReply, type BatchReply, type SealRequest, type OpenRequest } from "./seal.js";

// Runs compression + encryption (or the reverse) off the main thread, which stays busy chunking
// and hashing. Buffers travel as transferred ArrayBuffers, so nothing is copied between threads.
parentPort!.on("message", (msg: SealRequest | OpenRequest) => {
  let garbage = true;
  try {
    const writes = msg.op === "open" && msg.places !== undefined;
    const reply: BatchReply = writes
      ? { job: msg.job, buffer: new ArrayBuffer(0), lengths: [], written: openAndWrite(msg as OpenRequest) }
      : packReply(msg.job, msg.op === "seal" ? sealBatch(msg) : openBatch(msg));
    const transfer = [reply.buffer];
    if (msg.returnBuffer && msg.buffer.byteLength > 0 && msg.buffer !== reply.buffer) {
      reply.input = msg.buffer;
      transfer.push(msg.buffer);
      // Both buffers went back to be reused: that job left nothing big behind, but for a seal's
      // cipher output slices (Node allocates each), collected every few MB: left for V8's own
      // collections they raised a 1 GiB snapshot's peak RSS by 30 MB.
      garbage = !writes && reply.buffer !== msg.out;
      if (!garbage && msg.op === "seal") collectAfter(sealedBytes(reply));
    }
    // An open that wrote its blobs from this thread's own buffers, reading a local pack into another: nothing big either.
    if (writes && msg.buffer.byteLength === 0) garbage = false;
    parentPort!.postMessage(reply, transfer);
  } catch (err) {
    parentPort!.postMessage({ job: msg.job, error: (err as Error).message, kind: (err as { kind?: string }).kind });
  }
  // A job that kept its buffers leaves off-heap garbage (the buffer sent in, the decrypted or
  // compressed frames) that the worker's small heap would keep for tens of MB before collecting.
  if (garbage) collectYoung();
});
