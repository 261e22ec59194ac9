// The fidelity report of a salvage (src/salvage/report.ts) in short human form: one block per
// session, then the sources' notes.

import { formatCounts } from "../salvage/facts.js";
import type { FidelityReport } from "../salvage/report.js";
import type { IdentitySource, SessionIdentity } from "../salvage/types.js";

const roleList = (m: Record<string, number>) =>
  Object.entries(m)
    .map(([role, n]) => `${n} ${role}`)
    .join(", ") || "no messages";

/** Short human form: one block per session, then source notes. */
export function formatReport(report: FidelityReport): string {
  const out: string[] = [];
  for (const s of report.sessions) {
    out.push(`session ${s.id}${s.idInvented ? " (id invented)" : ""}  ${s.cwd || "(cwd unknown)"}`);
    out.push(`  recovered  ${roleList(s.messages)} (${s.entries} entries)`);
    out.push(`  kept       ${formatCounts(s.facts.kept)}`);
    out.push(`  not kept   ${formatCounts(s.facts.notKept)}`);
    for (const line of identityLines(s.identity)) out.push(`  ${line}`);
    for (const src of s.sources) {
      out.push(`  from ${src.kind.padEnd(5)} ${roleList(src.messages)}  ${src.path}`);
      if (Object.keys(src.notKept).length) out.push(`             it held, not kept: ${formatCounts(src.notKept)}`);
    }
    for (const g of s.gaps) out.push(`  missing    ${g}`);
    if (s.file) out.push(`  written    ${s.file}`);
  }
  for (const src of report.sources) {
    if (Object.keys(src.notKept).length) out.push(`source ${src.kind} ${src.path}: not kept ${formatCounts(src.notKept)}`);
    for (const n of src.notes) out.push(`note (${src.kind} ${src.path}): ${n}`);
  }
  return out.join("\n");
}

function identityLine(what: string, src: IdentitySource | null): string | undefined {
  if (!src) return undefined;
  if (src.from === "line") return `${what.padEnd(10)} from line ${src.line}: ${src.text}`;
  const over = src.replaced ? `, over line ${src.replaced.line} (${src.replaced.value}): ${src.replaced.text}` : "";
  return `${what.padEnd(10)} from ${what === "id" ? "--session-id" : "--cwd"}${over}`;
}

function identityLines(identity: SessionIdentity | undefined): string[] {
  if (!identity) return [];
  return [identityLine("id", identity.sessionId), identityLine("cwd", identity.cwd)].filter((l): l is string => l !== undefined);
}
