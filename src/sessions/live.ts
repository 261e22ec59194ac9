// Session files on disk now. pi keeps them in <sessions>/--<cwd>--/*.jsonl, or flat in a moved
// sessions dir; the config's roots also name a sessions dir that lives outside the agent dir.

import type { Dirent } from "node:fs";
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import { sessionsDir } from "../agents/pi/paths.js";
import { compareStrings } from "../compare.js";

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
  // Another agent's root (Claude Code's ~/.claude) holds no pi sessions.
  for (const root of config.roots) if (root.name !== "agent" && (config.rootAgents?.[root.name] ?? "pi") === "pi") dirs.add(root.path);
  return [...dirs];
}

function readDir(dir: string): Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return []; // missing or not a folder: no sessions there
  }
}

/**
 * Every *.jsonl directly in a sessions dir or one folder below it, sorted by path. Synchronous on
 * purpose: these are local folders, and a thousand round trips through libuv's thread pool cost
 * more than the stat calls themselves.
 */
export function listLiveFiles(dirs: string[]): LiveFile[] {
  const out = new Map<string, LiveFile>();
  const add = (file: string) => {
    let st;
    try {
      st = statSync(file);
    } catch {
      return; // removed since the folder was read, or not ours to read
    }
    if (st.isFile()) out.set(file, { path: file, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
  };
  for (const dir of dirs.map((d) => path.resolve(d))) {
    for (const e of readDir(dir)) {
      if (e.isFile() && e.name.endsWith(".jsonl")) add(`${dir}/${e.name}`);
      else if (e.isDirectory()) {
        const sub = `${dir}/${e.name}`;
        for (const f of readDir(sub)) if (f.isFile() && f.name.endsWith(".jsonl")) add(`${sub}/${f.name}`);
      }
    }
  }
  return [...out.values()].sort((a, b) => compareStrings(a.path, b.path));
}
