// docs/FORMAT.md claims another program can read a repository from the document alone. This test is
// that other program: a reader written from the spec with node:crypto and zstd only, importing
// nothing from src/. If the format and the document drift apart, it fails.

import { createDecipheriv, createHash, createHmac, hkdfSync } from "node:crypto";
import { readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { initRepo, snapshot } from "../helpers/cli.js";
import { listFiles, makeSandbox } from "../helpers/tmp.js";

const zstd = createRequire(import.meta.url)("zstd-napi") as typeof import("zstd-napi");

/** §4: every sealed object carries "pi-guard v2 <type>" (plus a name for keys and locks) as associated data. */
function unseal(key: Buffer, sealed: Buffer, aad: string): Buffer {
  const d = createDecipheriv("aes-256-gcm", key, sealed.subarray(0, 12));
  d.setAAD(Buffer.from(aad));
  d.setAuthTag(sealed.subarray(sealed.length - 16));
  return Buffer.concat([d.update(sealed.subarray(12, sealed.length - 16)), d.final()]);
}

function decodePayload(plain: Buffer): Buffer {
  if (plain[0] === 0) return plain.subarray(1);
  if (plain[0] === 1) return zstd.decompress(plain.subarray(1));
  throw new Error(`unknown encoding ${plain[0]}`);
}

function readRepo(repo: string, keyFile: string) {
  const read = (name: string) => readFileSync(path.join(repo, ...name.split("/")));
  const config = JSON.parse(read("config").toString());
  expect(config.format).toBe("pi-guard");
  expect(config.version).toBe(2);
  // §3: unwrap the master key with the key file (kdf "hkdf").
  const secret = Buffer.from(readFileSync(keyFile, "utf8").trim(), "base64");
  let master: { encryption: Buffer; id: Buffer; chunkerSeed: Buffer } | undefined;
  for (const name of readdirSync(path.join(repo, "keys"))) {
    const k = JSON.parse(read(`keys/${name}`).toString());
    if (k.kdf !== "hkdf") continue;
    const wrap = Buffer.from(hkdfSync("sha256", secret, Buffer.from(k.salt, "base64"), "pi-guard key file v1", 32));
    const json = JSON.parse(unseal(wrap, Buffer.from(k.data, "base64"), `pi-guard v2 key ${name}`).toString());
    master = { encryption: Buffer.from(json.encryption, "base64"), id: Buffer.from(json.id, "base64"), chunkerSeed: Buffer.from(json.chunkerSeed, "base64") };
  }
  if (!master) throw new Error("no key opened");
  const key = master.encryption;

  // §6: every index file -> blob locations.
  const blobs = new Map<string, { pack: string; offset: number; length: number; inFrame: number; rawLength: number }>();
  for (const name of readdirSync(path.join(repo, "index"))) {
    const raw = read(`index/${name}`);
    expect(createHash("sha256").update(raw).digest("hex")).toBe(name);
    const b = decodePayload(unseal(key, raw, "pi-guard v2 index"));
    expect(b.subarray(0, 4).toString()).toBe("PGIX");
    expect(b[4]).toBe(2);
    let o = 5;
    const superseded = b.readUInt32LE(o);
    o += 4 + superseded * 32;
    const packs = b.readUInt32LE(o);
    o += 4;
    for (let p = 0; p < packs; p++) {
      const pack = b.toString("hex", o, o + 32);
      const count = b.readUInt32LE(o + 36);
      o += 40;
      for (let i = 0; i < count; i++, o += 49) {
        blobs.set(b.toString("hex", o + 1, o + 33), {
          pack,
          offset: b.readUInt32LE(o + 33),
          length: b.readUInt32LE(o + 37),
          inFrame: b.readUInt32LE(o + 41),
          rawLength: b.readUInt32LE(o + 45),
        });
      }
    }
  }
  const blob = (id: string): Buffer => {
    const loc = blobs.get(id)!;
    const pack = read(`data/${loc.pack.slice(0, 2)}/${loc.pack}`);
    const frame = decodePayload(unseal(key, pack.subarray(loc.offset, loc.offset + loc.length), "pi-guard v2 frame"));
    // §5: the pack header, found from the trailer, describes the same blob.
    const headerLength = pack.readUInt32LE(pack.length - 4);
    const header = unseal(key, pack.subarray(pack.length - 4 - headerLength, pack.length - 4), "pi-guard v2 pack-header");
    expect(header.subarray(0, 5).equals(Buffer.from([...Buffer.from("PGPK"), 2]))).toBe(true);
    expect(header.includes(Buffer.from(id, "hex"))).toBe(true);
    const data = frame.subarray(loc.inFrame, loc.inFrame + loc.rawLength);
    expect(createHmac("sha256", master!.id).update(data).digest("hex")).toBe(id);
    return data;
  };
  // §7, §8: the newest snapshot's tree -> files.
  const snapshots = readdirSync(path.join(repo, "snapshots")).map((name) => {
    const raw = read(`snapshots/${name}`);
    expect(createHash("sha256").update(raw).digest("hex")).toBe(name);
    return JSON.parse(decodePayload(unseal(key, raw, "pi-guard v2 snapshot")).toString());
  });
  snapshots.sort((a, b) => a.time.localeCompare(b.time));
  // §8: version 1 names the leaf tree blobs in `tree`; version 2 names tree list blobs in
  // `treeList`, whose bytes, concatenated, are the leaf ids, 32 bytes each.
  const leavesOf = (snap: { version: number; tree?: string[]; treeList?: string[] }): string[] => {
    if (snap.version === 1) return snap.tree!;
    expect(snap.version).toBe(2);
    expect(snap.tree).toBeUndefined();
    const ids = Buffer.concat(snap.treeList!.map(blob));
    expect(ids.length % 32).toBe(0);
    return Array.from({ length: ids.length / 32 }, (_, i) => ids.toString("hex", i * 32, i * 32 + 32));
  };
  const streamOf = (snap: { version: number; tree?: string[]; treeList?: string[] }) => Buffer.concat(leavesOf(snap).map(blob));
  const nodesOf = (snap: { version: number; tree?: string[]; treeList?: string[] }) =>
    streamOf(snap)
      .toString("utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  const nodes = nodesOf(snapshots.at(-1));
  return {
    nodes,
    snapshots,
    allNodes: snapshots.map(nodesOf),
    config,
    chunkerSeed: master.chunkerSeed,
    leavesOf,
    streamOf,
    blob,
    blobId: (data: Buffer) => createHmac("sha256", master!.id).update(data).digest("hex"),
    fileBytes: (node: { content: string[] }) => Buffer.concat(node.content.map(blob)),
  };
}

/** §4's chunking, from the text: the [start, end) of every chunk of `buf`. */
function chunksBySpec(buf: Buffer, seed: Buffer, p: { min: number; avg: number; max: number }): [number, number][] {
  const gear = Array.from({ length: 256 }, (_, i) => createHash("sha256").update(seed).update(Buffer.of(i)).digest().readUInt32LE(0));
  const bits = Math.round(Math.log2(p.avg));
  const top = (n: number) => (2 ** n - 1) * 2 ** (32 - n);
  const strict = top(bits + 2);
  const loose = top(bits - 2);
  const out: [number, number][] = [];
  for (let s = 0; s < buf.length; ) {
    const remaining = buf.length - s;
    let end = s + Math.min(remaining, p.max);
    if (remaining > p.min) {
      let h = 0;
      for (let i = s + p.min; i < s + Math.min(remaining, p.max); i++) {
        h = (h * 2 + gear[buf[i]]) % 2 ** 32;
        const mask = i < s + Math.min(remaining, p.avg) ? strict : loose;
        if (((h | 0) & (mask | 0)) === 0) {
          end = i + 1;
          break;
        }
      }
    } else end = buf.length;
    out.push([s, end]);
    s = end;
  }
  return out;
}

describe("docs/FORMAT.md", () => {
  const sb = makeSandbox("format");
  afterAll(() => sb.cleanup());

  it("is enough to read a repository without pi-guard's code", async () => {
    const dir = path.join(sb.sessionsDir, "--work-proj--");
    mkdirSync(dir, { recursive: true });
    const session = Buffer.from(
      Array.from({ length: 3000 }, (_, i) => JSON.stringify({ type: "message", id: i.toString(16).padStart(8, "0"), text: `line ${i} ${"ü".repeat(i % 7)}` })).join("\n") + "\n",
    );
    writeFileSync(path.join(dir, "2026-11-30T10-00-00-000Z_0b9c5c3e-0000-4000-8000-000000000001.jsonl"), session);
    writeFileSync(path.join(sb.agentDir, "auth.json"), '{"anthropic":{"type":"api_key","key":"sk-ant-secret"}}', { mode: 0o600 });
    await initRepo(sb);
    await snapshot(sb);

    const { nodes, fileBytes } = readRepo(sb.repo, path.join(sb.configHome, "pi-guard", "key"));
    const byPath = new Map(nodes.map((n) => [n.path, n]));
    const sessionNode = byPath.get("sessions/--work-proj--/2026-11-30T10-00-00-000Z_0b9c5c3e-0000-4000-8000-000000000001.jsonl");
    expect(fileBytes(sessionNode).equals(session)).toBe(true);
    const auth = byPath.get("auth.json");
    expect(auth.mode).toBe(0o600);
    expect(fileBytes(auth).toString()).toContain("sk-ant-secret");
    expect(byPath.get("sessions")?.type).toBe("dir");
  });

  it("§8 tail: the blobs before a node's tail are the chunks a full chunking by §4 gives", async () => {
    const file = path.join(sb.sessionsDir, "--work-proj--", "2026-11-30T10-00-00-000Z_0b9c5c3e-0000-4000-8000-000000000001.jsonl");
    const states: Buffer[] = [readFileSync(file)];
    // Small appends, a snapshot after each: the end-of-file pieces of §10.
    for (let i = 0; i < 4; i++) {
      writeFileSync(file, `{"type":"message","id":"a${i}","text":"appended ${i}"}\n`, { flag: "a" });
      await snapshot(sb);
      states.push(readFileSync(file));
    }
    const { allNodes, snapshots, config, chunkerSeed, blobId, fileBytes } = readRepo(sb.repo, path.join(sb.configHome, "pi-guard", "key"));
    const rel = "sessions/--work-proj--/2026-11-30T10-00-00-000Z_0b9c5c3e-0000-4000-8000-000000000001.jsonl";
    const versions = allNodes.map((nodes) => nodes.find((n) => n.path === rel));
    // §7: how many bytes each snapshot read from the disk; the appends read about their tails.
    for (const s of snapshots.slice(1)) expect(s.summary.bytesRead).toBeLessThan(states[0].length);
    expect(versions.map((n) => fileBytes(n))).toEqual(states);
    for (const [i, node] of versions.entries()) {
      // The order §8 gives: what an append changes comes last.
      expect(Object.keys(node)).toEqual(["root", "path", "type", "mode", "ino", "fullReadMs", "content", ...(node.tail === undefined ? [] : ["tail"]), "size", "mtimeMs", "ctimeMs"]);
      // §8, §10: the inode's change time as read, and when the file was last read from offset 0,
      // which the append path carries over while it trusts the old bytes.
      expect(typeof node.ctimeMs).toBe("number");
      expect(node.ctimeMs).toBeGreaterThanOrEqual(node.mtimeMs);
      expect(node.fullReadMs).toBe(versions[0].fullReadMs);
      const tail = node.tail ?? 1;
      expect(Number.isInteger(tail) && tail >= 1 && tail <= node.content.length).toBe(true);
      const bytes = states[i];
      const full = chunksBySpec(bytes, chunkerSeed, config.chunker.data).map(([a, b]) => blobId(bytes.subarray(a, b)));
      const kept = node.content.slice(0, node.content.length - tail);
      expect(full.slice(0, kept.length)).toEqual(kept);
    }
  });

  it("§8 two levels: the stream is cut into leaves by chunker.tree, and the leaf ids into the treeList blobs by chunker.list", () => {
    const { snapshots, config, chunkerSeed, blobId, leavesOf, streamOf } = readRepo(sb.repo, path.join(sb.configHome, "pi-guard", "key"));
    expect(config.chunker.list).toEqual({ min: 128, avg: 512, max: 2048 });
    for (const snap of snapshots) {
      expect(snap.version).toBe(2);
      const stream = streamOf(snap);
      expect(chunksBySpec(stream, chunkerSeed, config.chunker.tree).map(([a, b]) => blobId(stream.subarray(a, b)))).toEqual(leavesOf(snap));
      const ids = Buffer.concat(leavesOf(snap).map((id) => Buffer.from(id, "hex")));
      expect(chunksBySpec(ids, chunkerSeed, config.chunker.list).map(([a, b]) => blobId(ids.subarray(a, b)))).toEqual(snap.treeList);
    }
  });

  it("§7, §8 version 1: a repository written before the tree list (test/fixtures/repo-v1) reads by the same rules", () => {
    const fixture = path.join(import.meta.dirname, "..", "fixtures", "repo-v1");
    const { snapshots, allNodes, fileBytes } = readRepo(path.join(fixture, "repo"), path.join(fixture, "key"));
    const states = JSON.parse(readFileSync(path.join(fixture, "states.json"), "utf8")) as { files: Record<string, { base64?: string }> }[];
    expect(snapshots.map((s) => s.version)).toEqual([1, 1, 1]);
    for (const [i, nodes] of allNodes.entries()) {
      const files = nodes.filter((n) => n.type === "file" && n.root === "agent");
      const want = Object.entries(states[i].files).filter(([, f]) => f.base64 !== undefined);
      expect(files.map((n) => n.path).sort()).toEqual(want.map(([p]) => p).sort());
      for (const n of files) expect(fileBytes(n).toString("base64")).toBe(states[i].files[n.path].base64);
    }
  });

  it("§7 agents: which agent each root belongs to, by root name; pi-guard's own metadata belongs to none", async () => {
    // A second agent's data dir (Claude Code's, found at ~/.claude) makes a second agent root.
    const claude = path.join(sb.home, ".claude");
    mkdirSync(claude, { recursive: true });
    writeFileSync(path.join(claude, "settings.json"), '{"cleanupPeriodDays":36500}\n');
    await snapshot(sb);
    const { snapshots, nodes } = readRepo(sb.repo, path.join(sb.configHome, "pi-guard", "key"));
    const newest = snapshots.at(-1);
    expect(newest.roots.map((r: { name: string }) => r.name)).toEqual(["agent", "claude", "pi-guard-meta"]);
    expect(newest.agents).toEqual({ agent: "pi", claude: "claude" });
    expect(nodes.find((n) => n.root === "claude" && n.path === "settings.json")).toBeDefined();
    // The first snapshot, of pi alone, named pi's root too.
    expect(snapshots[0].agents).toEqual({ agent: "pi" });
    rmSync(claude, { recursive: true, force: true });
  });

  it("§7a: a snapshot listing holds, for the snapshots it covers, the decoded bytes of each snapshot object", async () => {
    const own = makeSandbox("format-listing");
    try {
      own.env.PI_GUARD_TEST_LISTING_BATCH = "2";
      mkdirSync(own.agentDir, { recursive: true });
      await initRepo(own);
      for (let i = 0; i < 3; i++) {
        writeFileSync(path.join(own.agentDir, "settings.json"), JSON.stringify({ round: i }));
        await snapshot(own);
      }
      const secret = Buffer.from(readFileSync(path.join(own.configHome, "pi-guard", "key"), "utf8").trim(), "base64");
      const keyName = readdirSync(path.join(own.repo, "keys"))[0];
      const k = JSON.parse(readFileSync(path.join(own.repo, "keys", keyName), "utf8"));
      const wrap = Buffer.from(hkdfSync("sha256", secret, Buffer.from(k.salt, "base64"), "pi-guard key file v1", 32));
      const key = Buffer.from(JSON.parse(unseal(wrap, Buffer.from(k.data, "base64"), `pi-guard v2 key ${keyName}`).toString()).encryption, "base64");
      const snapshotBodies = new Map(
        readdirSync(path.join(own.repo, "snapshots")).map((name) => [name, decodePayload(unseal(key, readFileSync(path.join(own.repo, "snapshots", name)), "pi-guard v2 snapshot"))]),
      );
      const names = readdirSync(path.join(own.repo, "listing"));
      expect(names).toHaveLength(1); // the first two snapshots; the third waits for the next batch
      const raw = readFileSync(path.join(own.repo, "listing", names[0]));
      expect(createHash("sha256").update(raw).digest("hex")).toBe(names[0]);
      const b = decodePayload(unseal(key, raw, "pi-guard v2 listing"));
      expect(b.subarray(0, 4).toString()).toBe("PGSL");
      expect(b[4]).toBe(1);
      const count = b.readUInt32LE(5);
      let o = 9;
      const covered: string[] = [];
      for (let i = 0; i < count; i++) {
        const id = b.toString("hex", o, o + 32);
        const length = b.readUInt32LE(o + 32);
        o += 36;
        expect(b.subarray(o, o + length).equals(snapshotBodies.get(id)!)).toBe(true);
        o += length;
        covered.push(id);
      }
      expect(o).toBe(b.length);
      expect(covered).toHaveLength(2);
    } finally {
      own.cleanup();
    }
  });

  it("leaves no plaintext of auth.json or the sessions in any repository object", () => {
    const files = listFiles(sb.repo);
    expect(files.length).toBeGreaterThan(4);
    for (const f of files) {
      const bytes = readFileSync(f);
      for (const secret of ["sk-ant-secret", "anthropic", "line 2999"]) {
        expect(bytes.includes(Buffer.from(secret)), `${secret} in ${f}`).toBe(false);
      }
    }
  });
});
