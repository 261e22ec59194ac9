// Hashes every regular file of a tree (streamed, so memory stays flat) to
// prove a restore is byte-identical, and measures repository size on disk.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, readdirSync } from "node:fs";
import { join, relative } from "node:path";

export type TreeManifest = Map<string, string>;

function listFiles(dir: string, out: string[] = []): string[] {
  for (const ent of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, ent.name);
    if (ent.isDirectory()) listFiles(full, out);
    else if (ent.isFile()) out.push(full);
  }
  return out;
}

function hashFile(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash("sha256");
    createReadStream(path, { highWaterMark: 1024 * 1024 })
      .on("data", (d) => h.update(d))
      .on("error", reject)
      .on("end", () => resolve(h.digest("hex")));
  });
}

/** Relative path -> sha256. Reading everything also warms the page cache. */
export async function hashTree(root: string): Promise<TreeManifest> {
  const manifest: TreeManifest = new Map();
  for (const f of listFiles(root).sort()) manifest.set(relative(root, f), await hashFile(f));
  return manifest;
}

/** "identical", or a one-line summary of what differs. */
export function compareTrees(expected: TreeManifest, actual: TreeManifest): string {
  const missing = [...expected.keys()].filter((k) => !actual.has(k));
  const extra = [...actual.keys()].filter((k) => !expected.has(k));
  const differ = [...expected.keys()].filter((k) => actual.has(k) && actual.get(k) !== expected.get(k));
  if (missing.length + extra.length + differ.length === 0) return "identical";
  const example = missing[0] ?? differ[0] ?? extra[0];
  return `${missing.length} missing, ${extra.length} extra, ${differ.length} differ (e.g. ${example})`;
}

/** Apparent size in bytes, as `du -sb` reports it (what a copy of the repo would take). */
export function duBytes(dir: string): number {
  const r = spawnSync("du", ["-sb", dir], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`du -sb ${dir} failed: ${r.stderr.trim()}`);
  return Number(r.stdout.split(/\s/)[0]);
}
