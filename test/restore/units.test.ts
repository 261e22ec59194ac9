// The two small pieces restore's safety rests on, checked directly: path validation and the
// write loop that never accepts a short write, and writes any amount in bounded calls.

import { type FileHandle, open } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { nodeComponents, RefusedPath } from "../../src/restore/safe-path.js";
import { writeFully } from "../../src/fs-safe.js";

describe("nodeComponents", () => {
  it("accepts plain relative paths, and keeps a name that is not UTF-8 as its bytes", () => {
    expect(nodeComponents({ path: "sessions/--p--/a.jsonl" })).toEqual(["sessions", "--p--", "a.jsonl"]);
    const raw = Buffer.from([0x73, 0x2f, 0xff, 0xfe]);
    expect(nodeComponents({ path: "s/\ufffd\ufffd", pathBytes: raw.toString("base64") })).toEqual(["s", Buffer.from([0xff, 0xfe])]);
  });

  it.each([
    ["../x"],
    ["a/../../x"],
    ["/etc/passwd"],
    ["a//b"],
    ["a/"],
    [""],
    ["./a"],
    ["a/."],
    ["a\0b"],
    ["a\\..\\b"],
  ])("refuses %j", (p) => {
    expect(() => nodeComponents({ path: p })).toThrow(RefusedPath);
    expect(() => nodeComponents({ path: "fine.txt", pathBytes: Buffer.from(p).toString("base64") })).toThrow(RefusedPath);
  });

  it("refuses a path that is not a string", () => {
    expect(() => nodeComponents({ path: 42 })).toThrow(RefusedPath);
    expect(() => nodeComponents({ path: "a", pathBytes: 7 })).toThrow(RefusedPath);
  });
});

/** A file that takes at most `per` bytes per write, and none after `limit`. */
function fakeHandle(per: number, limit = Infinity): { handle: FileHandle; data: number[] } {
  const data: number[] = [];
  const handle = {
    async writev(parts: Uint8Array[], pos: number) {
      let n = 0;
      for (const p of parts) for (const byte of p) if (n < per && pos + n < limit) data[pos + n++] = byte;
      return { bytesWritten: n, buffers: parts };
    },
  } as unknown as FileHandle;
  return { handle, data };
}

describe("writeFully", () => {
  it("writes the rest after short writes, in order, at the right positions", async () => {
    const { handle, data } = fakeHandle(3);
    const end = await writeFully(handle, [Buffer.from("hello "), Buffer.from(""), Buffer.from("world")], 0);
    expect(end).toBe(11);
    expect(Buffer.from(data).toString()).toBe("hello world");
    expect(await writeFully(handle, [Buffer.from("!!")], end)).toBe(13);
    expect(Buffer.from(data).toString()).toBe("hello world!!");
  });

  it("fails when the file system takes no more bytes, instead of returning a short count", async () => {
    const { handle } = fakeHandle(4, 6);
    await expect(writeFully(handle, [Buffer.from("0123456789")], 0)).rejects.toMatchObject({ code: "EIO" });
  });
});

describe("writeFully on a real file", () => {
  it("writes 2.2 GB of one repeated 128 KiB buffer (17,000 of them, past IOV_MAX and 2^31 bytes) and returns the right end", async () => {
    // /dev/null takes every byte, so this costs no disk; one writev of it all "wrote" -2066743296 bytes.
    const handle = await open("/dev/null", "w");
    try {
      const chunk = Buffer.alloc(128 * 1024, 0x61);
      const parts = new Array<Buffer>(17_000).fill(chunk);
      expect(await writeFully(handle, parts, 5)).toBe(5 + 17_000 * chunk.length);
      // Fewer buffers than IOV_MAX, but more bytes than one write may take.
      const big = Buffer.alloc(64 * 1024 * 1024);
      expect(await writeFully(handle, new Array<Buffer>(40).fill(big), 0)).toBe(40 * big.length);
    } finally {
      await handle.close();
    }
  });
});
