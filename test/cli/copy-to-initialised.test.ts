// `init --repo s3://…` and then `copy --to` that location (issue 17): a mirror is made by copy into
// an empty location, and init makes a separate repository instead. pi-guard says so before (init
// notes it when another repository is already configured, and refuses to init a location the config
// names as a mirror) and at the refusal (copy names what is there and what to do). A location that
// already holds a copy of the same repository is a mirror and is copied into. Real S3 (s3rver).

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok } from "../helpers/cli.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";
import { writeConfig } from "../mirror/mirror-helpers.js";

const BUCKET = "pi-copy-init";
let sb: Sandbox;
let server: S3Server;
let env: Record<string, string>;
let repoId: string;

beforeAll(async () => {
  sb = makeSandbox("copy-init");
  server = await startS3Server(sb.dir("s3rver"), BUCKET);
  env = { ...sb.env, ...server.env };
  writePiConfigFiles(sb.agentDir);
  repoId = (await ok(env, ["init", "--json"])).json<{ id: string }>().id;
  await ok(env, ["snapshot", "--json"]);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sb?.cleanup();
});

describe("a mirror is made by copy, not by init", () => {
  it("init of another location while a repository is configured says it is a separate repository and how a mirror is made", async () => {
    const loc = `s3://${BUCKET}/laptop`;
    const made = await ok(env, ["init", "--repo", loc]);
    expect(made.stderr).toMatch(new RegExp(`separate repository, not a copy of repository ${repoId.slice(0, 8)} at ${sb.repo}`));
    expect(made.stderr).toContain(`pi-guard copy --to ${loc}`);

    const copy = await cli(env, ["copy", "--to", loc]);
    const line = expectOneLineError(copy, 1);
    expect(line).toMatch(new RegExp(`${loc} holds repository [0-9a-f]{8}, not ${repoId.slice(0, 8)} of ${sb.repo} \\(another repository, with no snapshot: what \`pi-guard init\` leaves\\)`));
    expect(line).toMatch(/a mirror is made by copy into an empty location, not by init/);
    expect(line).toMatch(/delete everything under .* then run `pi-guard copy --to .*` again/);
  });

  it("a location holding another repository's snapshots is refused, and nothing is suggested for deletion", async () => {
    const loc = `s3://${BUCKET}/other`;
    await ok(env, ["init", "--repo", loc]);
    await ok(env, ["snapshot", "--repo", loc, "--json"]);
    const line = expectOneLineError(await cli(env, ["copy", "--to", loc]), 1);
    expect(line).toMatch(new RegExp(`${loc} holds repository [0-9a-f]{8}, not ${repoId.slice(0, 8)} .*\\(another repository, with 1 snapshot\\(s\\)\\)`));
    expect(line).toMatch(/choose an empty location/);
    expect(line).not.toMatch(/delete/);
  });

  it("init refuses a location the config names as a mirror; copy makes it, and copies into it again", async () => {
    const loc = `s3://${BUCKET}/mirror`;
    writeConfig(sb, { mirrors: [loc] });
    try {
      const line = expectOneLineError(await cli(env, ["init", "--repo", loc]), 2);
      expect(line).toMatch(/is a mirror in the config file .*made by `pi-guard copy --to s3:\/\/pi-copy-init\/mirror`/);
      expect(expectOneLineError(await cli(env, ["snapshots", "--repo", loc]), 1)).toMatch(/no repository at/);
      const first = (await ok(env, ["copy", "--to", loc, "--json"])).json<{ ok: boolean; created: boolean }[]>();
      expect(first).toMatchObject([{ ok: true, created: true }]);
      const again = (await ok(env, ["copy", "--to", loc, "--json"])).json<{ ok: boolean; created: boolean; copy: { present: string[] } }[]>();
      expect(again).toMatchObject([{ ok: true, created: false }]);
      expect(again[0].copy.present).toHaveLength(1);
    } finally {
      writeConfig(sb, {});
    }
  });
});
