// Estimates how well the generated tree compresses, so we can check it looks
// like real session data (about 3x) rather than text that is trivially small.
import { spawnSync } from "node:child_process";
import { closeSync, existsSync, openSync, readSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

export interface CompressionSample {
  sampledBytes: number;
  gzip1Ratio: number;
  /** zstd -3 is close to restic's default compression; null when zstd is not installed. */
  zstd3Ratio: number | null;
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const ent of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const full = join(dir, ent.name);
    if (ent.isDirectory()) out.push(...listFiles(full));
    else if (ent.isFile()) out.push(full);
  }
  return out;
}

function readPrefix(path: string, max: number): Buffer {
  const len = Math.min(max, statSync(path).size);
  const buf = Buffer.alloc(len);
  const fd = openSync(path, "r");
  try {
    readSync(fd, buf, 0, len, 0);
  } finally {
    closeSync(fd);
  }
  return buf;
}

/** Compresses the start of every file (each file alone), about `sampleBytes` in total. */
export function sampleCompression(dir: string, sampleBytes = 64 * 1024 * 1024): CompressionSample {
  const files = listFiles(dir);
  const perFile = Math.max(256 * 1024, Math.floor(sampleBytes / files.length));
  let raw = 0;
  let gz = 0;
  let zs = 0;
  const haveZstd = existsSync("/usr/bin/zstd");
  for (const f of files) {
    const buf = readPrefix(f, perFile);
    if (buf.length === 0) continue;
    raw += buf.length;
    gz += gzipSync(buf, { level: 1 }).length;
    if (haveZstd) {
      const r = spawnSync("/usr/bin/zstd", ["-3", "-c", "-q"], { input: buf, maxBuffer: perFile * 2 });
      zs += r.stdout.length;
    }
  }
  return { sampledBytes: raw, gzip1Ratio: raw / gz, zstd3Ratio: haveZstd ? raw / zs : null };
}
