// Check session text with pi's own in-memory code (never SessionManager.open, which rewrites
// files). If pi's functions accept it and build a context, pi will load the file.

import {
  buildSessionContext,
  migrateSessionEntries,
  parseSessionEntries,
  type SessionContext,
  type SessionEntry,
  type SessionHeader,
} from "@mariozechner/pi-coding-agent";

export interface PiValidation {
  header: SessionHeader;
  /** Entries after pi's migration (header excluded), as pi holds them in memory. */
  entries: SessionEntry[];
  context: SessionContext;
  /** Lines pi's parser kept, header included: lines it silently dropped are missing here. */
  parsedLines: number;
}

export interface ValidateOptions {
  /** Fail when the file holds no entries (default true). */
  expectEntries?: boolean;
  /** Fail when the built context has no messages (default false). */
  expectMessages?: boolean;
}

export function validateWithPi(text: string, options: ValidateOptions = {}): PiValidation {
  const fail = (why: string): never => {
    throw new Error(`pi would not load this session: ${why}`);
  };
  const parsed = parseSessionEntries(text) as Array<{ type?: unknown; id?: unknown }>;
  const first = parsed[0];
  // pi's loadEntriesFromFile drops the whole file when line 1 is not a header with a string id.
  if (!first || first.type !== "session" || typeof first.id !== "string") fail("the first line is not a session header with a string id");
  const all = parsed as Parameters<typeof migrateSessionEntries>[0];
  migrateSessionEntries(all);
  const header = all[0] as SessionHeader;
  if (header.version !== 3) fail(`migration left version ${String(header.version)}`);
  const entries = all.filter((e): e is SessionEntry => e.type !== "session");
  if ((options.expectEntries ?? true) && entries.length === 0) fail("no entries after the header");
  const ids = new Set<string>();
  for (const e of entries) {
    if (typeof e.id !== "string" || !e.id) fail(`an entry of type ${e.type} has no id`);
    if (ids.has(e.id)) fail(`duplicate entry id ${e.id}`);
    ids.add(e.id);
  }
  let context: SessionContext;
  try {
    context = buildSessionContext(entries);
  } catch (err) {
    return fail(`buildSessionContext threw: ${(err as Error).message}`);
  }
  if (options.expectMessages && context.messages.length === 0) fail("the context has no messages");
  return { header, entries, context, parsedLines: parsed.length };
}
