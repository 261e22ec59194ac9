// Sessions parsed in worker threads (a cold list, an index build: ParsePool) must give exactly
// what parsing on the main thread gives. The built CLI runs the real workers (under vitest the
// worker script is TypeScript and cannot load, so the pool falls back to the main thread).

import { rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { writeListCorpus } from "./list-corpus.js";

let sb: Sandbox;
beforeAll(() => {
  sb = makeSandbox("parse-workers");
  writeListCorpus(sb);
});
afterAll(() => sb?.cleanup());

/** A cold list and a search that builds the index, with `workers` parse threads. */
async function coldRun(workers: string) {
  const dataDir = path.join(sb.env.XDG_DATA_HOME!, "pi-guard");
  rmSync(path.join(dataDir, "catalog"), { recursive: true, force: true });
  rmSync(path.join(dataDir, "search"), { recursive: true, force: true });
  const env = { PI_GUARD_WORKERS: workers };
  const list = (await ok(sb, ["--json", "sessions", "list", "--live"], { env })).json();
  const searches = [];
  for (const q of ["files", "question answer", '"read the file"', "compaction"]) {
    const r = (await ok(sb, ["--json", "sessions", "search", "--live", q], { env })).json();
    searches.push({ results: r.results, warnings: r.warnings ?? null, indexed: r.index.indexed });
  }
  return { list, searches };
}

describe("parse workers", () => {
  it("give the same list and search results as the main thread", async () => {
    const inline = await coldRun("0");
    const threaded = await coldRun("2");
    expect(inline.list.length).toBeGreaterThan(12);
    expect(inline.searches[0].results.length).toBeGreaterThan(0);
    expect(threaded.searches[0].indexed).toBe(inline.searches[0].indexed);
    expect(threaded).toEqual(inline);
  });
});
