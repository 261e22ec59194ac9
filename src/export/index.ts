// Export a session to Markdown, JSON or HTML, from whatever holds its newest bytes (the live
// file or a snapshot). Output files are written atomically: a failed export leaves nothing.

import { RepoError } from "../repo/errors.js";
import type { LoadedSession } from "../sessions/read.js";
import { exportInput, type ExportInput } from "./model.js";
import { makeRedactor, redactRendered } from "./redact.js";
import { agentSecrets } from "./secrets.js";

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
  /** Mask key shapes and the secret values in <agentDir>/auth.json and models.json. */
  redact?: boolean;
  agentDir: string;
  /** Where the bytes came from, shown in the export. */
  source: string;
}

export async function exportSession(session: LoadedSession, opts: ExportOptions): Promise<string> {
  const redactor = opts.redact ? makeRedactor(await agentSecrets(opts.agentDir)) : undefined;
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

const WRITE_ERRORS: Record<string, string> = {
  ENOTDIR: "a part of the path is a file, not a folder",
  ENOENT: "the folder does not exist",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EISDIR: "it is a folder",
  EROFS: "read-only file system",
  ENOSPC: "no space left on the device",
};

/** Write an export (replacing an existing file atomically); errors become one clear line. */
export async function writeExport(file: string, text: string): Promise<void> {
  const { writeFileAtomic } = await import("../pi/writer.js");
  try {
    await writeFileAtomic(file, text, { overwrite: true, mode: 0o600 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "";
    throw new RepoError(`cannot write ${file}: ${WRITE_ERRORS[code] ?? (err as Error).message}`, "io");
  }
}
