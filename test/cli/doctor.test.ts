import { chmodSync, mkdirSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli, initRepo, ok, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

interface DoctorJson {
  ok: boolean;
  checks: { name: string; status: "ok" | "warn" | "error"; message: string }[];
}

const statusOf = (r: DoctorJson, name: string) => r.checks.find((c) => c.name === name)?.status;

describe("pi-guard doctor", () => {
  let sb: Sandbox;
  afterEach(() => sb.cleanup());

  it("passes a healthy setup and names the last snapshot", async () => {
    sb = makeSandbox("doctor");
    mkdirSync(sb.sessionsDir, { recursive: true });
    await initRepo(sb);
    const snap = await snapshot(sb);
    const r = (await ok(sb, ["doctor", "--json"])).json<DoctorJson>();
    expect(r.ok).toBe(true);
    expect(r.checks.find((c) => c.name === "last snapshot")?.message).toContain(snap.snapshotId.slice(0, 8));
  });

  it("fails when the repository lives inside the agent dir, and warns next to it", async () => {
    sb = makeSandbox("doctor-inside");
    mkdirSync(sb.agentDir, { recursive: true });
    const inside = await cli(sb, ["doctor", "--json"], { env: { PI_GUARD_REPO: path.join(sb.agentDir, "backups") } });
    expect(inside.code).toBe(1);
    expect(statusOf(inside.json<DoctorJson>(), "repository location")).toBe("error");
    const beside = await cli(sb, ["doctor", "--json"], { env: { PI_GUARD_REPO: path.join(sb.home, ".pi", "pi-guard") } });
    expect(statusOf(beside.json<DoctorJson>(), "repository location")).toBe("warn");
  });

  it("warns about a key file others can read and a missing agent dir", async () => {
    sb = makeSandbox("doctor-key");
    await initRepo(sb);
    chmodSync(path.join(sb.configHome, "pi-guard", "key"), 0o644);
    const r = (await cli(sb, ["doctor", "--json"])).json<DoctorJson>();
    expect(statusOf(r, "key file mode")).toBe("warn");
    expect(statusOf(r, "agent dir")).toBe("warn");
    expect(statusOf(r, "last snapshot")).toBe("warn");
  });
});
