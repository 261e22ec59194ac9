// The early dispatch of `pi-guard snapshot` (src/cli/start.ts) reads the command line without
// commander. Whatever it takes as a plain snapshot, commander's own table must read the same way:
// the snapshot command, no snapshot option, and the same global options. Whatever it is unsure of
// goes to the table, so a mistake here can only cost speed, never change a command's meaning.
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { buildProgram, GROUPS, type GlobalOptions } from "../../src/cli/main.js";
import { commandWord, plainSearchArgs, plainSnapshotArgs } from "../../src/cli/start.js";

/** What commander's table makes of `args`: the operands, options and globals of the action at `path` (["snapshot"]), or why not. */
async function commanderReads(args: string[], path = ["snapshot"]): Promise<{ operands: unknown[]; opts: Record<string, unknown>; globals: GlobalOptions } | string> {
  const program = await buildProgram();
  const quiet = { writeOut: () => undefined, writeErr: () => undefined, outputError: () => undefined };
  let seen: { operands: unknown[]; opts: Record<string, unknown>; globals: GlobalOptions } | string = `no ${path.join(" ")} action`;
  const all = (c: Command): Command[] => [c, ...c.commands.flatMap(all)];
  for (const c of all(program)) c.exitOverride().configureOutput(quiet);
  for (const c of all(program).slice(1)) c.action(() => void (seen = `command ${c.name()}`));
  const target = path.reduce((c, name) => c.commands.find((sub) => sub.name() === name)!, program);
  target.action((...a: unknown[]) => {
    const opts = a.at(-2) as Record<string, unknown>;
    seen = { operands: a.slice(0, -2), opts: { ...opts }, globals: program.opts() as GlobalOptions };
  });
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

const PLAIN_SEARCH = [
  ["sessions", "search", "xyzzy"],
  ["--json", "sessions", "search", "deprecated callback"],
  ["sessions", "search", "\"error handling\"", "--json"],
  ["-r", "/r", "sessions", "--json", "search", "refactor*"],
  ["sessions", "search", "x", "-n", "5", "--all", "--deleted"],
  ["sessions", "search", "--limit=3", "x", "--project", "api", "--tag", "t"],
  ["sessions", "search", "x", "--since", "1 week ago", "--until=2026-12-01", "--date", "2026-11-30"],
  ["sessions", "search", "x", "--host", "h", "--agent", "pi", "--live", "--lock-wait", "0"],
  ["sessions", "search", "x", "--limit", "0"],
  ["sessions", "search", "sessions"],
  ["--repo", "sessions", "sessions", "search", "x", "-q"],
  ["sessions", "search", "x", "-n", "1", "-n", "2"],
];

const NOT_PLAIN_SEARCH = [
  ["sessions", "search"],
  ["sessions", "search", "a", "b"],
  ["sessions", "search", "-x"],
  ["sessions", "search", "x", "--help"],
  ["sessions", "search", "x", "-n5"],
  ["sessions", "search", "x", "-n"],
  ["sessions", "search", "x", "--limit="],
  ["sessions", "search", "x", "--project", "-p"],
  ["sessions", "search", "x", "--all=1"],
  ["sessions", "search", "x", "--"],
  ["sessions", "--all", "search", "x"],
  ["--deleted", "sessions", "search", "x"],
  ["sessions", "list", "x"],
  ["sessions", "ls"],
  ["search", "sessions", "x"],
  ["help", "sessions", "search"],
  ["--version", "sessions", "search", "x"],
];

// The plain search (search-plain.ts) runs the search's action with what start.ts read: the same
// query, options and globals commander's table gives it, or the table runs.
describe("the early dispatch of a plain `pi-guard sessions search`", () => {
  it.each(PLAIN_SEARCH.map((a) => [a.join(" "), a]))("%s: a plain search, read as commander reads it", async (_, args) => {
    const mine = plainSearchArgs(args);
    const theirs = await commanderReads(args, ["sessions", "search"]);
    expect(typeof theirs, String(theirs)).toBe("object");
    if (typeof theirs !== "object") return;
    const { lockWait, ...globals } = theirs.globals;
    expect(mine).toEqual({
      query: theirs.operands[0],
      opts: theirs.opts,
      globals: lockWait === "60" && !args.some((a) => a.startsWith("--lock-wait")) ? globals : { ...globals, lockWait },
    });
  });

  it.each(NOT_PLAIN_SEARCH.map((a) => [a.join(" "), a]))("%s: left to the command table", (_, args) => {
    expect(plainSearchArgs(args)).toBeUndefined();
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
