// The early dispatch of `pi-guard snapshot` (src/cli/start.ts) reads the command line without
// commander. Whatever it takes as a plain snapshot, commander's own table must read the same way:
// the snapshot command, no snapshot option, and the same global options. Whatever it is unsure of
// goes to the table, so a mistake here can only cost speed, never change a command's meaning.
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { buildProgram, GROUPS, type GlobalOptions } from "../../src/cli/main.js";
import { commandWord, plainSnapshotArgs } from "../../src/cli/start.js";

/** What commander's table makes of `args`: the snapshot action's options and globals, or why not. */
async function commanderReads(args: string[]): Promise<{ opts: Record<string, unknown>; globals: GlobalOptions } | string> {
  const program = await buildProgram();
  let seen: { opts: Record<string, unknown>; globals: GlobalOptions } | string = "no snapshot action";
  program.configureOutput({ writeOut: () => undefined, writeErr: () => undefined, outputError: () => undefined });
  const snapshot = program.commands.find((c) => c.name() === "snapshot")!;
  snapshot.exitOverride().configureOutput({ writeOut: () => undefined, writeErr: () => undefined, outputError: () => undefined });
  snapshot.action((opts: Record<string, unknown>, cmd: Command) => {
    seen = { opts: { ...opts }, globals: cmd.optsWithGlobals() as GlobalOptions };
  });
  for (const c of program.commands) if (c !== snapshot) c.action(() => void (seen = `command ${c.name()}`));
  try {
    program.parse(["node", "pi-guard", ...args]);
  } catch (err) {
    return `commander: ${(err as Error).message}`;
  }
  return seen;
}

const PLAIN = [
  ["snapshot"],
  ["backup"],
  ["snapshot", "--json"],
  ["--json", "snapshot"],
  ["-q", "snapshot", "--quiet"],
  ["snapshot", "--repo", "/r", "--json"],
  ["--repo=/r", "snapshot"],
  ["-r", "/r", "backup", "--key-file", "/k"],
  ["snapshot", "--password-file", "/p", "--agent-dir", "/a", "--config", "/c.json", "--lock-wait", "5"],
  ["--repo", "snapshot", "snapshot"],
  ["snapshot", "--repo", "/one", "--repo", "/two"],
  ["--lock-wait=0", "snapshot", "--json"],
];

const NOT_PLAIN = [
  [],
  ["snapshots"],
  ["snapshot", "--tag", "x"],
  ["snapshot", "--init"],
  ["--json", "snapshot", "--full-read"],
  ["snapshot", "--allow-empty"],
  ["snapshot", "--accept-loss"],
  ["snapshot", "--from-tar", "/t.tar"],
  ["snapshot", "--time", "2026-01-01"],
  ["snapshot", "--help"],
  ["snapshot", "-h"],
  ["--version", "snapshot"],
  ["snapshot", "extra"],
  ["snapshot", "snapshot"],
  ["snapshot", "--"],
  ["snapshot", "--repo"],
  ["snapshot", "--repo="],
  ["snapshot", "--repo", "--json"],
  ["snapshot", "-r/r"],
  ["snapshot", "-qr", "/r"],
  ["snapshot", "--json=1"],
  ["snapshot", "--jso"],
  ["help", "snapshot"],
];

describe("the early dispatch of a plain `pi-guard snapshot`", () => {
  it.each(PLAIN.map((a) => [a.join(" "), a]))("%s: a plain snapshot, read as commander reads it", async (_, args) => {
    const mine = plainSnapshotArgs(args);
    const theirs = await commanderReads(args);
    expect(typeof theirs, String(theirs)).toBe("object");
    if (typeof theirs !== "object") return;
    // No snapshot option: the watcher may take it.
    expect(theirs.opts).toEqual({});
    const { lockWait, ...globals } = theirs.globals;
    // commander fills in --lock-wait's default ("60"); the context reads an absent one as 60 too.
    expect(mine).toEqual(lockWait === "60" && !args.some((a) => a.startsWith("--lock-wait")) ? globals : { ...globals, lockWait });
  });

  it.each(NOT_PLAIN.map((a) => [a.join(" ") || "(nothing)", a]))("%s: left to the command table", (_, args) => {
    expect(plainSnapshotArgs(args)).toBeUndefined();
  });
});

/** Every command's help under `cmd`, by its path: what a user of that command sees. */
function helpTexts(cmd: Command, prefix = ""): Map<string, string> {
  const out = new Map<string, string>();
  for (const sub of cmd.commands) {
    const name = `${prefix}${sub.name()}`;
    out.set(name, sub.helpInformation());
    for (const [k, v] of helpTexts(sub, `${name} `)) out.set(k, v);
  }
  return out;
}

// main builds only the group of the command it is given (GROUPS); that command must be the same
// command as in the whole table, and the whole table is built for everything else.
describe("the command table built for one command's group", () => {
  it("GROUPS name every top-level command and alias of the whole table, in its order", async () => {
    const full = await buildProgram();
    expect(GROUPS.flatMap((g) => g.names)).toEqual(full.commands.flatMap((c) => [c.name(), ...c.aliases()]));
  });

  it.each(GROUPS.flatMap((g) => g.names))("%s: the same commands, options and help as in the whole table", async (name) => {
    const whole = helpTexts(await buildProgram());
    const group = await buildProgram([name]);
    const mine = helpTexts(group);
    expect(mine.size).toBeGreaterThan(0);
    for (const [path, help] of mine) expect(help, path).toBe(whole.get(path));
    expect(group.helpInformation().length).toBeLessThan((await buildProgram()).helpInformation().length);
  });

  it.each([
    [["sessions", "search", "x"], "sessions"],
    [["--json", "sessions", "search"], "sessions"],
    [["-r", "/r", "--key-file=/k", "restore", "latest"], "restore"],
    [["--help"], undefined],
    [["--version"], undefined],
    [["--repo", "--json", "sessions"], undefined],
    [["help", "sessions"], "help"],
    [[], undefined],
  ] as const)("commandWord(%j) is %s", (args, word) => {
    expect(commandWord(args)).toBe(word);
  });
});
