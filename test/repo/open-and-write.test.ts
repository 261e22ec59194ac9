// openAndWrite (src/repo/seal.ts): the decoding thread of a restore writes the blobs it opened
// straight into the files' descriptors. Every blob is checked against its id before the first
// write, zero runs stay holes, and a failed write fails only its own file. Real frames sealed by
// sealBatch, real files.

import { randomBytes } from "node:crypto";
import { closeSync, openSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blobId } from "../../src/repo/crypto.js";
import { openAndWrite, sealBatch, type OpenRequest } from "../../src/repo/seal.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

const key = randomBytes(32);
const idKey = randomBytes(32);
const a = Buffer.from("a".repeat(5000));
const zeros = Buffer.alloc(70_000);
const b = randomBytes(3000);

/** One frame per blob, back to back in one buffer, as a pack holds them. */
function batch(blobs: Buffer[]): { buffer: ArrayBuffer; frames: number[] } {
  const all = Buffer.concat(blobs);
  const bounds: number[] = [];
  let at = 0;
  for (const x of blobs) bounds.push(at, (at += x.length));
  const sealed = sealBatch({ op: "seal", job: 0, key, buffer: all.buffer.slice(all.byteOffset, all.byteOffset + all.length), frames: bounds });
  const frames: number[] = [];
  at = 0;
  for (const s of sealed) frames.push(at, (at += s.length));
  const joined = Buffer.concat(sealed);
  return { buffer: joined.buffer.slice(joined.byteOffset, joined.byteOffset + joined.length), frames };
}

function request(blobs: Buffer[], ids: Buffer[], places: number[][]): OpenRequest {
  const { buffer, frames } = batch(blobs);
  return {
    op: "open",
    job: 0,
    key,
    idKey,
    buffer,
    frames,
    blobs: blobs.map((x, i) => ({ frame: i, inFrame: 0, rawLength: x.length, id: ids[i].toString("hex") })),
    places,
    holes: true,
  };
}

describe("openAndWrite", () => {
  let sb: Sandbox;
  const fds: number[] = [];
  const file = (name: string, flags = "w") => {
    const fd = openSync(path.join(sb.root, name), flags);
    fds.push(fd);
    return fd;
  };

  beforeAll(() => {
    sb = makeSandbox("open-and-write");
  });
  afterAll(() => {
    for (const fd of fds) closeSync(fd);
    sb?.cleanup();
  });

  it("writes each blob at its places, leaves a zero blob a hole, and says what it wrote per file", () => {
    const one = file("one");
    const two = file("two");
    const ids = [a, zeros, b].map((x) => blobId(idKey, x));
    // one: a, zeros, b back to back; two: b, then a again further on.
    const written = openAndWrite(request([a, zeros, b], ids, [[one, 0, two, 10_000], [one, 5000], [one, 75_000, two, 0]]));
    expect(written.find((w) => w.fd === one)).toEqual({ fd: one, bytes: 78_000, end: 78_000 });
    expect(written.find((w) => w.fd === two)).toEqual({ fd: two, bytes: 8000, end: 15_000 });
    expect(readFileSync(path.join(sb.root, "one")).equals(Buffer.concat([a, zeros, b]))).toBe(true);
    const t = readFileSync(path.join(sb.root, "two"));
    expect(t.subarray(0, 3000).equals(b) && t.subarray(10_000).equals(a)).toBe(true);
    // The smaller file was written first.
    expect(written.map((w) => w.fd)).toEqual([two, one]);
  });

  it("a batch with one blob that does not match its id throws before writing anything", () => {
    const fd = file("damaged");
    const ids = [blobId(idKey, a), blobId(idKey, Buffer.concat([b, Buffer.of(1)]))];
    expect(() => openAndWrite(request([a, b], ids, [[fd, 0], [fd, 5000]]))).toThrow(/does not match its id/);
    expect(statSync(path.join(sb.root, "damaged")).size).toBe(0);
  });

  it("a write that fails fails that file only", () => {
    const good = file("good");
    const readOnly = file("good", "r");
    const written = openAndWrite(request([a], [blobId(idKey, a)], [[readOnly, 0, good, 0]]));
    expect(written.find((w) => w.fd === good)).toEqual({ fd: good, bytes: 5000, end: 5000 });
    expect(written.find((w) => w.fd === readOnly)).toMatchObject({ bytes: 0, end: 0, error: { code: "EBADF" } });
    expect(readFileSync(path.join(sb.root, "good")).equals(a)).toBe(true);
  });
});
