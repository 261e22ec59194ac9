// Column widths for `sessions list`: a name is read from its start, so it is cut at the end; a
// project path is told apart by its last folders, so it is cut at the front. The two share what
// the other columns leave of the terminal width.

/** Code points, so an emoji is never split into a lone surrogate. */
const chars = (text: string) => Array.from(text);

export function cutEnd(text: string, max: number): string {
  const c = chars(text);
  return c.length > max ? `${c.slice(0, Math.max(0, max - 1)).join("")}…` : text;
}

export function cutStart(text: string, max: number): string {
  const c = chars(text);
  return c.length > max ? `…${c.slice(c.length - Math.max(0, max - 1)).join("")}` : text;
}

export const DEFAULT_WIDTH = 100;

/** The terminal's width: COLUMNS when set to a number, else the TTY's, else 100. */
export function terminalWidth(env: NodeJS.ProcessEnv = process.env, out: { isTTY?: boolean; columns?: number } = process.stdout): number {
  const fromEnv = Number(env.COLUMNS);
  if (Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv;
  if (out.isTTY && typeof out.columns === "number" && out.columns > 0) return out.columns;
  return DEFAULT_WIDTH;
}

const MIN_NAME = 12;
const MIN_PROJECT = 12;

/**
 * Widths for the name and project columns. `fixed` is the width the other columns need, with the
 * separators. Both columns get their full length when it fits; otherwise the project gets up to
 * 40% of what is left and the name the rest, never below a readable minimum (a very narrow
 * terminal then wraps, as it would anyway).
 */
export function nameAndProjectWidths(width: number, fixed: number, nameWant: number, projectWant: number): { name: number; project: number } {
  const avail = width - fixed;
  if (nameWant + projectWant <= avail) return { name: nameWant, project: projectWant };
  let project = Math.min(projectWant, Math.max(MIN_PROJECT, Math.floor(avail * 0.4)));
  let name = Math.max(MIN_NAME, avail - project);
  if (name > nameWant) {
    name = nameWant;
    project = Math.max(MIN_PROJECT, Math.min(projectWant, avail - name));
  }
  return { name: Math.min(name, nameWant), project: Math.min(project, projectWant) };
}

/** A readable name: below this, columns that matter less are left out rather than cut it further. */
const GOOD_NAME = 24;

/**
 * The rows of `sessions list` fitted to `width`: column 1 is the name, column 2 the project, the
 * others are kept whole. When even so the name would get fewer than 24 characters, the columns in
 * `droppable` are left out, in that order, until it fits (a narrow terminal keeps ID, NAME, PROJECT,
 * LAST ACTIVITY and WHERE). Row 0 is the heading.
 */
export function fitListRows(rows: string[][], width: number, droppable: number[] = [], sep = 2): string[][] {
  if (rows.length === 0) return rows;
  const want = (i: number) => Math.max(...rows.map((r) => chars(r[i] ?? "").length));
  const dropped = new Set<number>();
  const layout = () => {
    const cols = rows[0].map((_, i) => i).filter((i) => !dropped.has(i));
    let fixed = sep * (cols.length - 1);
    for (const i of cols) if (i !== 1 && i !== 2) fixed += want(i);
    return { cols, w: nameAndProjectWidths(width, fixed, want(1), want(2)) };
  };
  let { cols, w } = layout();
  for (const i of droppable) {
    if (w.name >= Math.min(GOOD_NAME, want(1))) break;
    dropped.add(i);
    ({ cols, w } = layout());
  }
  return rows.map((r, k) => cols.map((i) => (k === 0 ? r[i] : i === 1 ? cutEnd(r[i], w.name) : i === 2 ? cutStart(r[i], w.project) : r[i])));
}
