// Every command a message, a --help text or a document tells the user to run exists, and a
// command that does not exist is an error, even with --help.

import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Command } from "commander";
import ts from "typescript";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, PROJECT_ROOT, staleOutputs } from "../helpers/cli.js";
import { makeSandbox } from "../helpers/tmp.js";

interface Mention {
  where: string;
  words: string[];
}

// `pi-guard` as a word of its own (not ~/.config/pi-guard/key, not "pi-guard key file v1"), and
// the words after it.
const INVOCATION = /(?<![\w/.\-"'])pi-guard((?:[ \t]+[^\s`<]+){0,2})/g;

/** Invocations in one piece of code-like text: a code span, a `$ ` example line, a message. */
function invocations(text: string, where: (offset: number) => string, out: Mention[]): void {
  for (const m of text.matchAll(INVOCATION)) out.push({ where: where(m.index), words: m[1].trim().split(/[ \t]+/).filter(Boolean) });
}

/** The parts of a text that are code: `spans`, <code>elements</code>, and `$ ` lines. */
function codeParts(text: string): { start: number; text: string }[] {
  const parts: { start: number; text: string }[] = [];
  for (const m of text.matchAll(/`([^`]+)`|<code>(.*?)<\/code>|^[ \t]*\$ (.*)$/gm)) {
    const body = m[1] ?? m[2] ?? m[3];
    parts.push({ start: m.index + m[0].indexOf(body), text: body });
  }
  return parts;
}

const lineAt = (text: string, offset: number) => text.slice(0, offset).split("\n").length;

function markdownMentions(file: string, out: Mention[]): void {
  const text = readFileSync(file, "utf8");
  const rel = path.relative(PROJECT_ROOT, file);
  // Fenced blocks are code throughout; elsewhere only the code spans.
  let offset = 0;
  for (const [i, chunk] of text.split(/^```.*$/m).entries()) {
    const at = (o: number) => `${rel}:${lineAt(text, offset + o)}`;
    if (i % 2 === 1) invocations(chunk, at, out);
    else for (const part of codeParts(chunk)) invocations(part.text, (o) => at(part.start + o), out);
    offset += chunk.length + (text.slice(offset + chunk.length).match(/^```.*$/m)?.[0].length ?? 0);
  }
}

// Literals that start like a command line but are data, not advice.
const NOT_COMMANDS = new Set(["pi-guard key file v1" /* HKDF info of key files (docs/FORMAT.md) */]);

/** String literals in the TypeScript sources: the code parts, and a literal that is a command line. */
function sourceMentions(file: string, out: Mention[]): void {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const rel = path.relative(PROJECT_ROOT, file);
  const visit = (node: ts.Node) => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      const text = node.text;
      if (NOT_COMMANDS.has(text)) return;
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      const at = (o: number) => `${rel}:${line + text.slice(0, o).split("\n").length - 1}`;
      for (const part of codeParts(text)) invocations(part.text, (o) => at(part.start + o), out);
      // "undo with: pi-guard restore …", or a literal that is just a command line.
      for (const m of text.matchAll(/(?:^|: )(pi-guard [^\n`]*)/g)) invocations(m[1], (o) => at(m.index + m[0].indexOf(m[1]) + o), out);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

function filesUnder(dir: string, ext: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(ext))
    .map((e) => path.join(e.parentPath, e.name));
}

/** Why the words after `pi-guard` do not name a command, or undefined when they do. */
function unknownCommand(program: Command, words: string[]): string | undefined {
  let cmd = program;
  for (const word of words) {
    // Options, arguments, placeholders (`pi-guard <command>`, `…`): nothing more to check.
    if (!/^[a-z][a-z-]*$/.test(word) || cmd.commands.length === 0) return undefined;
    if (word === "help" && cmd === program) continue;
    const sub = cmd.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!sub) return cmd === program ? word : `${cmd.name()} ${word}`;
    cmd = sub;
  }
  return undefined;
}

describe("no message or document names a command that does not exist", () => {
  let program: Command;
  const mentions: Mention[] = [];

  beforeAll(async () => {
    // The command tree of the CLI users run (dist/), so it must be built from the current src/.
    if (process.env.PI_GUARD_TEST_ALLOW_STALE_DIST !== "1") expect(staleOutputs(), "run `npm run build` first").toEqual([]);
    const { buildProgram } = (await import(pathToFileURL(path.join(PROJECT_ROOT, "dist/cli/main.js")).href)) as { buildProgram: () => Promise<Command> };
    program = await buildProgram();
    for (const file of filesUnder(path.join(PROJECT_ROOT, "src"), ".ts")) sourceMentions(file, mentions);
    const docs = filesUnder(path.join(PROJECT_ROOT, "docs"), ".md");
    for (const file of [...docs, path.join(PROJECT_ROOT, "README.md"), path.join(PROJECT_ROOT, "bench/README.md")]) markdownMentions(file, mentions);
  });

  it("finds the mentions (the extraction works)", () => {
    const named = new Set(mentions.map((m) => m.words.slice(0, 2).join(" ")));
    // One of each kind: a code span in a message, a `$ ` help example, a README table and a fenced block.
    for (const expected of ["init", "sessions list", "check --read-data", "restore latest", "sessions search"]) expect(named).toContain(expected);
    expect(mentions.length).toBeGreaterThan(100);
  });

  it("every `pi-guard <command> [<subcommand>]` names a command of the program", () => {
    const bad = mentions.flatMap((m) => {
      const word = unknownCommand(program, m.words);
      return word ? [`${m.where}: pi-guard ${word}`] : [];
    });
    expect(bad, `commands that do not exist:\n${bad.join("\n")}`).toEqual([]);
  });

  it("the check itself refuses a command that does not exist", () => {
    expect(unknownCommand(program, ["teleport"])).toBe("teleport");
    expect(unknownCommand(program, ["sessions", "forget"])).toBe("sessions forget");
    expect(unknownCommand(program, ["sessions", "list", "--deleted"])).toBeUndefined();
    expect(unknownCommand(program, ["restore", "latest"])).toBeUndefined();
    const found: Mention[] = [];
    invocations("is `pi-guard watch` running?", () => "x", found);
    for (const part of codeParts("is `pi-guard watch` running? and ~/.config/pi-guard/key")) invocations(part.text, () => "x", found);
    expect(found.map((m) => m.words[0])).toEqual(["watch", "watch"]);
  });
});

describe("an unknown command is an error, even with --help", () => {
  const sb = makeSandbox("unknown-cmd");

  it("exits 2 with one line naming it and pointing to the help that lists the commands", async () => {
    for (const args of [["teleport", "--help"], ["teleport", "-h"], ["help", "teleport"], ["--repo", "/x", "teleport", "--help"], ["teleport"]]) {
      const line = expectOneLineError(await cli(sb, args), 2);
      expect(line).toContain("unknown command 'teleport'");
      expect(line).toContain("`pi-guard --help`");
    }
    const sub = expectOneLineError(await cli(sb, ["sessions", "forget", "--help"]), 2);
    expect(sub).toContain("unknown command 'forget'");
    expect(sub).toContain("`pi-guard sessions --help`");
    expect(expectOneLineError(await cli(sb, ["snapshott", "--help"]), 2)).toMatch(/snapshot, snapshots/);
  });

  it("help for commands that exist still exits 0", async () => {
    for (const args of [["--help"], ["help"], ["sessions", "--help"], ["help", "sessions"], ["sessions", "list", "--help"], ["restore", "--help"], ["--repo", "snapshots", "--help"]]) {
      const r = await cli(sb, args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toMatch(/^Usage: pi-guard/);
    }
    sb.cleanup();
  });
});

describe("README", () => {
  const readme = readFileSync(path.join(PROJECT_ROOT, "README.md"), "utf8");

  it("starts with two commands: the first puts pi-guard on the PATH before it runs pi-guard, the second runs the tests", () => {
    const block = /^# pi-guard\n+```sh\n([\s\S]*?)```/.exec(readme);
    expect(block, "README.md must start with a sh block").not.toBeNull();
    const commands = block![1].trim().split("\n").map((l) => l.replace(/\s+#.*$/, ""));
    expect(commands).toHaveLength(2);
    const [install, test] = commands;
    const steps = install.split(/\s*&&\s*/);
    const onPath = steps.findIndex((s) => /^npm (link|install -g \.)$/.test(s));
    const firstRun = steps.findIndex((s) => s.startsWith("pi-guard "));
    expect(onPath, install).toBeGreaterThan(steps.indexOf("npm run build"));
    expect(firstRun, install).toBeGreaterThan(onPath);
    expect(steps[0]).toBe("npm ci");
    expect(test).toBe("npm test");
    // Next to the test command: the system packages the tests need.
    expect(block![1]).toMatch(/npm test\s+#.*chromium.*tmux/);
  });

  it("links only to files inside the repository, and those exist", () => {
    const bad: string[] = [];
    for (const file of ["README.md", ...readdirSync(path.join(PROJECT_ROOT, "docs")).map((f) => `docs/${f}`), "bench/README.md"]) {
      const text = readFileSync(path.join(PROJECT_ROOT, file), "utf8");
      for (const m of text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
        const target = m[1];
        if (/^[a-z]+:/.test(target)) continue; // https: and mailto: links
        const resolved = path.resolve(PROJECT_ROOT, path.dirname(file), target);
        const inside = !path.relative(PROJECT_ROOT, resolved).startsWith("..");
        if (!inside || !existsSync(resolved)) bad.push(`${file}: ${target}`);
      }
      // Paths written out rather than linked count too.
      for (const m of text.matchAll(/`(\.\.\/[^`]+)`/g)) {
        if (path.relative(PROJECT_ROOT, path.resolve(PROJECT_ROOT, path.dirname(file), m[1])).startsWith("..")) bad.push(`${file}: ${m[1]}`);
      }
    }
    expect(bad, bad.join("\n")).toEqual([]);
  });
});
