// The footer a user of pi's TUI sees: real pi 1.6.0 run interactively in a tmux pane, pi-guard's
// extension loaded, a real watcher. The pane captures go to test-artifacts/pi-tui/ (git-ignored).
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { initRepo, PROJECT_ROOT } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { readState, startWatch, stopWatch, waitFor, watchEnv, type RunningWatch } from "../watch/watch-helpers.js";
import { startTuiPi, type TuiPi } from "./pi-tui.js";

const ARTIFACTS = path.join(PROJECT_ROOT, "test-artifacts", "pi-tui");
const sandboxes: Sandbox[] = [];
const tuis: TuiPi[] = [];
const watchers: RunningWatch[] = [];
afterEach(async () => {
  for (const t of tuis.splice(0)) t.stop();
  for (const w of watchers.splice(0)) if (w.child.exitCode === null && w.child.signalCode === null) await stopWatch(w, "SIGKILL");
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

function save(name: string, pane: string): void {
  mkdirSync(ARTIFACTS, { recursive: true });
  writeFileSync(path.join(ARTIFACTS, name), pane);
}

/** The pane's last non-empty line: pi draws extension statuses on the footer's last line. */
const footerLine = (pane: string): string => pane.trimEnd().split("\n").at(-1)!.trim();

describe("pi-guard's status in pi 1.6.0's TUI footer (tmux)", () => {
  it("shows 'pi-guard: saved … ago' after a turn while the watcher runs, and 'NOT PROTECTED: watcher stopped' once it stops", async () => {
    const sb = makeSandbox("ext-tui");
    sandboxes.push(sb);
    mkdirSync(sb.agentDir, { recursive: true });
    const cfg = path.join(sb.configHome, "pi-guard");
    mkdirSync(cfg, { recursive: true });
    writeFileSync(path.join(cfg, "config.json"), JSON.stringify({ watch: { debounceMs: 600_000, maxDelayMs: 3_600_000, fullScanMs: 0 } }));
    await initRepo(sb);
    const w = startWatch(sb);
    watchers.push(w);
    await waitFor("the watcher's first snapshot", () => (readState(sb)?.snapshots.made ?? 0) >= 1, 30_000);

    const cwd = path.join(sb.home, "proj");
    mkdirSync(cwd, { recursive: true });
    const tui = startTuiPi({ sb, env: { XDG_STATE_HOME: watchEnv(sb).XDG_STATE_HOME }, cwd, replies: ["The answer is 42."] });
    tuis.push(tui);
    const first = await waitFor("pi's footer to show pi-guard's status", () => {
      const pane = tui.capture();
      return /pi-guard: /.test(footerLine(pane)) ? pane : undefined;
    }, 60_000, 200);
    save("1-started.txt", first);
    expect(footerLine(first)).not.toMatch(/NOT PROTECTED/);

    const made = readState(sb)!.snapshots.made;
    tui.type("What is the answer?");
    // The turn is saved by the snapshot the extension asks for (the watcher's own debounce is ten
    // minutes); the status before the turn named the watcher's first snapshot.
    await waitFor("the snapshot the extension asked for", () => readState(sb)!.snapshots.made > made, 60_000);
    const saved = await waitFor("the answer and 'saved' in the footer", () => {
      const pane = tui.capture();
      return pane.includes("The answer is 42.") && /^pi-guard: saved \d+ s ago$/.test(footerLine(pane)) ? pane : undefined;
    }, 60_000, 200);
    save("2-saved.txt", saved);
    expect(saved).toContain("What is the answer?");

    expect(await stopWatch(w)).toMatchObject({ code: 0 });
    const stopped = await waitFor("'NOT PROTECTED: watcher stopped' in the footer", () => {
      const pane = tui.capture();
      return footerLine(pane) === "pi-guard: NOT PROTECTED: watcher stopped" ? pane : undefined;
    }, 30_000, 200);
    save("3-watcher-stopped.txt", stopped);
    // Still pi's own footer around it: the cwd line and the model line above the status.
    const lines = stopped.trimEnd().split("\n");
    expect(lines.at(-3)).toMatch(/~\/proj/);
    expect(lines.at(-2)).toMatch(/faux-1/);
  }, 180_000);
});
