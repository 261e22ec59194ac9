// A worker sends a batch's parts back in one transferable buffer; the main thread cuts them out
// again. The parts of a decoded frame need not lie back to back in the order asked (the pack-ordered
// restore asks for a frame's blobs in the order files need them), even when together they fill
// the buffer exactly: cutting them as consecutive slices would hand out the right lengths with the
// wrong bytes, which no later check would see (each blob was verified before the reply).

import { describe, expect, it } from "vitest";
import { packReply } from "../../src/repo/seal.js";
import { split } from "../../src/repo/seal-pool.js";

const roundTrip = (parts: Buffer[]) => split(packReply(7, parts)).map((p) => p.toString());

describe("a worker's reply", () => {
  // Three blobs that fill a decoded frame exactly, in a buffer of its own (as openBatch allocates it).
  const frame = () => {
    const f = Buffer.allocUnsafeSlow(15);
    f.write("AAAAABBBCCCCCCC");
    return f;
  };

  it("parts out of order that fill the buffer come back as asked", () => {
    const f = frame();
    expect(roundTrip([f.subarray(0, 5), f.subarray(8), f.subarray(5, 8)])).toEqual(["AAAAA", "CCCCCCC", "BBB"]);
    expect(roundTrip([f.subarray(5, 8), f.subarray(0, 5), f.subarray(8)])).toEqual(["BBB", "AAAAA", "CCCCCCC"]);
  });

  it("a part asked twice, and parts with a gap, come back as asked", () => {
    const f = frame();
    expect(roundTrip([f.subarray(0, 5), f.subarray(0, 5), f.subarray(10)])).toEqual(["AAAAA", "AAAAA", "CCCCC"]);
    expect(roundTrip([f.subarray(0, 5), f.subarray(5, 8), f.subarray(5, 8), f.subarray(11)])).toEqual(["AAAAA", "BBB", "BBB", "CCCC"]);
    expect(roundTrip([f.subarray(0, 5), f.subarray(8)])).toEqual(["AAAAA", "CCCCCCC"]);
  });

  it("parts back to back in order (blobs copied out) still come back whole", () => {
    const f = frame();
    expect(roundTrip([f.subarray(0, 5), f.subarray(5, 8), f.subarray(8)])).toEqual(["AAAAA", "BBB", "CCCCCCC"]);
  });
});
