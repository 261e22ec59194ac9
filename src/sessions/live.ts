// Session files on disk now. pi keeps them in <sessions>/--<cwd>--/*.jsonl, or flat in a moved
// sessions dir; the config's roots also name a sessions dir that lives outside the agent dir.

import type { Dirent, Stats } from "node:fs";
import { promises as fs, statSync } from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import { sessionsDir } from "../pi/paths.js";

export interface LiveFile {
  path: string;
  size: number;
  mtimeMs: number;
  ino: number;
}

/** The folders that may hold live sessions for this config, without duplicates. */
export function liveSessionDirs(config: Config, env: Record<string, string | undefined> = process.env): string[] {
  const dirs = new Set<string>([path.join(config.agentDir, "sessions")]);
  dirs.add(sessionsDir({ env, agentDir: config.agentDir }).dir);
  for (const root of config.roots) if (root.name !== "agent") dirs.add(root.path);
  return [...dirs];
}

async function readDir(dir: string): Promise<Dirent[]> {
  return fs.readdir(dir, { withFileTypes: true }).catch(() => []);
}

function statIfExists(file: string): Stats | undefined {
  try {
    return statSync(file);
  } catch {
    return undefined; // removed since the folder was read
  }
}

/**
 * Every *.jsonl directly in a sessions dir or one folder below it. stat is called synchronously:
 * a thousand round trips through libuv's thread pool were most of a warm `list`, while a local
 * stat returns in microseconds.
 */
export async function listLiveFiles(dirs: string[]): Promise<LiveFile[]> {
  const candidates: string[] = [];
  for (const dir of dirs) {
    const entries = await readDir(dir);
    const inner = await Promise.all(entries.filter((e) => e.isDirectory()).map(async (e) => ({ dir: path.join(dir, e.name), entries: await readDir(path.join(dir, e.name)) })));
    for (const e of entries) if (e.isFile() && e.name.endsWith(".jsonl")) candidates.push(path.join(dir, e.name));
    for (const sub of inner) for (const e of sub.entries) if (e.isFile() && e.name.endsWith(".jsonl")) candidates.push(path.join(sub.dir, e.name));
  }
  const out = new Map<string, LiveFile>();
  const stats = candidates.map((file) => statIfExists(file));
  candidates.forEach((file, i) => {
    const st = stats[i];
    if (st?.isFile()) out.set(file, { path: file, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
  });
  return [...out.values()].sort((a, b) => a.path.localeCompare(b.path));
}
