// pi behind the AgentAdapter interface: its file format (lines, parse, repair, writer, paths and
// system-prompt here), over the common session model (src/model/), which is pi's entry model.

import type { KnownSecret } from "../../export/secrets.js";
import { PI_AGENT_FILES } from "./paths.js";
import { parseSessionFileName } from "./writer.js";
import type { SessionHeader } from "../../model/session.js";
import { MAX_JSON_FILE_BYTES, type AgentAdapter, type FileInfo, type FileReader, type FileRef, type RestoreCheck, type SessionMeta } from "../types.js";
import { sqliteUnits } from "../units.js";
import { locatePi, PI_AGENT_ROOT, PI_SESSIONS_ROOT } from "./locate.js";

export { PI_AGENT_ROOT, PI_SESSIONS_ROOT };

/** A session file whose first line is longer than this has no header pi would accept. */
const MAX_HEADER_BYTES = 1 << 20;
/** A whole session is read into memory to map it; sessions of this size are already rare. */
const MAX_SESSION_BYTES = 1 << 30;



/** pi's sessions: every .jsonl of root "sessions", and those below `sessions/` in the agent root. */
function isSessionFile(ref: FileRef): boolean {
  if (!ref.path.endsWith(".jsonl")) return false;
  return ref.root === PI_SESSIONS_ROOT || (ref.root === PI_AGENT_ROOT && ref.path.startsWith("sessions/"));
}

async function* sessionFiles(files: FileReader): AsyncGenerator<FileInfo> {
  if (files.roots.includes(PI_AGENT_ROOT)) for await (const f of files.list(PI_AGENT_ROOT, "sessions")) if (isSessionFile(f)) yield f;
  if (files.roots.includes(PI_SESSIONS_ROOT)) for await (const f of files.list(PI_SESSIONS_ROOT)) if (isSessionFile(f)) yield f;
}

/** The first line of a file, at most MAX_HEADER_BYTES of it. */
async function firstLine(files: FileReader, ref: FileRef): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of files.stream(ref)) {
    const nl = chunk.indexOf(0x0a);
    parts.push(nl === -1 ? chunk : chunk.subarray(0, nl));
    size += chunk.length;
    if (nl !== -1 || size > MAX_HEADER_BYTES) break;
  }
  return Buffer.concat(parts).subarray(0, MAX_HEADER_BYTES).toString("utf8");
}

function headerOf(line: string): SessionHeader | undefined {
  try {
    const h = JSON.parse(line) as SessionHeader;
    return h && typeof h === "object" && h.type === "session" && typeof h.id === "string" ? h : undefined;
  } catch {
    return undefined;
  }
}

async function metaOf(files: FileReader, f: FileInfo): Promise<SessionMeta> {
  const header = headerOf(await firstLine(files, f).catch(() => ""));
  const named = parseSessionFileName(f.path);
  const file: FileRef = { root: f.root, path: f.path };
  return {
    agent: "pi",
    id: header?.id ?? named?.id ?? f.path,
    ...(typeof header?.cwd === "string" && header.cwd ? { cwd: header.cwd } : {}),
    ...((header?.timestamp ?? named?.timestamp) ? { started: header?.timestamp ?? named?.timestamp } : {}),
    updated: new Date(f.mtimeMs).toISOString(),
    files: [file],
    bytes: f.size,
  };
}

const isDb = (ref: FileRef) => /\.(db|sqlite3?)$/.test(ref.path);

export const piAdapter: AgentAdapter = {
  name: "pi",
  title: "pi",
  locate: locatePi,
  secretFiles: () =>
    PI_AGENT_FILES.filter((f) => f.secret !== "no").map((f) => ({ root: PI_AGENT_ROOT, path: f.name, kind: f.secret === "always" ? "whole" : "if-it-holds-any", what: f.what })),
  async secretValues(files) {
    const { SECRET_FILES, secretsInText } = await import("../../export/secrets.js");
    const out = new Map<string, KnownSecret>();
    for (const name of SECRET_FILES) {
      const ref = { root: PI_AGENT_ROOT, path: name };
      if (!files.roots.includes(PI_AGENT_ROOT) || !(await files.stat(ref))) continue;
      const text = (await files.read(ref, MAX_JSON_FILE_BYTES)).toString("utf8");
      for (const s of secretsInText(text, name)) if (!out.has(s.value)) out.set(s.value, s);
    }
    return [...out.values()].sort((a, b) => b.value.length - a.value.length);
  },
  copyRules: () => [
    { root: PI_SESSIONS_ROOT, glob: "**/*.jsonl", kind: "append-jsonl" },
    { root: PI_AGENT_ROOT, glob: "sessions/**/*.jsonl", kind: "append-jsonl" },
    { root: PI_AGENT_ROOT, glob: "**/*.{db,sqlite,sqlite3}", kind: "sqlite-wal" },
    { root: PI_AGENT_ROOT, glob: "*.json", kind: "rewrite-json" },
  ],
  sessions: {
    async *list(files) {
      for await (const f of sessionFiles(files)) yield metaOf(files, f);
    },
    async read(files, meta) {
      const { readSessionText } = await import("./parse.js");
      const ref = meta.files[0];
      const read = readSessionText(await files.read(ref, MAX_SESSION_BYTES));
      const header: SessionHeader = read.header ?? { type: "session", version: 3, id: meta.id, timestamp: meta.started ?? "", cwd: meta.cwd ?? "" };
      return {
        meta,
        header,
        entries: read.entries,
        leafId: read.entries.at(-1)?.id ?? null,
        warnings: read.issues.map((i) => `line ${i.line}: ${i.message}`),
      };
    },
    isSessionFile,
  },
  hazards: async (loc, ctx) => (await import("../../doctor-hazards.js")).findHazards({ agentDir: loc.dir, roots: loc.roots, repo: ctx.repo, keyFile: ctx.keyFile }, ctx.env),
  restoreUnits: (selected, available) => sqliteUnits(selected, available, isDb),
  // pi 1.x throws on a session file whose first line is no valid header (0.73.1 replaced it with an empty one).
  async checkRestored(files, units) {
    const out: RestoreCheck[] = [];
    for (const ref of units.flatMap((u) => u.files).filter(isSessionFile)) {
      const header = headerOf(await firstLine(files, ref).catch(() => ""));
      out.push({
        name: `${ref.root}:${ref.path}`,
        ok: !!header,
        message: header ? `session ${header.id} has a valid header: pi lists and resumes it` : "the first line is no valid session header: pi would refuse (1.x) or empty (0.73.1) this session",
      });
    }
    return out;
  },
};
