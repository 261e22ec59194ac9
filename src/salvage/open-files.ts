// `--from-open-files`: a deleted file stays readable while some process holds it open. On Linux
// /proc/<pid>/fd/<n> links to the deleted inode, so its bytes can be copied out before that
// process exits. This is how the 1.6 GB hermes database and the web UI log in DESIGN.md §1 came back.

import { makeDirs } from "../fs-safe.js";
import { constants, createReadStream, createWriteStream, promises as fs } from "node:fs";
import { basename, join, resolve } from "node:path";
import { pipeline } from "node:stream/promises";
import picomatch from "picomatch";
import { isInside } from "../config/config.js";

const DELETED = " (deleted)";
/** What is worth saving under the agent dir: sessions, hermes databases (with WAL), logs. */
const AGENT_DIR_KINDS = /\.(jsonl|db|db-wal|db-shm|sqlite|sqlite3|log|json)$/;

export interface OpenFileOptions {
  agentDir: string;
  /** Extra glob(s) for held files outside the agent dir; a pattern without "/" matches the name. */
  match?: string[];
  outDir: string;
  /** Defaults to /proc; a test seam only in the sense of pointing at another procfs mount. */
  procRoot?: string;
}

export interface RecoveredOpenFile {
  pid: number;
  command: string;
  fd: number;
  /** The path the file had before it was deleted. */
  path: string;
  size: number;
  copy: string;
  /** Other pid:fd pairs holding the same file (copied once). */
  alsoHeldBy: string[];
}

export interface OpenFilesResult {
  files: RecoveredOpenFile[];
  /** Processes whose fds we were not allowed to read (another user's; run as that user or root). */
  unreadable: number;
}

async function command(procRoot: string, pid: string): Promise<string> {
  const cmdline = await fs.readFile(join(procRoot, pid, "cmdline"), "utf8").catch(() => "");
  if (cmdline) return cmdline.split("\0").filter(Boolean).join(" ");
  return (await fs.readFile(join(procRoot, pid, "comm"), "utf8").catch(() => "?")).trim();
}

export async function recoverOpenFiles(options: OpenFileOptions): Promise<OpenFilesResult> {
  const procRoot = options.procRoot ?? "/proc";
  const agentDir = resolve(options.agentDir);
  const globs = (options.match ?? []).map((g) => picomatch(g, { basename: !g.includes("/"), dot: true }));
  const wanted = (path: string) => (isInside(path, agentDir) && AGENT_DIR_KINDS.test(path)) || globs.some((m) => m(path));

  const pids = (await fs.readdir(procRoot)).filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid);
  const byInode = new Map<string, RecoveredOpenFile>();
  let unreadable = 0;
  for (const pid of pids) {
    const fdDir = join(procRoot, pid, "fd");
    let fds: string[];
    try {
      fds = await fs.readdir(fdDir);
    } catch {
      unreadable++;
      continue;
    }
    for (const fd of fds) {
      const link = join(fdDir, fd);
      const target = await fs.readlink(link).catch(() => "");
      if (!target.endsWith(DELETED)) continue;
      const path = target.slice(0, -DELETED.length);
      if (!wanted(path)) continue;
      const stat = await fs.stat(link).catch(() => undefined);
      if (!stat?.isFile()) continue;
      const inode = `${stat.dev}:${stat.ino}`;
      const seen = byInode.get(inode);
      if (seen) {
        seen.alsoHeldBy.push(`${pid}:${fd}`);
        continue;
      }
      const copy = await copyOut(link, options.outDir, `${pid}-${fd}-${basename(path)}`);
      const size = (await fs.stat(copy)).size;
      byInode.set(inode, { pid: Number(pid), command: await command(procRoot, pid), fd: Number(fd), path, size, copy, alsoHeldBy: [] });
    }
  }
  return { files: [...byInode.values()], unreadable };
}

/**
 * Stream the held file into a temp name, fsync, then link it into place without overwriting: a
 * copy under its final name is always complete. Streaming keeps a 1.6 GB database out of memory.
 */
async function copyOut(source: string, outDir: string, name: string): Promise<string> {
  await makeDirs(outDir, 0o700);
  const tmp = join(outDir, `.${name}.${process.pid}.tmp`);
  try {
    await pipeline(createReadStream(source), createWriteStream(tmp, { flags: "wx", mode: 0o600 }));
    const handle = await fs.open(tmp, constants.O_RDONLY);
    await handle.sync().finally(() => handle.close());
    let dest = join(outDir, name);
    for (let i = 2; ; i++) {
      try {
        await fs.link(tmp, dest);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST" || i > 99) throw err;
        dest = join(outDir, `${name}.${i}`);
      }
    }
    return dest;
  } finally {
    await fs.rm(tmp, { force: true });
  }
}

/** macOS has no /proc: lsof finds the file, lldb makes the holding process copy it out. */
export function macosSteps(agentDir: string, match: string[] = []): string {
  // grep -E wants regexes: escape the dir, and turn the globs' "*" into "[^/]*".
  const escape = (p: string) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
  const pattern = [escape(agentDir), ...match.map((g) => escape(g).replace(/\*/g, "[^/]*"))].join("|");
  return `macOS has no /proc, so pi-guard cannot read deleted files held open by other processes itself.
Do this by hand, before the process that holds the file exits:

1. Find deleted files that are still open (link count 0), and note PID and FD (the number in the FD column, without the letter):
     lsof -nP +L1 | grep -E '${pattern}'
2. Attach to that process (Xcode command line tools; may need sudo or SIP's debugger permission):
     sudo lldb -p PID
3. In lldb, copy the file out through the process's own descriptor, then put its offset back:
     expr (long long)lseek(FD, 0, 1)
       (prints the current offset: call it OFF)
     expr (int)open("/tmp/pi-guard-recovered-PID-FD", 0x601, 0600)
       (O_WRONLY|O_CREAT|O_TRUNC; prints the new descriptor: call it OUT)
     expr (long long)lseek(FD, 0, 0)
     expr (int)fcopyfile(FD, OUT, 0, 8)
       (8 is COPYFILE_DATA; 0 means success)
     expr (long long)lseek(FD, OFF, 0)
     expr (int)close(OUT)
     detach
     quit
4. Check the copy (ls -l /tmp/pi-guard-recovered-PID-FD; its size should match lsof's SIZE/OFF column),
   then feed it to pi-guard: a session with \`pi-guard repair\`, a log with \`pi-guard salvage --from-log\`.
`;
}

