/**
 * Alerts (docs/OPERATIONS.md §3): the configured command runs on each change of health, from
 * healthy to unhealthy, back, and between two different sets of problems. The watcher judges health
 * on its tick; `status --alert` does the same for cron users without a watcher. Both remember the
 * last health they sent an alert for in one file per agent dir (watcherFiles(...).alert), so a
 * restarted watcher or the next cron run does not repeat an alert, and does send the recovery.
 *
 * The command gets the news three ways: JSON on stdin, PI_GUARD_* environment variables, and for
 * an argv command `{summary}` replaced in its arguments (no shell is involved, so no quoting
 * problem). It is killed after a timeout; its failure is reported, never thrown.
 */
import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import type { AlertSettings, Config } from "../config/config.js";
import { problemKey, type Problem } from "./health.js";
import { writeJsonFile } from "./state-file.js";
import { watcherFiles } from "./state.js";
import type { StatusReport } from "./status.js";

export type AlertEvent = "unhealthy" | "healthy" | "changed";

export interface AlertPayload {
  event: AlertEvent;
  healthy: boolean;
  time: string;
  /** Who noticed: the watcher, or `status --alert`. */
  source: "watch" | "status";
  host: string;
  agentDir: string;
  repo: string;
  problems: Problem[];
  /** The problem keys of the health the last alert was about. */
  previous: string[];
}

export interface AlertRun {
  ok: boolean;
  /** One line when not ok: exit code, signal, timeout or spawn error. */
  error?: string;
  exitCode: number | null;
  ms: number;
  /** The start of what the command printed (stdout then stderr), for the log. */
  output: string;
}

/** What the alert file holds: the health the last alert was sent for. */
export interface AlertMemory {
  healthy: boolean;
  keys: string[];
  time: string;
  source: "watch" | "status";
  event: AlertEvent;
  ok: boolean;
  error?: string;
}

const OUTPUT_MAX = 2000;

/** The event that going from `previous` keys to `problems` is, or undefined when nothing changed. */
export function alertEvent(previous: readonly string[], problems: readonly Problem[]): AlertEvent | undefined {
  const now = [...new Set(problems.map(problemKey))].sort();
  const before = [...new Set(previous)].sort();
  if (now.join("\n") === before.join("\n")) return undefined;
  if (!now.length) return "healthy";
  return before.length ? "changed" : "unhealthy";
}

/** One line for a notification: the state and the first problem. */
export function alertSummary(p: Pick<AlertPayload, "healthy" | "problems">): string {
  if (p.healthy) return "pi-guard: healthy again";
  const more = p.problems.length > 1 ? ` (+${p.problems.length - 1} more)` : "";
  return `pi-guard: UNHEALTHY: ${p.problems[0]?.message ?? "unknown problem"}${more}`;
}

/** Run the alert command once with `payload`; resolves (never rejects) when it ended or was killed. */
export function runAlert(settings: AlertSettings, payload: AlertPayload, baseEnv: NodeJS.ProcessEnv = process.env): Promise<AlertRun> {
  const summary = alertSummary(payload);
  const [file, args] = typeof settings.command === "string" ? ["/bin/sh", ["-c", settings.command]] : [settings.command[0], settings.command.slice(1).map((a) => a.replaceAll("{summary}", summary))];
  // The repository's password is no business of a notification command.
  const { PI_GUARD_PASSWORD: _password, ...inherited } = baseEnv;
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    PI_GUARD_ALERT: payload.event,
    PI_GUARD_HEALTHY: payload.healthy ? "1" : "0",
    PI_GUARD_SUMMARY: summary,
    PI_GUARD_PROBLEMS: payload.problems.map((p) => p.message).join("\n"),
    PI_GUARD_PROBLEM_KINDS: payload.problems.map(problemKey).join("\n"),
    PI_GUARD_SOURCE: payload.source,
    PI_GUARD_HOST: payload.host,
    PI_GUARD_AGENT_DIR: payload.agentDir,
    PI_GUARD_ALERT_REPO: payload.repo,
  };
  const started = Date.now();
  return new Promise<AlertRun>((resolve) => {
    let output = "";
    let timedOut = false;
    let settled = false;
    const done = (r: Omit<AlertRun, "ms" | "output">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...r, ms: Date.now() - started, output: output.slice(0, OUTPUT_MAX) });
    };
    const child = spawn(file, args, { env, stdio: ["pipe", "pipe", "pipe"] });
    const keep = (d: Buffer) => {
      if (output.length < OUTPUT_MAX) output += d.toString("utf8");
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    // A command that does not read its stdin closes the pipe: that is its business, not an error.
    child.stdin.on("error", () => undefined);
    child.stdin.end(JSON.stringify(payload) + "\n");
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 1000).unref();
    }, settings.timeoutMs);
    child.on("error", (err) => done({ ok: false, exitCode: null, error: `cannot run ${file}: ${(err as NodeJS.ErrnoException).code ?? err.message}` }));
    child.on("close", (code, signal) => {
      if (timedOut) return done({ ok: false, exitCode: code, error: `${file} did not finish within ${settings.timeoutMs} ms and was killed` });
      if (code === 0) return done({ ok: true, exitCode: 0 });
      done({ ok: false, exitCode: code, error: signal ? `${file} was killed by ${signal}` : `${file} exited ${code}${output.trim() ? `: ${output.trim().split("\n")[0].slice(0, 200)}` : ""}` });
    });
  });
}

/** The alert file, or healthy-with-no-problems when there is none or it is not one (hostile input). */
export async function readAlertMemory(file: string): Promise<AlertMemory | undefined> {
  try {
    const v = JSON.parse(await fs.readFile(file, "utf8")) as Partial<AlertMemory>;
    if (typeof v !== "object" || v === null || typeof v.healthy !== "boolean" || !Array.isArray(v.keys) || !v.keys.every((k) => typeof k === "string")) return undefined;
    return v as AlertMemory;
  } catch {
    return undefined;
  }
}

export interface AlertOutcome {
  event: AlertEvent;
  run: AlertRun;
}

/**
 * Send an alert if the health in `payload` differs from the remembered one, then remember it
 * (also when the command failed: it is not retried on every tick; the failure is in the outcome
 * and in the file). Undefined when nothing changed.
 */
export async function alertOnChange(
  settings: AlertSettings,
  file: string,
  payload: Omit<AlertPayload, "event" | "previous" | "healthy">,
  memory?: AlertMemory,
): Promise<AlertOutcome | undefined> {
  const before = memory ?? (await readAlertMemory(file));
  const previous = before?.keys ?? [];
  const event = alertEvent(previous, payload.problems);
  if (!event) return undefined;
  const full: AlertPayload = { ...payload, event, healthy: payload.problems.length === 0, previous };
  const run = await runAlert(settings, full);
  const remembered: AlertMemory = {
    healthy: full.healthy,
    keys: [...new Set(payload.problems.map(problemKey))].sort(),
    time: full.time,
    source: full.source,
    event,
    ok: run.ok,
    ...(run.error ? { error: run.error } : {}),
  };
  await writeJsonFile(file, remembered);
  return { event, run };
}

/**
 * `status --alert`: alert on a change of the health this report shows, unless a watcher is
 * running (then the watcher alerts, and two senders would repeat each other).
 */
export async function statusAlert(config: Config, report: StatusReport): Promise<{ outcome?: AlertOutcome; skipped?: string }> {
  if (!config.alerts) return { skipped: "no alerts.command in the config" };
  if (report.watcher.state === "running") return { skipped: `the watcher (pid ${report.watcher.pid}) sends the alerts` };
  const { hostName } = await import("../host.js");
  const file = watcherFiles(config.stateDir, config.agentDir).alert;
  const outcome = await alertOnChange(config.alerts, file, { time: new Date().toISOString(), source: "status", host: hostName(), agentDir: config.agentDir, repo: config.repo, problems: report.problemKinds });
  return outcome ? { outcome } : {};
}
