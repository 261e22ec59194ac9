// `snapshots --json` from the rendered listing (src/repo/rendered-listing.ts, snapshots.json.bin in
// docs/FORMAT.md §13): the bytes are those of the full path (`--host`, which parses every snapshot
// object and pretty-prints the records), whether the listing was just rendered or read back; a
// snapshot written or forgotten by another process shows up or disappears; a damaged, truncated or
// stale file is never printed, and is rebuilt.

import { appendFileSync, mkdirSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
let host: string;
const ids: string[] = [];

const renderedFile = () => {
  const root = path.join(sb.dataHome, "pi-guard", "cache");
  const [repoId] = readdirSync(root);
  const [where] = readdirSync(path.join(root, repoId));
  return path.join(root, repoId, where, "snapshots.json.bin");
};
const touch = () => appendFileSync(path.join(sb.agentDir, "settings.json"), " ");
const list = (TZ = "Asia/Kolkata") => ok(sb, ["snapshots", "--json"], { env: { TZ } });
/** The same records by the path that parses every snapshot object and renders nothing in advance. */
const reference = async (TZ = "Asia/Kolkata") => (await ok(sb, ["snapshots", "--json", "--host", host], { env: { TZ } })).stdout;

beforeAll(async () => {
  sb = makeSandbox("rendered");
  mkdirSync(sb.agentDir, { recursive: true });
  writeFileSync(path.join(sb.agentDir, "settings.json"), "{}\n");
  await ok(sb, ["init"]);
  for (const tag of ["a", "b", "c"]) {
    touch();
    ids.push((await snapshot(sb, ["--tag", tag])).snapshotId);
  }
  host = (await list()).json<{ host: string }[]>()[0].host;
});
afterAll(() => sb?.cleanup());

describe("snapshots --json from the rendered listing", () => {
  it("prints the bytes of the full path, rendered just now and read back, in any TZ", async () => {
    for (const TZ of ["Asia/Kolkata", "America/St_Johns", "UTC", "Australia/Lord_Howe"]) {
      const want = await reference(TZ);
      const first = await list(TZ);
      const again = await list(TZ);
      expect(first.stdout).toBe(want);
      expect(again.stdout).toBe(want);
      expect(again.stderr).toBe("");
    }
    expect(statSync(renderedFile()).size).toBeGreaterThan(0);
    expect((await list()).json<{ id: string }[]>().map((r) => r.id)).toEqual(ids);
  });

  it("a snapshot written by another process shows up, a forgotten one disappears", async () => {
    await list(); // the rendered listing is current
    touch();
    const added = (await snapshot(sb)).snapshotId;
    const withNew = await list();
    expect(withNew.json<{ id: string }[]>().map((r) => r.id)).toEqual([...ids, added]);
    expect(withNew.stdout).toBe(await reference());
    await ok(sb, ["forget", ids[0]]);
    const afterForget = await list();
    expect(afterForget.json<{ id: string }[]>().map((r) => r.id)).toEqual([ids[1], ids[2], added]);
    expect(afterForget.stdout).toBe(await reference());
    ids.splice(0, 1);
    ids.push(added);
  });

  it("a listing made for other snapshots is not printed, even when it verifies", async () => {
    await list();
    const old = readFileSync(renderedFile());
    touch();
    ids.push((await snapshot(sb)).snapshotId);
    await list();
    writeFileSync(renderedFile(), old); // authentic, but made before the last snapshot
    const r = await list();
    expect(r.stderr).toBe("");
    expect(r.json<{ id: string }[]>().map((x) => x.id)).toEqual(ids);
    expect(r.stdout).toBe(await reference());
  });

  const damages: [string, (file: string) => void][] = [
    [
      "a changed byte in a record",
      (file) => {
        // A host name the output would show: the proof that the damaged text is never printed.
        const bytes = readFileSync(file);
        const at = bytes.indexOf(Buffer.from(`"host": "${host}"`));
        expect(at).toBeGreaterThan(0);
        bytes[at + 9] ^= 0x01;
        writeFileSync(file, bytes);
      },
    ],
    ["a truncated file", (file) => truncateSync(file, statSync(file).size - 100)],
    ["bytes appended", (file) => appendFileSync(file, "garbage")],
    [
      "a changed tag",
      (file) => {
        const bytes = readFileSync(file);
        bytes[bytes.length - 1] ^= 0x80;
        writeFileSync(file, bytes);
      },
    ],
    ["garbage", (file) => writeFileSync(file, "not a listing at all")],
  ];
  for (const [what, damage] of damages) {
    it(`${what}: warned about, never printed, rebuilt`, async () => {
      const want = await reference();
      await list();
      damage(renderedFile());
      const damaged = readFileSync(renderedFile());
      const r = await list();
      expect(r.stdout).toBe(want);
      expect(r.stderr).toMatch(/metadata cache .*snapshots\.json\.bin was damaged/);
      expect(readFileSync(renderedFile()).equals(damaged)).toBe(false);
      const next = await list();
      expect(next.stderr).toBe("");
      expect(next.stdout).toBe(want);
    });
  }
});
