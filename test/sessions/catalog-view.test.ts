// The catalog's cached view (src/sessions/catalog-view.ts) read back from its file: records are
// cut out by byte offsets, so text of several bytes per character (names, paths) before a record
// must not shift the ones after it; a view written with string offsets (before) is not read.

import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CatalogView, type CatalogData } from "../../src/sessions/catalog-view.js";
import type { SessionRecord } from "../../src/sessions/catalog.js";
import { tempRoot } from "../helpers/tmp.js";

const record = (id: string, name: string | null, project: string): SessionRecord =>
  ({ id, name, project, agent: "pi", size: 10, live: `/s/${id}.jsonl`, versions: [], snapshotCount: 0, lastSnapshot: null, deleted: false, hosts: ["h"], tags: ["ü"] }) as unknown as SessionRecord;

const data: CatalogData = {
  fingerprint: "f",
  sessions: [record("a", "café 日本語 🦜", "/home/zoë/проект"), record("b", null, "/plain"), record("c", "ñ\n“quoted”", "/ü"), record("d", "last", "/x")],
  sources: { b: { snapshotId: "s1", root: "agent", path: "sessions/b.jsonl", originalPath: "/orig/é/b.jsonl", contentKey: "k" } },
  snapshots: [{ id: "s1", time: "2026-01-01T00:00:00.000Z", host: "hôte" } as unknown as CatalogData["snapshots"][number]],
  unreadable: [],
};

describe("the catalog's cached view", () => {
  it("reads every record, source and the snapshots back after multi-byte text", async () => {
    const file = path.join(tempRoot("catalog-view"), "view.json");
    await CatalogView.fromData(data).write(file);
    const read = CatalogView.read(file)!;
    expect(read.ids).toEqual(["a", "b", "c", "d"]);
    // One record at a time, last first: each is cut out on its own, not after the others.
    for (const s of [...data.sessions].reverse()) expect(read.record(s.id)).toEqual(s);
    expect(read.source("b")).toEqual(data.sources.b);
    expect(read.source("a")).toBeNull();
    expect(read.snapshots).toEqual(data.snapshots);
    expect(CatalogView.read(file)!.sessions).toEqual(data.sessions);
  });

  it("does not read a view whose offsets count string characters (an older layout): it is rebuilt", async () => {
    const file = path.join(tempRoot("catalog-view-old"), "view.json");
    await CatalogView.fromData(data).write(file);
    const text = readFileSync(file, "utf8");
    const end = text.indexOf("\n");
    const { offsetsIn: _, ...header } = JSON.parse(text.slice(0, end)) as Record<string, unknown>;
    writeFileSync(file, `${JSON.stringify(header)}${text.slice(end)}`);
    expect(CatalogView.read(file)).toBeUndefined();
  });
});
