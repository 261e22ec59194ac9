// Turns per-tool measurements into the comparison table and its JSON form.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatBytes } from "./size.js";

export type Cell = { value: number } | { text: string } | { error: string };
export type Target = { kind: "ratio"; max: number } | { kind: "piGuardMax"; max: number } | { kind: "identical" } | { kind: "none" };
export type Unit = "ms" | "MB" | "bytes" | "text" | "count";

export interface Row {
  metric: string;
  unit: Unit;
  restic: Cell;
  piGuard: Cell;
  /** pi-guard / restic, when both are numbers. */
  ratio: number | null;
  target: string;
  pass: "pass" | "fail" | "-";
}

const num = (c: Cell): number | null => ("value" in c ? c.value : null);

export function makeRow(metric: string, unit: Unit, restic: Cell, piGuard: Cell, target: Target): Row {
  const r = num(restic);
  const p = num(piGuard);
  const ratio = r !== null && p !== null && r > 0 ? p / r : null;
  let targetText = "-";
  let pass: Row["pass"] = "-";
  switch (target.kind) {
    case "ratio":
      targetText = `ratio <= ${target.max.toFixed(1)}`;
      pass = ratio !== null && ratio <= target.max ? "pass" : "fail";
      break;
    case "piGuardMax":
      targetText = `pi-guard <= ${target.max} ${unit}`;
      pass = p !== null && p <= target.max ? "pass" : "fail";
      break;
    case "identical":
      targetText = "both identical";
      pass = "text" in restic && restic.text === "identical" && "text" in piGuard && piGuard.text === "identical" ? "pass" : "fail";
      break;
  }
  return { metric, unit, restic, piGuard, ratio, target: targetText, pass };
}

function showCell(c: Cell, unit: Unit): string {
  if ("error" in c) return `error: ${c.error}`;
  if ("text" in c) return c.text;
  if (unit === "ms") return `${(c.value / 1000).toFixed(2)} s`;
  if (unit === "MB") return `${c.value.toFixed(1)} MB`;
  if (unit === "bytes") return formatBytes(c.value);
  return String(c.value);
}

const MAX_CELL = 60;
const cut = (text: string): string => (text.length > MAX_CELL ? `${text.slice(0, MAX_CELL - 3)}...` : text);

/** Every distinct error in full, to print under the table whose cells cut them short. */
export function listErrors(rows: Row[]): string[] {
  const out = new Set<string>();
  for (const r of rows) {
    if ("error" in r.restic) out.add(`restic: ${r.restic.error}`);
    if ("error" in r.piGuard) out.add(`pi-guard: ${r.piGuard.error}`);
  }
  return [...out];
}

/** A plain aligned text table; long error cells are cut so the table stays readable. */
export function formatTable(rows: Row[]): string {
  const header = ["metric", "restic", "pi-guard", "ratio pi-guard/restic", "target", "pass/fail"];
  const body = rows.map((r) => [
    r.metric,
    cut(showCell(r.restic, r.unit)),
    cut(showCell(r.piGuard, r.unit)),
    r.ratio === null ? "-" : r.ratio.toFixed(3),
    r.target,
    r.pass,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i])).join(" | ").trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("-|-"), ...body.map(line)].join("\n");
}

/** Write a bench's result as `<outDir>/<prefix>-<date>.json` and say where. */
export function writeResultFile(outDir: string, prefix: string, result: { date: string }): string {
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `${prefix}-${result.date.replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify(result, null, 2) + "\n");
  console.log(`\nwrote ${file}`);
  return file;
}

/**
 * Run `fn` in a fresh folder under /tmp (never in the checkout: a 1 GiB tree plus repositories),
 * removed afterwards, on Ctrl-C too, unless `keep`.
 */
export async function withWorkDir(prefix: string, keep: boolean, log: (msg: string) => void, fn: (workDir: string) => Promise<void>): Promise<void> {
  const workDir = mkdtempSync(`/tmp/${prefix}`);
  const cleanup = (): void => {
    if (keep) log(`kept ${workDir}`);
    else rmSync(workDir, { recursive: true, force: true });
  };
  process.once("SIGINT", () => {
    cleanup();
    process.exit(130);
  });
  try {
    await fn(workDir);
  } finally {
    cleanup();
  }
}
