import { buildSessionContext, type SessionEntry as PiSessionEntry } from "@mariozechner/pi-coding-agent";
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { readSessionText } from "../../src/agents/pi/parse.js";
import { branchPoints, buildTree, compactions, labels, leafEntry, leaves, pathTo, sessionName } from "../../src/model/tree.js";
import type { SessionEntry } from "../../src/model/session.js";
import { copyFixtures } from "./fixtures.js";

describe("session tree on the branched fixture", () => {
  let entries: SessionEntry[];
  beforeAll(() => {
    entries = readSessionText(readFileSync(copyFixtures().get("branched.jsonl")!)).entries;
  });

  it("takes the last entry in the file as the leaf, like pi", () => {
    const tree = buildTree(entries);
    expect(tree.leafId).toBe("060e2277");
    expect(leafEntry(entries)?.id).toBe("060e2277");
  });

  it("walks root to leaf exactly as pi's buildSessionContext does", () => {
    const path = pathTo(buildTree(entries));
    expect(path[0].parentId).toBeNull();
    expect(path.at(-1)?.id).toBe("060e2277");
    const piMessages = buildSessionContext(entries as unknown as PiSessionEntry[]).messages.length;
    const ours = path.filter((e) => e.type === "message" || e.type === "custom_message" || e.type === "branch_summary").length;
    expect(ours).toBe(piMessages);
  });

  it("finds the branch point and the three branch tips", () => {
    const tree = buildTree(entries);
    expect(branchPoints(tree).map((e) => e.id)).toEqual(["ce87fb83"]);
    expect(tree.children.get("ce87fb83")?.map((e) => e.id)).toEqual(["77e5dd2b", "e0700bed", "a1b49032"]);
    expect(leaves(tree).map((e) => e.id)).toEqual(["02687514", "55d29600", "060e2277"]);
    expect(pathTo(tree, "02687514").map((e) => e.id)).toContain("c1a61259");
  });

  it("reads labels, the session name and no compactions", () => {
    expect(labels(entries)).toEqual(new Map([["ce87fb83", "checkpoint-1"]]));
    expect(sessionName(entries)).toBe("Sample session");
    expect(compactions(entries)).toEqual([]);
  });

  it("returns an empty path for an unknown leaf", () => {
    expect(pathTo(buildTree(entries), "nope")).toEqual([]);
  });
});

describe("session tree edge cases", () => {
  const e = (id: string, parentId: string | null, extra: Record<string, unknown> = {}): SessionEntry =>
    ({ type: "custom", customType: "t", id, parentId, timestamp: "2025-01-01T00:00:00.000Z", ...extra }) as SessionEntry;

  it("survives parent cycles that would hang pi's walk", () => {
    const tree = buildTree([e("a", "b"), e("b", "a")]);
    expect(pathTo(tree, "a").map((x) => x.id)).toEqual(["b", "a"]);
  });

  it("treats entries with a missing parent as orphan roots", () => {
    const tree = buildTree([e("a", null), e("b", "gone"), e("c", "b")]);
    expect(tree.orphans.map((x) => x.id)).toEqual(["b"]);
    expect(tree.children.get(null)?.map((x) => x.id)).toEqual(["a", "b"]);
  });

  it("clears labels and names the way pi does", () => {
    const list = [
      e("a", null),
      { ...e("l1", "a"), type: "label", targetId: "a", label: "one" },
      { ...e("l2", "l1"), type: "label", targetId: "a", label: "" },
      { ...e("n1", "l2"), type: "session_info", name: "  Named  " },
    ] as SessionEntry[];
    expect(labels(list).size).toBe(0);
    expect(sessionName(list)).toBe("Named");
    expect(sessionName([...list, { ...e("n2", "n1"), type: "session_info", name: " " } as SessionEntry])).toBeUndefined();
  });

  it("lists the compactions of a migrated v1 session", () => {
    const { entries } = readSessionText(readFileSync(copyFixtures().get("before-compaction.jsonl")!));
    const found = compactions(entries);
    expect(found).toHaveLength(2);
    expect(found.every((c) => entries.some((x) => x.id === c.firstKeptEntryId))).toBe(true);
    // A v1 file is one straight chain: one leaf, no branch points.
    const tree = buildTree(entries);
    expect(branchPoints(tree)).toEqual([]);
    expect(leaves(tree)).toHaveLength(1);
    expect(pathTo(tree)).toHaveLength(entries.length);
  });
});
