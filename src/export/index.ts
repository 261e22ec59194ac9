// Export a session to Markdown, JSON or HTML, from whatever holds its newest bytes (the live
// file or a snapshot). Output files are written atomically: a failed export leaves nothing.
// exportSessionTo streams (bounded memory for any session size); exportSession renders a session
// already in memory, and is the reference the streamed output must equal.

import { readLines } from "../agents/pi/parse.js";
import { RepoError } from "../repo/errors.js";
import type { LoadedSession } from "../sessions/read.js";
import { exportInput, type ExportInput } from "./model.js";
import { openSessionStream, type ByteSource } from "./entry-stream.js";
import { fileSink, type ExportSink } from "./output.js";
import { makeRedactor, redactDeep, redactRendered, type Redactor } from "./redact.js";
import { agentSecrets, type KnownSecret, mergeSecrets } from "./secrets.js";

export const EXPORT_FORMATS = ["markdown", "json", "html"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

const ALIASES: Record<string, ExportFormat> = { md: "markdown", markdown: "markdown", json: "json", html: "html", htm: "html" };

export function parseFormat(value: string | undefined, outputPath?: string): ExportFormat {
  const fromExt = outputPath ? /\.([a-z]+)$/i.exec(outputPath)?.[1]?.toLowerCase() : undefined;
  const name = (value ?? fromExt ?? "markdown").toLowerCase();
  const format = ALIASES[name];
  if (!format) throw new RepoError(`unknown export format "${value ?? name}" (use one of: ${EXPORT_FORMATS.join(", ")})`, "usage");
  return format;
}

export interface ExportOptions {
  format: ExportFormat;
  branch?: string;
  /** Mask key shapes and the secret values in <agentDir>/auth.json, models.json, mcp.json and mcp-auth.json, and the session's <cwd>/.pi/mcp.json. */
  redact?: boolean;
  agentDir: string;
  /** With redact: further values to mask (every agent's credentials: SessionCatalog.redactionSecrets). */
  secrets?: readonly KnownSecret[];
  /** Where the bytes came from, shown in the export. */
  source: string;
}

export async function exportSession(session: LoadedSession, opts: ExportOptions): Promise<string> {
  const redactor = opts.redact ? await redactorFor(opts, session.header.cwd) : undefined;
  // The model is redacted before rendering, so no format can show an unmasked copy; the rendered
  // text gets a last pass for whatever a renderer added or re-encoded.
  const input = exportInput(session, { branch: opts.branch, source: opts.source, redactor });
  const text = await render(input, opts.format);
  return redactor ? redactRendered(text, redactor) : text;
}

async function render(input: ExportInput, format: ExportFormat): Promise<string> {
  switch (format) {
    case "markdown":
      return (await import("./markdown.js")).renderMarkdown(input);
    case "json":
      return (await import("./json.js")).renderJson(input);
    case "html":
      return (await import("./html.js")).renderHtml(input);
  }
}

/** Write an export (replacing an existing file atomically); errors become one clear line. */
export async function writeExport(file: string, text: string): Promise<void> {
  const sink = await fileSink(file);
  await sink.write(text);
  await sink.commit();
}

/**
 * Export a session read from `bytes` (twice: see entry-stream.ts) into `sink`, a piece at a time,
 * so memory stays bounded whatever the session's size. The sink is committed only when the whole
 * export was written; on any failure it is aborted (no file is left) and the error propagates.
 * Returns the number of bytes written.
 */
export async function exportSessionTo(
  bytes: ByteSource,
  sink: () => Promise<ExportSink>,
  opts: ExportOptions & { fallbackId: string; onWarning?: (line: string) => void },
): Promise<number> {
  const redactor = opts.redact ? await redactorFor(opts, await headerCwd(bytes)) : undefined;
  const redact = redactor ? (text: string) => redactor(text) : (text: string) => text;
  // Pass 1 runs before the output is opened: a bad --branch leaves nothing behind.
  const stream = await openSessionStream(bytes, {
    fallbackId: opts.fallbackId,
    branch: opts.branch,
    redact,
    mapEntry: redactor ? (e) => redactDeep(e, redactor) : undefined,
  });
  for (const w of stream.warnings) opts.onWarning?.(redact(w));
  // As in exportSession: the model is redacted before rendering, the rendered text once more.
  const meta = { header: redactor ? redactDeep(stream.header, redactor) : stream.header, source: redact(opts.source), redacted: !!redactor, redact };
  const pieces =
    opts.format === "json"
      ? (await import("./json.js")).streamJson(stream, meta)
      : opts.format === "html"
        ? (await import("./html.js")).streamHtml(stream, meta)
        : (await import("./markdown.js")).streamMarkdown(stream, meta);
  return writeAll(sink, redactor ? redactPieces(pieces, redactor) : pieces);
}

/** What --redact masks: pi's credentials (and the session project's .pi/mcp.json), and the other known values. */
async function redactorFor(opts: ExportOptions, cwd: string | undefined): Promise<Redactor> {
  return makeRedactor(mergeSecrets(await agentSecrets(opts.agentDir, process.env, cwd), opts.secrets ?? []));
}

/** The session header's cwd (its project, whose .pi/mcp.json --redact reads), from the first line; undefined when there is none. */
async function headerCwd(bytes: ByteSource): Promise<string | undefined> {
  for await (const raw of readLines(bytes.read())) {
    if (raw.bytes.toString("utf8").trim() === "") continue; // pi skips blank lines before its header too
    try {
      const h = JSON.parse(raw.bytes.toString("utf8")) as { type?: unknown; cwd?: unknown };
      return h?.type === "session" && typeof h.cwd === "string" ? h.cwd : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

async function* redactPieces(pieces: AsyncIterable<string>, redactor: Redactor): AsyncGenerator<string> {
  for await (const p of pieces) yield redactRendered(p, redactor);
}

async function writeAll(open: () => Promise<ExportSink>, pieces: AsyncIterable<string> | Iterable<string>): Promise<number> {
  const sink = await open();
  try {
    for await (const p of pieces) await sink.write(p);
    await sink.commit();
  } catch (err) {
    await sink.abort();
    throw err;
  }
  return sink.bytes;
}

export { checkExportTarget, fileSink, stdoutSink, type ExportSink } from "./output.js";
