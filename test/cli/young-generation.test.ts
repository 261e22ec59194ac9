// bin/pi-guard.js no longer sets --max-semi-space-size=1 on its shebang line (that cost the short
// snapshot hand-off 10-15 ms of CPU): the CLI keeps V8's young generation at its initial size from
// the moment it knows the command does real work (smallYoungGeneration in src/runtime.ts). A probe
// preloaded into the CLI makes garbage at exit and reads the young generation's size: held, it
// stays at 2 MiB (two 1 MiB semi-spaces); V8's default grows it to 32 MiB under the same garbage.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok } from "../helpers/cli.js";
import { PROJECT_ROOT } from "../helpers/root.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

const PROBE = path.join(PROJECT_ROOT, "test", "helpers", "young-gen", "probe.mjs");
const HELD = 2 * 1024 * 1024;

describe("the CLI's young generation", () => {
  let sb: Sandbox;
  let out: string;
  const probeEnv = () => ({ NODE_OPTIONS: `--import=${PROBE}`, YOUNG_GEN_PROBE_OUT: out });
  const size = () => Number(readFileSync(out, "utf8"));

  beforeAll(() => {
    sb = makeSandbox("young-gen");
    out = path.join(sb.root, "young-gen");
    writePiConfigFiles(sb.agentDir);
  });
  afterAll(() => sb?.cleanup());

  it("grows without the CLI's setting (the probe can tell)", () => {
    const r = spawnSync(process.execPath, ["-e", "0"], { env: { ...sb.env, ...probeEnv() } });
    expect(r.status).toBe(0);
    expect(size()).toBeGreaterThan(HELD);
  });

  it("is held for a command of the full table", async () => {
    await ok(sb, ["--version"], { env: probeEnv() });
    expect(size()).toBe(HELD);
  });

  it("is held for a plain snapshot that no watcher took", async () => {
    await ok(sb, ["init"]);
    const r = await ok(sb, ["snapshot", "--json"], { env: probeEnv() });
    expect(r.json()).toMatchObject({ via: "direct", handOff: "no watcher socket" });
    expect(size()).toBe(HELD);
  });
});
