// The salvage pipeline: read every source (read-only), merge per session id, add provenance,
// write. HTML, logs and terminal captures are read first, each session spilled to a temp file
// as soon as it is complete (spill.ts); hermes databases are then streamed one session at a
// time, each merged with what the pool holds for that id and staged to a temp file. Memory holds
// one session (plus one log line), never a whole log or database. Files appear only when every source was read
// (SessionWriter.commit), so bad input leaves no partial output.

import { withProvenance } from "./finalize.js";
import type { HermesSelection } from "./hermes.js";
import { mergeSessions } from "./merge.js";
import { SessionWriter, type WrittenSession } from "./output.js";
import { countRoles, fidelityReport, sessionReport, type FidelityReport, type SessionReport, type SourceSummary } from "./report.js";
import { messageKeys, SessionSpill } from "./spill.js";
import type { SalvagedSession, SalvageSource, SourceResult } from "./types.js";
import { RepoError } from "../repo/errors.js";
import { UUID_RE } from "./log-identity.js";
import type { SessionHeader } from "../model/session.js";

export interface SalvageOptions {
  html?: string[];
  logs?: string[];
  /** TUI scrollback captures; "-" is standard input. */
  terminals?: string[];
  hermes?: string[];
  /** In-flight journals of the pi extension (journal.ts). */
  journals?: string[];
  /** Which hermes sessions to take (--session, --cwd, --since, --all). */
  hermesSelection?: HermesSelection;
  /** Project dir for sessions whose source does not name one; for logs it wins over their lines. */
  cwd?: string;
  /** The session id of what --from-log holds, when its lines name none (or name the wrong one). */
  sessionId?: string;
  outDir?: string;
  install?: boolean;
  agentDir?: string;
  now?: Date;
}

export interface SalvageResult {
  /** The headers of the sessions written (entries are not kept: they can be gigabytes). */
  sessions: { header: SessionHeader }[];
  written: WrittenSession[];
  report: FidelityReport;
}

/**
 * HTML exports, logs and terminal captures, each session spilled to disk as soon as its source
 * finished it (a log hands over one session at a time), so memory does not grow with the input.
 */
async function readSources(options: SalvageOptions, spill: SessionSpill): Promise<SourceSummary[]> {
  const summaries: SourceSummary[] = [];
  const keep = (r: SourceResult) => {
    for (const s of r.sessions) spill.add(prepared(s, r.source, options.cwd));
    summaries.push({ source: r.source, sessions: r.sessionCount ?? r.sessions.length, notes: r.notes, notKept: r.notKept });
  };
  for (const file of options.html ?? []) {
    const { salvageHtml } = await import("./html.js");
    keep(await salvageHtml(file));
  }
  for (const file of options.logs ?? []) {
    const { salvageLog } = await import("./log.js");
    const source: SalvageSource = { kind: "log", path: file };
    keep(await salvageLog(file, (s) => spill.add(prepared(s, source, options.cwd)), { sessionId: options.sessionId, cwd: options.cwd }));
  }
  for (const file of options.terminals ?? []) {
    const { salvageTerminal } = await import("./terminal.js");
    keep(await salvageTerminal(file));
  }
  for (const file of options.journals ?? []) {
    const { salvageJournal } = await import("./journal.js");
    keep(await salvageJournal(file, options.now));
  }
  return summaries;
}

const shares = (keys: Set<string> | undefined, others: Set<string>) => [...(keys ?? [])].some((k) => others.has(k));

/** Fill in --cwd and note what this source gave, before merging blurs it. */
function prepared(s: SalvagedSession, source: SalvageSource, cwd: string | undefined): SalvagedSession {
  const withCwd = !s.cwdKnown && cwd ? { ...s, header: { ...s.header, cwd }, cwdKnown: true } : s;
  return { ...withCwd, provided: [{ source, messages: countRoles(s.entries), notKept: s.notKept }] };
}

export async function salvage(options: SalvageOptions): Promise<SalvageResult> {
  if (!options.html?.length && !options.logs?.length && !options.terminals?.length && !options.hermes?.length && !options.journals?.length) {
    throw new RepoError("name at least one source (--from-html, --from-log, --from-terminal, --from-hermes, --from-journal)", "usage");
  }
  if (options.sessionId !== undefined) {
    if (!options.logs?.length) throw new RepoError("--session-id only applies to --from-log", "usage");
    if (!UUID_RE.test(options.sessionId)) throw new RepoError(`--session-id must be a session UUID (like 0f8e2c1a-5b7d-4e2f-9a31-6c0d8e4b2f17), not "${options.sessionId}"`, "usage");
    options = { ...options, sessionId: options.sessionId.toLowerCase() };
  }
  const spill = new SessionSpill();
  const writer = new SessionWriter({ install: options.install, outDir: options.outDir, agentDir: options.agentDir });
  const reports: SessionReport[] = [];
  const headers: { header: SessionHeader }[] = [];
  const summaries: SourceSummary[] = [];
  const emit = async (group: SalvagedSession[]) => {
    for (const merged of mergeSessions(group)) {
      const session = withProvenance(merged, options.now);
      await writer.stage(session);
      reports.push(sessionReport(session, null));
      headers.push({ header: session.header });
    }
  };
  /** Pool sessions of this id, plus those with invented ids that share a message with them. */
  const takeGroup = (id: string, lead: SalvagedSession[]) => {
    const known = spill.take(spill.items.filter((p) => p.idKnown && p.id === id));
    const keys = new Set([...lead, ...known].flatMap((s) => [...messageKeys(s)]));
    return [...known, ...spill.take(spill.items.filter((p) => !p.idKnown && shares(p.keys, keys)))];
  };

  try {
    summaries.push(...(await readSources(options, spill)));
    for (const file of options.hermes ?? []) {
      const { streamHermes } = await import("./hermes.js");
      const stream = await streamHermes(file, { ...options.hermesSelection, cwd: options.cwd });
      let count = 0;
      try {
        for (const s of stream.sessions) {
          count++;
          const lead = prepared(s, stream.source, options.cwd);
          await emit([lead, ...takeGroup(s.header.id, [lead])]);
        }
      } finally {
        await stream.close();
      }
      summaries.push({ source: stream.source, sessions: count, notes: stream.notes });
    }
    // What no hermes session claimed: one id at a time, so memory holds one group.
    for (;;) {
      const next = spill.items.find((p) => p.idKnown);
      if (!next) break;
      await emit(takeGroup(next.id, []));
    }
    if (spill.items.length > 0) await emit(spill.take([...spill.items]));
    if (reports.length === 0) {
      const why = summaries.flatMap((r) => r.notes)[0];
      throw new RepoError(`no pi session could be recovered from ${summaries.map((r) => r.source.path).join(", ")}${why ? `: ${why}` : ""}`, "input");
    }
  } catch (err) {
    await writer.discard(true);
    throw err;
  } finally {
    spill.close();
  }
  const written = await writer.commit();
  const files = new Map(written.map((w) => [w.sessionId, w.path]));
  for (const r of reports) r.file = files.get(r.id) ?? null;
  return { sessions: headers, written, report: fidelityReport(summaries, reports) };
}
