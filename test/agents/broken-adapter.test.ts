// The suite must fail when an adapter is wrong: a copy of pi's adapter whose restoreUnits drops a
// file, and one that brings a db back with a -wal the snapshot does not hold, are both caught by
// the suite's own units check (conformance.ts expectUnitsWhole), while the real adapter passes it.

import { describe, expect, it } from "vitest";
import { piAdapter } from "../../src/agents/pi/index.js";
import type { AgentAdapter } from "../../src/agents/types.js";
import { expectUnitsWhole } from "./conformance.js";

const session = { root: "agent", path: "sessions/--work--/2026-12-02T00-00-00-000Z_a.jsonl" };
const db = { root: "agent", path: "pi-hermes-memory/sessions.db" };
const selected = [session, db];
const available = [session, db];
const probe = { select: db, expect: [db] };

describe("the conformance suite catches a broken adapter", () => {
  it("passes pi's real adapter", () => {
    expectUnitsWhole(piAdapter.restoreUnits(selected, available), selected, available, probe);
  });

  it("fails an adapter whose restoreUnits drops a file", () => {
    const broken: AgentAdapter = { ...piAdapter, restoreUnits: (s, a) => piAdapter.restoreUnits(s, a).slice(1) };
    expect(() => expectUnitsWhole(broken.restoreUnits(selected, available), selected, available, probe)).toThrow(/in one unit/);
  });

  it("fails an adapter that brings a db back with a -wal the snapshot does not hold", () => {
    const wal = { root: db.root, path: `${db.path}-wal` };
    const broken: AgentAdapter = { ...piAdapter, restoreUnits: (s, a) => piAdapter.restoreUnits(s, a).map((u) => (u.files.some((f) => f.path === db.path) ? { ...u, files: [...u.files, wal] } : u)) };
    expect(() => expectUnitsWhole(broken.restoreUnits(selected, available), selected, available, probe)).toThrow(/is in the snapshot/);
  });
});
