// pi's HTML export embeds the whole session as base64 JSON in
// <script id="session-data" type="application/json">: {header, entries, leafId, ...}
// (export-html/index.js). Decoding it gives back every entry exactly as pi held it.

import { promises as fs } from "node:fs";
import { parseBounded } from "../model/nesting.js";
import { type SessionEntry, type SessionHeader } from "../model/session.js";
import { RepoError } from "../repo/errors.js";
import { deepGap, statInput } from "./input.js";
import type { SourceResult } from "./types.js";

const OPEN = /<script\s+id="session-data"\s+type="application\/json"\s*>/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function notExport(file: string, why: string): RepoError {
  return new RepoError(`${file} is not a pi HTML export: ${why}`, "input");
}

export async function salvageHtml(file: string): Promise<SourceResult> {
  const stat = await statInput(file);
  if (stat.size === 0) throw notExport(file, "the file is empty");
  const html = await fs.readFile(file, "latin1"); // base64 is ASCII; latin1 never fails on junk bytes
  const open = OPEN.exec(html);
  if (!open) throw notExport(file, 'no <script id="session-data"> element');
  const start = open.index + open[0].length;
  const end = html.indexOf("</script>", start);
  if (end === -1) throw notExport(file, "the session-data element is cut off (truncated file?)");
  const payload = html.slice(start, end).trim();
  if (!BASE64.test(payload) || payload.length % 4 !== 0) throw notExport(file, "the session-data element is not base64");

  const parsed = parseBounded(Buffer.from(payload, "base64").toString("utf8"));
  if (!parsed.ok) throw notExport(file, "the session data is not valid JSON");
  const data = parsed.value as { header?: SessionHeader; entries?: SessionEntry[]; leafId?: string | null };
  const header = data?.header;
  if (!header || header.type !== "session" || typeof header.id !== "string") throw notExport(file, "the session data has no session header");
  if (!Array.isArray(data.entries)) throw notExport(file, "the session data has no entry list");

  const entries = data.entries;
  const gaps: string[] = [];
  const bad = entries.filter((e) => !e || typeof e.id !== "string" || typeof e.type !== "string").length;
  if (bad > 0) throw notExport(file, `${bad} entries have no id or type`);
  const leafId = typeof data.leafId === "string" ? data.leafId : null;
  // The export holds pi's in-memory view: a v1/v2 file was migrated before export, so old
  // line-level details (v1 firstKeptEntryIndex, hookMessage) cannot come back.
  if (parsed.cut) gaps.push(deepGap(`the session data (${parsed.cut} place${parsed.cut === 1 ? "" : "s"})`));
  if ((header.version ?? 1) < 3) gaps.push(`the export came from a version ${header.version ?? 1} file; entries are pi's migrated v3 form`);
  return {
    source: { kind: "html", path: file },
    sessions: [
      {
        header: { ...header, version: 3 },
        idKnown: true,
        cwdKnown: typeof header.cwd === "string" && header.cwd !== "",
        entries,
        leafId,
        sources: [{ kind: "html", path: file }],
        gaps,
      },
    ],
    notes: [],
  };
}
