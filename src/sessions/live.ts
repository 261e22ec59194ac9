// Session files on disk now. pi keeps them in <sessions>/--<cwd>--/*.jsonl, or flat in a moved
// sessions dir; the config's roots also name a sessions dir that lives outside the agent dir.

import type { Dirent } from "node:fs";
import { promises as fs } from "node:fs";
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

/** Every *.jsonl directly in a sessions dir or one folder below it. */
export async function listLiveFiles(dirs: string[]): Promise<LiveFile[]> {
  const out = new Map<string, LiveFile>();
  const add = async (file: string) => {
    const st = await fs.stat(file).catch(() => undefined);
    if (st?.isFile()) out.set(file, { path: file, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
  };
  for (const dir of dirs) {
    for (const e of await readDir(dir)) {
      const abs = path.join(dir, e.name);
      if (e.isFile() && e.name.endsWith(".jsonl")) await add(abs);
      else if (e.isDirectory()) {
        for (const inner of await readDir(abs)) if (inner.isFile() && inner.name.endsWith(".jsonl")) await add(path.join(abs, inner.name));
      }
    }
  }
  return [...out.values()].sort((a, b) => a.path.localeCompare(b.path));
}
