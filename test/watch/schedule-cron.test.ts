// `pi-guard schedule` prints crontab lines that back up (issue 17, item 12): without a watcher,
// pasting them must give snapshots, not retention alone. The lines include a snapshot line (every
// 5 minutes by default, or the config's "snapshot" schedule), and the output says that the
// watcher is the better way. The printed snapshot line is run as cron would run it (sh -c).

import { execFileSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { initRepo, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";
import { writeConfig } from "../mirror/mirror-helpers.js";

interface ScheduleJson {
  schedules: { job: string; crontab: string | null }[];
  crontab: { lines: string[]; snapshot: { cron: string; line: string | null; fromConfig: boolean; note: string | null } } | null;
}

const sandboxes: Sandbox[] = [];
afterEach(() => {
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

async function setup(config?: unknown): Promise<Sandbox> {
  const sb = makeSandbox("schedule-cron");
  sandboxes.push(sb);
  writePiConfigFiles(sb.agentDir);
  if (config) writeConfig(sb, config);
  await initRepo(sb);
  return sb;
}

describe("crontab lines from pi-guard schedule", () => {
  it("the default schedules get a snapshot line every 5 minutes, first; the text says the watcher is better; the line backs up", async () => {
    const sb = await setup();
    const j = (await ok(sb, ["schedule", "--json"])).json<ScheduleJson>();
    expect(j.crontab?.snapshot).toMatchObject({ cron: "*/5 * * * *", fromConfig: false });
    const line = j.crontab!.snapshot.line!;
    expect(line).toMatch(/^\*\/5 \* \* \* \* .*PI_GUARD_KEY_FILE=.* snapshot --quiet$/);
    expect(j.crontab!.lines).toEqual([line, ...j.schedules.map((s) => s.crontab)]);

    const text = (await ok(sb, ["schedule"])).stdout;
    expect(text).toContain(line);
    expect(text).toMatch(/watcher .*better/i);
    expect(text).toContain("pi-guard service install --enable");
    expect(text.indexOf(line)).toBeLessThan(text.indexOf("run-scheduled --job retention"));

    // What cron runs: the command part of the line, through /bin/sh, with only PATH set.
    const command = line.split(" ").slice(5).join(" ");
    execFileSync("/bin/sh", ["-c", command], { env: { PATH: process.env.PATH! } });
    expect((await ok(sb, ["snapshots", "--json"])).json<unknown[]>()).toHaveLength(1);
  });

  it("a snapshot schedule in the config is honoured, not doubled; one with seconds becomes every minute, with a note", async () => {
    const sb = await setup({ schedules: [{ job: "snapshot", cron: "*/20 * * * *" }, { job: "retention", cron: "17 3 * * *" }] });
    const j = (await ok(sb, ["schedule", "--json"])).json<ScheduleJson>();
    expect(j.crontab?.snapshot).toMatchObject({ cron: "*/20 * * * *", fromConfig: true });
    expect(j.crontab!.lines.filter((l) => / snapshot --quiet$/.test(l))).toHaveLength(1);
    expect(j.crontab!.lines).toHaveLength(2);

    const sec = await setup({ schedules: [{ job: "snapshot", cron: "*/30 * * * * *" }] });
    const s = (await ok(sec, ["schedule", "--json"])).json<ScheduleJson>();
    expect(s.crontab?.snapshot).toMatchObject({ cron: "* * * * *", fromConfig: true, note: expect.stringMatching(/seconds/) });
    expect(s.crontab!.lines).toEqual([s.crontab!.snapshot.line]);
  });
});
