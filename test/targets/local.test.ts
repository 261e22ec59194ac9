import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { LocalTarget, TEMP_INFIX } from "../../src/targets/local.js";
import { fileBody } from "../../src/targets/target.js";
import { targetConformance } from "./conformance.js";
import { tempRoot } from "../helpers/tmp.js";

const made: string[] = [];
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

targetConformance("local folder", {
  async make() {
    const dir = tempRoot("local-target");
    made.push(dir);
    return new LocalTarget(path.join(dir, "repo"));
  },
  async plantTemp(target, key) {
    const file = path.join(target.localPath!, ...key.split("/")) + `${TEMP_INFIX}abc123`;
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, "half a write");
  },
});

it("list of everything skips the staging folder tmp/ of a folder repository", async () => {
  const dir = tempRoot("local-target");
  made.push(dir);
  const t = new LocalTarget(dir);
  await t.put("config", Buffer.from("{}"));
  mkdirSync(path.join(dir, "tmp"));
  writeFileSync(path.join(dir, "tmp", "host-1-abc.pack"), "staging");
  const keys: string[] = [];
  for await (const o of t.list("")) keys.push(o.key);
  expect(keys).toEqual(["config"]);
});

/** This process's open descriptors on files under `dir`. */
function openUnder(dir: string): number {
  let n = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir + path.sep)) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

it("cached pack handles: a read survives its handle being pushed out; unused handles are closed, so a dropped target holds no descriptor", async () => {
  const dir = tempRoot("local-target");
  made.push(dir);
  const t = new LocalTarget(dir);
  const packs = Array.from({ length: 20 }, (_, i) => [`data/0${i % 10}/pack${i}`, randomBytes(2 * 1024 * 1024)] as const);
  for (const [key, data] of packs) await t.put(key, data);
  // Twenty packs read at once: more than the handles kept, so handles are pushed out while their
  // reads are under way; every read is still exact.
  for (let round = 0; round < 3; round++) {
    const got = await Promise.all(packs.map(([key]) => t.getRange(key, 1000, 1024 * 1024)));
    got.forEach((b, i) => expect(b.equals(packs[i][1].subarray(1000, 1000 + 1024 * 1024))).toBe(true));
    // A pushed-out handle is closed asynchronously once its read ends (well before the 2 s idle close).
    for (let i = 0; i < 50 && openUnder(dir) > 8; i++) await new Promise((r) => setTimeout(r, 10));
    expect(openUnder(dir)).toBeLessThanOrEqual(8);
  }
  expect(openUnder(dir)).toBeGreaterThan(0);
  // Unused, the handles are closed without anyone closing the target (before, the last eight stayed
  // open until garbage collection closed them, with a warning).
  for (let i = 0; i < 100 && openUnder(dir) > 0; i++) await new Promise((r) => setTimeout(r, 100));
  expect(openUnder(dir)).toBe(0);
  // And the target still reads.
  expect((await t.getRange(packs[3][0], 0, 10)).equals(packs[3][1].subarray(0, 10))).toBe(true);
});

it("a file body on another file system (rename gives EXDEV) is copied through a temp file and fsynced; a wrong size stores nothing", async () => {
  const dir = tempRoot("local-target");
  made.push(dir);
  const elsewhere = mkdtempSync("/dev/shm/pi-guard-exdev-");
  made.push(elsewhere);
  // The point of the test: the body's file and the repository are on different file systems.
  expect(statSync(elsewhere).dev).not.toBe(statSync(dir).dev);
  const t = new LocalTarget(dir);
  const data = randomBytes(3 * 1024 * 1024 + 5);
  const file = path.join(elsewhere, "pack");
  writeFileSync(file, data);
  await t.put("data/ab/ab01", fileBody(file, data.length));
  expect((await t.get("data/ab/ab01")).equals(data)).toBe(true);
  // Copied, not moved: the file is still its owner's to remove.
  expect(readFileSync(file).equals(data)).toBe(true);
  // A stated size the file does not have: refused before anything is written.
  await expect(t.put("data/ab/ab02", fileBody(file, data.length + 1))).rejects.toThrow(/holds 3145733 bytes, not its stated 3145734/);
  expect(readdirSync(path.join(dir, "data", "ab"))).toEqual(["ab01"]);
});
