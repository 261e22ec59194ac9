// What `sessions list` knows of each session on a fixed corpus (the real fixtures, generated pi
// 1.x sessions with usage, and damaged files), pinned: every field of every record, as computed
// before the cold list was made parallel. Any later way of computing summaries must give exactly
// these. Record again (only when a change is intended): PIN_RECORD=1 npx vitest run <this file>.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { SessionCatalog } from "../../src/sessions/catalog.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { writeListCorpus } from "./list-corpus.js";

const PINNED = path.join(import.meta.dirname, "list-pinned.json");

let sb: Sandbox;
beforeAll(() => {
  sb = makeSandbox("list-pinned");
  writeListCorpus(sb);
});
afterAll(() => sb?.cleanup());

describe("sessions list on a fixed corpus", () => {
  it("gives the pinned record of every session", async () => {
    const config = loadConfig({}, sb.env);
    const catalog = await SessionCatalog.build({ config, repo: null, env: sb.env, host: "pinned-host" });
    // The live path lies under this run's temp folder: pinned relative to the sessions dir.
    const got = catalog.sessions.map((s) => ({ ...s, live: s.live && path.relative(sb.sessionsDir, s.live) }));
    await catalog.close();
    if (process.env.PIN_RECORD === "1") writeFileSync(PINNED, JSON.stringify(got, null, 1) + "\n");
    if (!existsSync(PINNED)) throw new Error(`${PINNED} is missing: record it with PIN_RECORD=1`);
    const pinned = JSON.parse(readFileSync(PINNED, "utf8")) as typeof got;
    expect(got.length).toBeGreaterThan(12);
    expect(got.map((s) => s.id)).toEqual(pinned.map((s) => s.id));
    for (let i = 0; i < got.length; i++) expect(JSON.parse(JSON.stringify(got[i])), got[i].id).toEqual(pinned[i]);
  });
});
