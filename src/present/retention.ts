/** How forget names a group of snapshots (a host and its folders) that it empties or refuses to. */
import type { EmptiedGroup } from "../repo/retention.js";

/** One group for a line of text: host, roots, how many and the newest. */
export function emptiedGroupText(g: EmptiedGroup): string {
  // Host and roots come from snapshot objects: no control character of theirs reaches a terminal or a log line.
  // eslint-disable-next-line no-control-regex
  const clean = (v: unknown) => String(v).replace(/[\u0000-\u001f\u007f]/g, "?");
  const roots = Array.isArray(g.roots) ? g.roots.map((r) => `${clean(r?.name)} ${clean(r?.path)}`).join(", ") : "?";
  return `host ${clean(g.host)} (${roots}): ${g.snapshots} snapshot(s), newest ${g.newest.slice(0, 8)}`;
}
