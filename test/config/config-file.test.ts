// The config file is checked by hand (src/repo/shape.ts combinators, src/config/config.ts), not by
// a schema library that cost every command run with a config file 50-150 ms to load. Every field
// is read as before, defaults are filled in, and each kind of mistake is named as
// "config file <path>: <field>: <problem>", the first one found.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { makeSandbox } from "../helpers/tmp.js";

const sb = makeSandbox("config-file");
afterAll(() => sb.cleanup());

let n = 0;
const load = (content: unknown) => {
  const file = path.join(sb.root, `config-${n++}.json`);
  writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content));
  const { PI_GUARD_REPO: _, ...env } = sb.env;
  return { file, config: () => loadConfig({ configFile: file }, env) };
};
const problem = (content: unknown) => {
  const { file, config } = load(content);
  try {
    config();
  } catch (err) {
    return (err as Error).message.replace(`config file ${file}: `, "");
  }
  return "accepted";
};

describe("config file", () => {
  it("reads every field, fills in defaults", () => {
    const c = load({
      repo: "/srv/backups/pi",
      mirrors: ["s3://bucket/pi"],
      keyFile: "/etc/pi-guard/key",
      sources: { exclude: ["*.tmp"] },
      watch: { debounceMs: 500, maxDelayMs: 2000, remoteBatchMs: 60_000, suspectLoss: { minFiles: 3, fraction: 0.5 }, log: { maxBytes: 8192, keep: 2 }, fullScanMs: 0 },
      retention: { keepLast: 5, keepWithin: "2d", keepDaily: 7, keepTags: ["keep"] },
      schedules: [{ job: "prune", cron: "0 4 * * *" }],
      retry: { maxMs: 1000 },
      health: { maxAge: "1h", mirrorMaxLag: "10m" },
      alerts: { command: ["notify-send", "pi-guard"], timeoutMs: 5000 },
      agents: { claude: { enabled: false } },
      snapshot: { fullReadIntervalMs: 3_600_000 },
    }).config();
    expect(c.repo).toBe("/srv/backups/pi");
    expect(c.mirrors).toHaveLength(1);
    expect(c.keyFile).toBe("/etc/pi-guard/key");
    expect(c.filter.include).toEqual([]);
    expect(c.filter.exclude).toContain("*.tmp");
    expect(c.watch).toMatchObject({ debounceMs: 500, maxDelayMs: 2000, remoteBatchMs: 60_000, suspectLoss: { minFiles: 3, fraction: 0.5 }, log: { maxBytes: 8192, keep: 2 }, fullScanMs: 0 });
    expect(c.retention).toEqual({ keepLast: 5, keepWithin: "2d", keepDaily: 7, keepTags: ["keep"] });
    expect(c.schedules).toEqual([{ job: "prune", cron: "0 4 * * *" }]);
    expect(c.retry.maxMs).toBe(1000);
    expect(c.health.maxAgeMs).toBe(3_600_000);
    expect(c.health.mirrorMaxLagMs).toBe(600_000);
    expect(c.alerts).toEqual({ command: ["notify-send", "pi-guard"], timeoutMs: 5000 });
    expect(c.agents.find((a) => a.location.agent === "claude")?.guarded).toBe(false);
    expect(c.snapshot.fullReadIntervalMs).toBe(3_600_000);
    // An empty file object: every default.
    const d = load({}).config();
    expect(d.filter.include).toEqual([]);
    expect(d.alerts).toBeNull();
    expect(load({ alerts: { command: "logger pi-guard" }, agents: ["pi"] }).config().alerts).toEqual({ command: "logger pi-guard", timeoutMs: 10_000 });
  });

  it("names the first problem, with its field", () => {
    const cases: [unknown, string][] = [
      ["{ not json", "not valid JSON"],
      [[], "(top level): expected an object, got array"],
      [{ repoo: "/x" }, '(top level): unknown key "repoo"'],
      [{ repo: 5 }, "repo: expected a string, got number"],
      [{ repo: "" }, "repo: must not be empty"],
      [{ sources: { exclude: "sessions" } }, "sources.exclude: expected a list, got string"],
      [{ sources: { exclude: [1] } }, "sources.exclude.0: expected a string, got number"],
      [{ watch: { debounceMs: 1.5 } }, "watch.debounceMs: expected an integer, got 1.5"],
      [{ watch: { debounceMs: 600_001 } }, "watch.debounceMs: too big: 600001 > 600000"],
      [{ watch: { suspectLoss: { fraction: 0 } } }, "watch.suspectLoss.fraction: too small: 0 <= 0"],
      [{ watch: { suspectLoss: { fraction: 1.5 } } }, "watch.suspectLoss.fraction: too big: 1.5 > 1"],
      [{ watch: { log: { keep: "2" } } }, "watch.log.keep: expected a number, got string"],
      [{ schedules: [{ job: "backup", cron: "* * * * *" }] }, 'schedules.0.job: expected one of "snapshot", "check", "check-read-data", "forget", "prune", "retention"'],
      [{ schedules: [{ job: "prune" }] }, "schedules.0.cron: missing"],
      [{ health: { maxAge: "soon" } }, "health.maxAge: must be a duration such as 90s, 15m, 1h or 2d"],
      [{ alerts: { command: [] } }, "alerts.command: fewer than 1 items"],
      [{ alerts: { command: 7 } }, "alerts.command: expected a command: a string or a list of strings"],
      [{ alerts: {} }, "alerts.command: missing"],
      [{ agents: ["pi", "cursor"] }, 'agents.1: expected one of "pi", "claude", "codex", "gemini", "opencode"'],
      [{ agents: { claude: { enabled: "no" } } }, "agents.claude.enabled: expected true or false, got string"],
      [{ agents: { cursor: {} } }, 'agents: unknown key "cursor"'],
      [{ agents: "pi" }, "agents: expected a list of agent names or an object of agent settings"],
      [{ snapshot: { fullReadIntervalMs: 8 * 86_400_000 } }, "snapshot.fullReadIntervalMs: too big: 691200000 > 604800000"],
    ];
    for (const [content, expected] of cases) expect(problem(content), JSON.stringify(content)).toContain(expected);
  });
});
