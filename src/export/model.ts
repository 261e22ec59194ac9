// What every exporter receives: the session, the chosen branch and where it came from.

import type { SessionEntry, SessionHeader } from "../model/session.js";
import { sessionView, type SessionView } from "../sessions/view.js";
import type { LoadedSession } from "../sessions/read.js";
import { redactDeep, type Redactor } from "./redact.js";

export interface ExportInput {
  /**
   * The branch and the tree; for pi 1.x also `system` (each system prompt entry on the branch,
   * resolved against the prompt before it: src/agents/pi/system-prompt.ts), `leadingSystem` and `edits`
   * (the context edit in force for each edited entry). A streamed renderer gets the steps from
   * SystemReplay fed in branch order, and reads the branch's context_edit entries ahead
   * (streamMarkdown does both).
   */
  view: SessionView;
  /** "live <path>" or "snapshot <id> <path>". */
  source: string;
  redacted: boolean;
}

/** Redaction happens before anything is rendered, so no format can leak an unmasked copy. */
export function exportInput(session: LoadedSession, opts: { branch?: string; source: string; redactor?: Redactor }): ExportInput {
  const header: SessionHeader = opts.redactor ? redactDeep(session.header, opts.redactor) : session.header;
  const entries: SessionEntry[] = opts.redactor ? redactDeep(session.entries, opts.redactor) : session.entries;
  const source = opts.redactor ? opts.redactor(opts.source) : opts.source;
  return { view: sessionView({ ...session, header, entries }, opts.branch), source, redacted: !!opts.redactor };
}
