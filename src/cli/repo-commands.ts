import type { Command } from "commander";
import { context, type Context } from "./context.js";
import { EXIT, formatBytes, info, printJson, printJsonArray, table, warn } from "./output.js";
import { Progress } from "./progress.js";
import { promptHidden } from "./prompt.js";
import { RepoError } from "../repo/errors.js";
import { formatLocalTime } from "../present/time.js";
import type { KeyPlace } from "../library/keys.js";
import { snapshotAction, type SnapshotOptions } from "./snapshot-command.js";

// verify-command.ts names paths as the snapshot command does.
export { shownPath } from "../engine/verdict.js";

function* slices<T>(items: readonly T[], size: number): Generator<readonly T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

/**
 * After `init --repo X` (or with PI_GUARD_REPO=X) while another repository is where pi-guard would
 * otherwise look: X is a separate repository, not a copy of that one, and a mirror is made by copy.
 */
async function noteOtherRepository(ctx: Context): Promise<void> {
  const { otherRepositoryNear } = await import("../library/repository.js");
  const g = ctx.globals;
  const other = await otherRepositoryNear(ctx.config, { passwordFile: g.passwordFile, keyFile: g.keyFile, agentDir: g.agentDir, configFile: g.config });
  if (!other) return;
  warn(
    `note: ${ctx.config.repo} is a new, separate repository, not a copy of repository ${other.id.slice(0, 8)} at ${other.location}; to make a mirror of that one instead, delete this new one and run \`pi-guard copy --to ${ctx.config.repo}\` (a mirror is made by copy into an empty location, never by init)`,
  );
}

export function registerRepoCommands(program: Command): void {
  program
    .command("init")
    .description("create a new encrypted repository")
    .option("--key-file-only", "use a key file even when a password is available")
    .addHelpText(
      "after",
      `
With PI_GUARD_PASSWORD or --password-file, the master key is wrapped by that password (scrypt).
With neither and no terminal, a key file is created (mode 0600) for unattended use: keep a copy
of it somewhere safe, because without it the repository cannot be read (pi-guard key export).

init makes a new, separate repository. A mirror (a copy of an existing repository, such as an S3
copy of the local one) is not made by init: \`pi-guard copy --to <location>\` makes it in an empty
location, or list it in "mirrors" of the config file and the next snapshot makes it. init refuses
a location that the config names as a mirror.

Examples:
  $ pi-guard init
  $ PI_GUARD_PASSWORD_FILE=~/.secrets/pi-guard pi-guard init --repo /mnt/backup/pi`,
    )
    .action(async (opts: { keyFileOnly?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const engine = await ctx.engine();
      if (engine.kind === "restic") {
        // restic asks for (and confirms) a password itself; it has no key files.
        const made = await engine.init({ useKeyFile: opts.keyFileOnly });
        if (ctx.out.json) printJson({ repo: ctx.config.repo, id: made.id, credential: made.credential, keyFile: null, engine: "restic" });
        else info(ctx.out, `created restic repository ${made.id.slice(0, 8)} at ${ctx.config.repo.slice("restic:".length)}`);
        return;
      }
      const { assertNotAMirror, haveCredential } = await import("../library/repository.js");
      await assertNotAMirror(ctx.config);
      let password: string | undefined;
      const haveCred = !opts.keyFileOnly && (await haveCredential(ctx.config));
      if (!haveCred && !opts.keyFileOnly && process.stdin.isTTY && process.stderr.isTTY) {
        password = await promptHidden("new repository password (empty for a key file): ");
        if (password) {
          const again = await promptHidden("repeat password: ");
          if (again !== password) throw new RepoError("the passwords do not match", "usage");
        } else password = undefined;
      }
      const result = await engine.init({ password, useKeyFile: opts.keyFileOnly });
      await noteOtherRepository(ctx);
      if (ctx.out.json) {
        printJson({ repo: ctx.config.repo, id: result.id, credential: result.credential, keyFile: result.keyFile ?? null });
        return;
      }
      info(ctx.out, `created repository ${result.id.slice(0, 8)} at ${ctx.config.repo}`);
      if (result.keyFile) {
        info(ctx.out, `key file: ${result.keyFile} (mode 0600)`);
        info(ctx.out, `keep a copy of it somewhere safe (a password manager, another disk): without it the backups cannot be read; \`pi-guard key export\` prints a recovery code for that.`);
      }
    });

  program
    .command("snapshot")
    .alias("backup")
    .description("back up the agent dir now")
    .option("--tag <tag...>", "tags to attach to the snapshot")
    .option("--from-tar <file>", "import a tarball of an agent dir (made by `pi-guard archive` or by hand) as a snapshot")
    .option("--time <iso>", "with --from-tar: the time to record for the imported snapshot (no zone: local time)")
    .option("--init", "create the repository first if there is none (a key file when no password is set)")
    .option("--allow-empty", "a missing agent dir is not an error: say so, take no snapshot, exit 0 (unless an earlier snapshot held it)")
    .option("--accept-loss", "the files that vanished since the last snapshot were deleted on purpose: take this snapshot as the new whole state")
    .option("--full-read", "read every file in full, trusting nothing of the last snapshot (after `pi-guard verify` found a difference)")
    .addHelpText(
      "after",
      `
Files that only grew since the last snapshot are read from their last chunk on, so a snapshot of a
large, live session costs about the size of what was appended; once an hour (the config's
snapshot.fullReadIntervalMs) such a file is read in full again. A file is unchanged, and not read,
when its inode, size, mtime and ctime are all as before; --full-read reads every file anyway.

A path that cannot be read (permissions) is skipped and named; everything else is backed up, the
snapshot is tagged "incomplete" and the exit code is 3, so that cron notices. The same goes for a
file that changed each time it was read (it is stored as last read and named), and for a sessions
dir that is a symlink to nothing. A sessions dir that is a symlink to a folder is backed up from
that folder (root "sessions"), and the output says so. FIFOs, sockets and devices are named, not
backed up (exit 0). A missing agent dir is an error (exit 1) unless --allow-empty is given, and
still one when an earlier snapshot held it.

If every session file, or most files, of the last whole snapshot are gone (the npm reify
accident), the snapshot is still taken but tagged "suspect-loss": it is never "latest" nor the
base of the next snapshot, \`pi-guard restore latest\` brings the files back, and the exit code is
1 with one line saying what vanished. If you deleted them on purpose, --accept-loss takes the
snapshot untagged, as the new whole state (a running watcher then clears its suspected loss).

--from-tar refuses the whole archive, importing nothing, if any entry is unsafe: an absolute path,
a ".." component, an invalid name, a hard link, a device or fifo, or anything under a symlink the
archive made; each one is named. An import is tagged "import" and records when it ran; "latest"
never means an import (name it by id), and no later snapshot uses it as its parent.

Examples:
  $ pi-guard snapshot
  $ pi-guard snapshot --init           # first run: create the repository, then back up
  $ pi-guard snapshot --json
  $ pi-guard snapshot --accept-loss    # the sessions that vanished were deleted on purpose
  $ pi-guard snapshot --from-tar old-backup.tar.gz --time 2026-10-01T12:00:00Z`,
    )
    .action((opts: SnapshotOptions, cmd: Command) => snapshotAction(context(cmd), opts));

  program
    .command("snapshots")
    .description("list snapshots")
    .option("--tag <tag>", "only snapshots with this tag")
    .option("--host <host>", "only snapshots from this host")
    .addHelpText("after", `\nTimes are shown in UTC and in local time (set by TZ); a time you type without a zone is local.\nEvery host that backs up into the repository is listed (HOST column); --host keeps one.\n\nExamples:\n  $ pi-guard snapshots\n  $ pi-guard snapshots --host laptop\n  $ pi-guard snapshots --json | jq '.[-1].id'`)
    .action(async (opts: { tag?: string; host?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const wanted = (s: { tags: string[]; host: string }) => (!opts.tag || s.tags.includes(opts.tag)) && (!opts.host || s.host === opts.host);
      const engine = await ctx.engine();
      if (!engine.repository) {
        // Another engine lists what the interface has: no sizes, no dedup parents.
        const all = (await engine.listSnapshots({ onUnreadable: (m) => warn(`skipped ${m}; run \`pi-guard check\``) })).filter(wanted);
        if (ctx.out.json) return printJson(all.map((s) => ({ id: s.id, shortId: s.id.slice(0, 8), time: s.time, localTime: formatLocalTime(new Date(s.time)), host: s.host, user: s.user, tags: s.tags, roots: s.roots, engine: engine.kind })));
        if (!all.length) return info(ctx.out, `no pi-guard snapshots in this ${engine.kind} repository yet (run \`pi-guard snapshot\`)`);
        const rows = [["ID", "TIME (UTC)", "LOCAL TIME", "HOST", "TAGS"]];
        for (const s of all) rows.push([s.id.slice(0, 8), s.time.replace("T", " ").replace(/\.\d+Z$/, "Z"), formatLocalTime(new Date(s.time)).replace("T", " "), s.host, s.tags.join(",")]);
        return info(ctx.out, table(rows));
      }
      const repo = await engine.repository();
      // Snapshot objects that are all unreadable are damage, never "no snapshots yet" (the library refuses that).
      const lib = await import("../library/repository.js");
      if (ctx.out.json) {
        if (!opts.tag && !opts.host) {
          // From the cached rendered listing: nothing parsed, nothing pretty-printed again.
          const { printRenderedSnapshots } = await import("./snapshot-rows-output.js");
          const listing = await lib.renderedSnapshots(repo, ctx.config);
          for (const bad of repo.unreadableSnapshots) warn(`skipped ${bad.error}; run \`pi-guard check\``);
          await printRenderedSnapshots(listing);
          return;
        }
        const { snapshotJson } = lib;
        const all = await lib.snapshotRecords(repo, ctx.config, opts);
        for (const bad of repo.unreadableSnapshots) warn(`skipped ${bad.error}; run \`pi-guard check\``);
        await printJsonArray(slices(all, 2000), ({ id, snapshot: s }) => snapshotJson(id, s, formatLocalTime(new Date(s.time))));
        return;
      }
      // The table needs only the briefs: 100,000 snapshots list without parsing each in full.
      const all = await lib.snapshotBriefs(repo, ctx.config, opts);
      for (const bad of repo.unreadableSnapshots) warn(`skipped ${bad.error}; run \`pi-guard check\``);
      if (all.length === 0) {
        info(ctx.out, "no snapshots yet (run `pi-guard snapshot`)");
        return;
      }
      const rows = [["ID", "TIME (UTC)", "LOCAL TIME", "HOST", "FILES", "SIZE", "ADDED", "TAGS"]];
      const size = (n: number | null) => (n === null ? "?" : formatBytes(n));
      for (const { id, snapshot: s } of all) {
        const local = formatLocalTime(new Date(s.time)).replace("T", " ");
        rows.push([id.slice(0, 8), s.time.replace("T", " ").replace(/\.\d+Z$/, "Z"), local, s.host, s.files === null ? "?" : String(s.files), size(s.bytesTotal), size(s.bytesStored), s.tags.join(",")]);
      }
      info(ctx.out, table(rows));
    });

  program
    .command("check")
    .description("verify the repository's structure, and with --read-data every byte")
    .option("--read-data", "read every pack and verify every blob")
    .option("--all", "check the repository and each mirror of the config file, one after another")
    .addHelpText(
      "after",
      `\nExit code 3 when damage is found. Damage is one line per damaged pack: what is wrong with it,\nhow many files in how many snapshots use it, a few of their paths; then "next:" names the\ncommand that heals it (\`pi-guard repair --from <mirror> --to <repository>\` when a mirror is\nconfigured; \`pi-guard repair index\` for a damaged index). --json lists every damaged file of\nevery snapshot (damagedFiles), and the same grouping (damagedPacks, nextSteps).\n\nWith --all, each target is reported on its own and the exit code is the worst of them (3\ndamage, 1 a target that cannot be opened or reached).\n\nExamples:\n  $ pi-guard check\n  $ pi-guard check --read-data --json\n  $ pi-guard check --all --read-data    # the repository and every mirror`,
    )
    .action(async (opts: { readData?: boolean; all?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const engine = await ctx.engine();
      if (!engine.repository) {
        const r = await engine.check({ readData: opts.readData, lockWaitMs: ctx.lockWaitMs });
        if (ctx.out.json) printJson(r.details);
        else {
          for (const p of r.problems) warn(`error: ${p}`);
          info(ctx.out, `${engine.kind} check${r.readData ? " --read-data" : ""}: ${r.ok ? "no errors" : "DAMAGED"}`);
        }
        if (!r.ok) process.exitCode = EXIT.damaged;
        return;
      }
      const { checkRepositoryAt, openRepositoryAt } = await import("../library/repository.js");
      const targets = [ctx.config.repo, ...ctx.config.mirrors];
      const check = async (repo: Awaited<ReturnType<typeof ctx.open>>, location: string) => {
        const progress = new Progress(!ctx.out.json && !ctx.out.quiet);
        try {
          return await checkRepositoryAt(ctx.config, repo, location, { readData: opts.readData, lockWaitMs: ctx.lockWaitMs, onProgress: (p) => progress.update(`reading packs ${p.packs}/${p.total}`) });
        } finally {
          progress.done();
        }
      };
      // One line per damaged pack, however many files and snapshots need it; --json has them all.
      const print = ({ report, problems }: Awaited<ReturnType<typeof check>>, prefix: string) => {
        for (const p of problems) (p.severity === "error" ? warn : (l: string) => info(ctx.out, l))(`${prefix}${p.severity}: ${p.message}`);
        info(ctx.out, `${prefix}${report.snapshots} snapshots, ${report.packs} packs, ${report.blobs} blobs${opts.readData ? `, ${formatBytes(report.bytesRead)} read` : ""}: ${report.ok ? "no errors" : "DAMAGED"}`);
        for (const step of report.nextSteps) info(ctx.out, `${prefix}next: ${step}`);
      };
      if (!opts.all) {
        const checked = await check(await engine.repository(), ctx.config.repo);
        if (ctx.out.json) printJson(checked.report);
        else print(checked, "");
        if (!checked.report.ok) process.exitCode = EXIT.damaged;
        return;
      }
      const { reportError } = await import("./output.js");
      const results: { target: string; ok: boolean; error: string | null; report: unknown }[] = [];
      let code: number = EXIT.ok;
      for (const target of targets) {
        try {
          const checked = await check(await openRepositoryAt(ctx.config, target, warn), target);
          const report = checked.report;
          results.push({ target, ok: report.ok, error: null, report });
          if (!ctx.out.json) print(checked, `${target}: `);
          if (!report.ok) code = Math.max(code, EXIT.damaged);
        } catch (err) {
          const message = err instanceof Error ? err.message.split("\n")[0] : String(err);
          results.push({ target, ok: false, error: message, report: null });
          // A target that cannot be read is as bad as a damaged one when it holds damaged data.
          const exit = err instanceof RepoError ? reportError(new RepoError(`${target}: ${message}`, err.kind)) : (warn(`${target}: ${message}`), EXIT.failure);
          code = Math.max(code, exit === EXIT.usage ? EXIT.failure : exit);
        }
      }
      if (ctx.out.json) printJson(results);
      process.exitCode = code;
    });
}

export function registerKeyCommands(program: Command): void {
  const key = program.command("key").description("manage the credentials that open the repository");
  key
    .command("list")
    .description("list the keys (one per password or key file)")
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = context(cmd);
      const repo = await ctx.open();
      const { listKeys } = await import("../library/keys.js");
      const keys = await listKeys(repo);
      if (ctx.out.json) printJson(keys);
      else info(ctx.out, table([["ID", "KIND", "CREATED", "HOST", ""], ...keys.map((k) => [k.id.slice(0, 8), k.kdf === "scrypt" ? "password" : "key file", k.created, k.host, k.current ? "(current)" : ""])]));
    });
  key
    .command("add")
    .description("add a credential: a new key file, or a password from PI_GUARD_NEW_PASSWORD or a prompt")
    .option("--new-key-file <file>", "create this key file (mode 0600) and let it open the repository")
    .addHelpText("after", `\nExamples:\n  $ pi-guard key add --new-key-file ~/.config/pi-guard/key      # unattended access for a password repo\n  $ PI_GUARD_NEW_PASSWORD=... pi-guard key add`)
    .action(async (opts: { newKeyFile?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const repo = await ctx.open();
      const { addKey } = await import("../library/keys.js");
      let cred: { keyFile: string } | { password: string };
      if (opts.newKeyFile) cred = { keyFile: opts.newKeyFile };
      else {
        let password = process.env.PI_GUARD_NEW_PASSWORD;
        if (password === undefined && process.stdin.isTTY) password = await promptHidden("new password: ");
        if (!password) throw new RepoError("no new password: set PI_GUARD_NEW_PASSWORD or use --new-key-file", "usage");
        cred = { password };
      }
      const { id, kind } = await addKey(repo, cred);
      if (ctx.out.json) printJson({ id, kind, keyFile: opts.newKeyFile ?? null });
      else info(ctx.out, `added key ${id.slice(0, 8)}${opts.newKeyFile ? ` (key file ${opts.newKeyFile}; keep a copy somewhere safe)` : ""}`);
    });
  key
    .command("export")
    .description("make a recovery key and print its code once, to keep off this machine")
    .option("--yes", "print the code even when stdout is a terminal")
    .addHelpText(
      "after",
      `
Adds a new key to the repository and to each mirror of the config file, whose password is a
fresh recovery code (8 groups of 4 hex digits), and prints that code on stdout: nothing else goes
there, the instructions go to stderr. The code is stored nowhere else. Keep it off this machine
(a password manager, or on paper): with it, the repository and its copies (an S3 mirror) open on
any machine, as a password, even when this disk and its key file are gone. Case, spaces and
dashes do not matter when it is typed. It is printed once: another export makes another key.
Revoke one with \`pi-guard key remove <id>\`. doctor warns until an exported key exists.

A terminal keeps what it shows (scrollback, screen sharing), so without --yes the code is not
printed onto one (exit 2): redirect stdout. Exit 1 when a mirror could not get the key (the code
still works for the others, and the next snapshot ships the key there).

Examples:
  $ pi-guard key export > /media/usb/pi-guard-recovery.txt
  $ pi-guard key export --yes            # show it here, to write it down
  $ PI_GUARD_PASSWORD='<code>' PI_GUARD_REPO=s3://bucket/laptop pi-guard snapshots   # on a new machine`,
    )
    .action(async (opts: { yes?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      if (process.stdout.isTTY && !opts.yes) {
        throw new RepoError("key export would show a secret on this terminal (scrollback, screen sharing): redirect it (pi-guard key export > /media/usb/pi-guard-recovery.txt) or pass --yes to show it here", "usage");
      }
      const repo = await ctx.open();
      const { exportRecoveryKey } = await import("../library/keys.js");
      // Written before it is recorded (the library records it after this): a record must never claim a code nobody received.
      const r = await exportRecoveryKey(ctx.config, repo, async ({ keyId, code, places }) => {
        const out = ctx.out.json ? JSON.stringify({ keyId, code, repository: { location: ctx.config.repo, id: repo.config.id }, mirrors: places.slice(1) }, null, 2) : code;
        await new Promise<void>((resolve, reject) => process.stdout.write(`${out}\n`, (err) => (err ? reject(err) : resolve())));
      });
      const failed = r.places.filter((p) => !p.ok);
      const opened = r.places.filter((p) => p.ok && p.present).map((p) => `  PI_GUARD_PASSWORD='<code>' pi-guard snapshots --repo ${p.location}`);
      const later = r.places.filter((p) => !p.present).map((p) => `  ${p.location}: no repository there yet; the next snapshot makes it, with this key`);
      process.stderr.write(
        [
          `recovery code for repository ${repo.config.id.slice(0, 8)} (key ${r.keyId.slice(0, 8)}) printed on stdout: store it off this machine (a password manager, or on paper), and delete any file of it left here.`,
          `It opens the repository and its copies as a password, on any machine:`,
          ...opened,
          ...later,
          `Revoke it with: pi-guard key remove ${r.keyId.slice(0, 8)}`,
          "",
        ].join("\n"),
      );
      for (const p of failed) warn(`${p.location}: ${p.error}; it did not get the recovery key (the next snapshot or pi-guard copy ships it there)`);
      if (failed.length) process.exitCode = EXIT.failure;
    });
  key
    .command("remove")
    .argument("<id>", "the key's id, or a unique prefix of it (pi-guard key list)")
    .description("revoke a key: delete it from the repository and from each mirror, verified")
    .option("--allow-current", "also when it is the key that opened the repository now (another credential must open it)")
    .addHelpText(
      "after",
      `
The key object goes from each mirror of the config file first, then from the repository; each
deletion is checked. It is never the last key, and never the key in use (the one this command
opened the repository with) without --allow-current: whatever runs with that credential (the
service, cron) is then locked out. A mirror is first given every other key, so no copy is left
without one. A mirror that cannot be reached keeps the key (exit 1): run the same command again
when it can be, which finds the key there too.

Removing a key stops its credential from opening the repository from now on. Whoever already
opened it with that credential may have kept the master key itself: against that, only a new
repository helps (pi-guard init somewhere new, then snapshot).

Examples:
  $ pi-guard key list
  $ pi-guard key remove 1a2b3c4d
  $ PI_GUARD_PASSWORD_FILE=~/.secrets/new pi-guard key remove 5e6f7a8b   # the old key file's key`,
    )
    .action(async (id: string, opts: { allowCurrent?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const repo = await ctx.open();
      const { removeKey } = await import("../library/keys.js");
      const r = await removeKey(ctx.config, repo, id, { allowCurrent: opts.allowCurrent });
      reportKeyPlaces(ctx, r.places, `removed key ${r.keyId.slice(0, 8)} from`, { keyId: r.keyId });
    });
  key
    .command("passwd")
    .description("change the password of the key in use, in the repository and in each mirror")
    .addHelpText(
      "after",
      `
The new password comes from PI_GUARD_NEW_PASSWORD, or is asked twice on a terminal. A new key with
it is added and checked to open the repository; then the old key is removed as \`key remove\` does
(each mirror gets the new key before its old one goes, the repository last). A crash at any moment
leaves every copy opening with the old password, the new one, or both; if both, \`pi-guard key
remove <old id>\` with the new password finishes it. A key file has no password: for one, add the
new credential (key add) and remove the old key.

Examples:
  $ pi-guard key passwd
  $ PI_GUARD_PASSWORD_FILE=old.txt PI_GUARD_NEW_PASSWORD="$(cat new.txt)" pi-guard key passwd`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = context(cmd);
      let password = process.env.PI_GUARD_NEW_PASSWORD;
      if (password === undefined && process.stdin.isTTY && process.stderr.isTTY) {
        password = await promptHidden("new password: ");
        if (password && (await promptHidden("repeat new password: ")) !== password) throw new RepoError("the passwords do not match", "usage");
      }
      if (!password) throw new RepoError("no new password: set PI_GUARD_NEW_PASSWORD (or run it on a terminal, which asks)", "usage");
      const repo = await ctx.open();
      const { changePassword } = await import("../library/keys.js");
      const r = await changePassword(ctx.config, repo, password);
      reportKeyPlaces(ctx, r.places, `changed the password: key ${r.newKeyId.slice(0, 8)} replaces ${r.oldKeyId.slice(0, 8)} in`, { oldKeyId: r.oldKeyId, newKeyId: r.newKeyId });
    });
}

/** One line per copy a key command changed; a copy it could not change is a warning and exit 1. */
function reportKeyPlaces(ctx: Context, places: KeyPlace[], done: string, json: Record<string, string>): void {
  if (ctx.out.json) printJson({ ...json, places });
  for (const p of places) {
    if (!p.ok) warn(`${p.location}: ${p.error}; not changed there: run the same command again when it can be reached`);
    else if (!p.present) info(ctx.out, `${p.location}: no repository there yet (the next snapshot makes it, with the keys of then)`);
    else info(ctx.out, `${done} ${p.location}`);
  }
  if (places.some((p) => !p.ok)) process.exitCode = EXIT.failure;
}

export function registerDoctorCommand(program: Command): void {
  program
    .command("doctor")
    .description("check the setup for ways the backups could be lost with the data")
    .option("--agent <name>", "only this agent's checks (pi, claude, …) beside the repository's")
    .addHelpText(
      "after",
      `
Besides the repository and credentials, doctor looks for the hazards behind the accident
pi-guard exists for: a package.json, node_modules or npm prefix in or beside the agent dir, a
repository or key file inside it, no copy of a credential known to exist off the machine (see
pi-guard key export), a sessions dir that is a symlink, no watcher running and no snapshot in the
last hour, and session files with a torn last line, glued entries or no header. For every other
guarded agent (see pi-guard agents) it names what deletes that agent's history, such as Claude
Code's cleanupPeriodDays, with the fix. It only reads. Each warning or error comes with a one-line fix.

Exit code 1 when a check fails (an error); warnings do not change the exit code.

Examples:
  $ pi-guard doctor
  $ pi-guard doctor --json | jq '.checks[] | select(.status != "ok")'
  $ pi-guard doctor --agent claude`,
    )
    .action(async (opts: { agent?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const { doctor } = await import("../library/repository.js");
      const { ok, checks } = await doctor(ctx.config, opts.agent);
      if (ctx.out.json) printJson({ ok, checks });
      else info(ctx.out, table(checks.flatMap((c) => [[c.status === "ok" ? "ok" : c.status.toUpperCase(), c.name, c.message], ...(c.fix ? [["", "", `fix: ${c.fix}`]] : [])])));
      if (!ok) process.exitCode = EXIT.failure;
    });
}
