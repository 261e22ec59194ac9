// createReplica and openReplica in process, on in-memory targets: what makes a location a replica,
// what is refused (another repository, a key object that differs, a config that differs), and that
// a check-only open writes nothing.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { RepoError } from "../../src/repo/errors.js";
import { createReplica, openReplica } from "../../src/repo/replicate.js";
import { Repository } from "../../src/repo/repository.js";
import { MemoryTarget } from "../../src/targets/memory.js";
import { listNames } from "../../src/targets/target.js";

const cred = () => ({ kind: "keyfile" as const, secret: randomBytes(32), path: "test-key" });

async function objects(t: MemoryTarget): Promise<string[]> {
  const out: string[] = [];
  for await (const o of t.list("")) out.push(o.key);
  return out.sort();
}

describe("replicas", () => {
  it("an empty location receives config and keys verbatim; the same credential opens it; a second call does nothing", async () => {
    const c = cred();
    const source = await Repository.init(new MemoryTarget("memory:a"), c);
    const dest = new MemoryTarget("memory:b");
    expect(await createReplica(source, dest)).toEqual({ created: true, keysCopied: 1 });
    expect((await dest.get("config")).equals(await source.target.get("config"))).toBe(true);
    const opened = await Repository.open(dest, c);
    expect(opened.config.id).toBe(source.config.id);
    expect(opened.blobId(Buffer.from("x"))).toBe(source.blobId(Buffer.from("x")));
    const before = await objects(dest);
    expect(await createReplica(source, dest)).toEqual({ created: false, keysCopied: 0 });
    expect(await objects(dest)).toEqual(before);
  });

  it("another repository, a differing key object and a differing config are refused; nothing is written", async () => {
    const c = cred();
    const source = await Repository.init(new MemoryTarget("memory:a"), c);
    const other = new MemoryTarget("memory:other");
    await Repository.init(other, cred());
    const before = await objects(other);
    const err = await createReplica(source, other).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RepoError);
    expect((err as Error).message).toMatch(new RegExp(`memory:other holds repository [0-9a-f]{8}, not ${source.config.id.slice(0, 8)} of memory:a`));
    expect(await objects(other)).toEqual(before);

    const forged = new MemoryTarget("memory:forged");
    await createReplica(source, forged);
    const [keyName] = await listNames(forged, "keys");
    await forged.put(`keys/${keyName}`, Buffer.from("{}"));
    await expect(createReplica(source, forged)).rejects.toThrow(/key [0-9a-f]{12} differs/);

    const edited = new MemoryTarget("memory:edited");
    await createReplica(source, edited);
    const config = JSON.parse((await edited.get("config")).toString());
    await edited.put("config", Buffer.from(JSON.stringify({ ...config, packSize: config.packSize * 2 })));
    await expect(createReplica(source, edited)).rejects.toThrow(/config that differs/);
  });

  it("openReplica without create refuses an empty location and writes no key to an existing replica", async () => {
    const c = cred();
    const source = await Repository.init(new MemoryTarget("memory:a"), c);
    const empty = new MemoryTarget("memory:empty");
    await expect(openReplica(source, empty)).rejects.toThrow(/no repository at memory:empty/);
    expect(await objects(empty)).toEqual([]);
    const dest = new MemoryTarget("memory:b");
    await createReplica(source, dest);
    // A key added to the source later reaches the replica only through a shipment (create).
    const { addKey } = await import("../../src/repo/keys.js");
    await addKey(source.target, source.key, cred());
    await openReplica(source, dest);
    expect(await listNames(dest, "keys")).toHaveLength(1);
    expect((await openReplica(source, dest, { create: true })).setup.keysCopied).toBe(1);
    expect(await listNames(dest, "keys")).toHaveLength(2);
  });
});
