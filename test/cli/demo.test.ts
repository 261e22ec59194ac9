// `pi-guard demo` re-enacts the npm reify accident in a temp folder and must restore every byte.

import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

describe("demo", () => {
  let sb: Sandbox;
  beforeAll(() => {
    sb = makeSandbox("demo");
    // The demo makes its own temp folder; keep it inside the sandbox.
    sb.env.TMPDIR = sb.dir("tmp");
  });
  afterAll(() => sb?.cleanup());

  it("demo --json reports identical: true, auth.json 0600, and cleans up after itself", async () => {
    const r = (await ok(sb, ["demo", "--json", "--size", "16"])).json();
    expect(r).toMatchObject({ identical: true, difference: "identical", authMode: "600" });
    expect(r.deleted).toEqual(["sessions", "auth.json", "models.json"]);
    expect(r.files).toBeGreaterThan(5);
    expect(r.bytes).toBeGreaterThan(15 * 1024 * 1024);
    expect(existsSync(r.dir)).toBe(false);
    expect(r.dir.startsWith(sb.root)).toBe(true);
  });
});
