import type { Command } from "commander";
import { context } from "./context.js";
import { EXIT, formatBytes, formatDuration, info, printJson, printJsonArray, table, warn } from "./output.js";
import { Progress } from "./progress.js";
import { promptHidden } from "./prompt.js";
import { RepoError } from "../repo/errors.js";
import { formatLocalTime } from "../restore/select.js";

function* slices<T>(items: readonly T[], size: number): Generator<readonly T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
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
of it somewhere safe, because without it the repository cannot be read.

Examples:
  $ pi-guard init
  $ PI_GUARD_PASSWORD_FILE=~/.secrets/pi-guard pi-guard init --repo /mnt/backup/pi`,
    )
    .action(async (opts: { keyFileOnly?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const { initRepository } = await import("../engine.js");
      const { resolveCredentials } = await import("../config/credentials.js");
      let password: string | undefined;
      const haveCred = !opts.keyFileOnly && (await resolveCredentials(ctx.config).catch(() => undefined));
      if (!haveCred && !opts.keyFileOnly && process.stdin.isTTY && process.stderr.isTTY) {
        password = await promptHidden("new repository password (empty for a key file): ");
        if (password) {
          const again = await promptHidden("repeat password: ");
          if (again !== password) throw new RepoError("the passwords do not match", "usage");
        } else password = undefined;
      }
      const result = await initRepository(ctx.config, { password, useKeyFile: opts.keyFileOnly });
      if (ctx.out.json) {
        printJson({ repo: ctx.config.repo, id: result.repo.config.id, credential: result.credential, keyFile: result.keyFile ?? null });
        return;
      }
      info(ctx.out, `created repository ${result.repo.config.id.slice(0, 8)} at ${ctx.config.repo}`);
      if (result.keyFile) {
        info(ctx.out, `key file: ${result.keyFile} (mode 0600)`);
        info(ctx.out, `keep a copy of it somewhere safe (a password manager, another disk): without it the backups cannot be read.`);
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
    .addHelpText(
      "after",
      `
Files that only grew since the last snapshot are read from their last chunk on, so a snapshot of a
large, live session costs about the size of what was appended.

A path that cannot be read (permissions) is skipped and named; everything else is backed up, the
snapshot is tagged "incomplete" and the exit code is 3, so that cron notices. A missing agent dir
is an error (exit 1) unless --allow-empty is given, and still one when an earlier snapshot held it.

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
    .action(async (opts: { tag?: string[]; fromTar?: string; time?: string; init?: boolean; allowEmpty?: boolean; acceptLoss?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const { backup } = await import("../engine.js");
      const { describeLoss } = await import("../snapshot/loss-guard.js");
      const progress = new Progress(!ctx.out.json && !ctx.out.quiet);
      const onProgress = (p: { files: number; bytes: number; current: string }) =>
        progress.update(`${p.files} files, ${formatBytes(p.bytes)}  ${p.current}`);
      const r = await backup(ctx.config, () => ctx.open(), { ...opts, tags: opts.tag, lockWaitMs: ctx.lockWaitMs, onProgress }).finally(() => progress.done());
      if (r.created) info(ctx.out, `created repository at ${ctx.config.repo}${r.created.keyFile ? `; key file ${r.created.keyFile} (keep a copy somewhere safe)` : ""}`);
      const result = r.snapshot;
      if (!result) {
        warn(`nothing to back up: ${ctx.config.agentDir} does not exist (set PI_CODING_AGENT_DIR or --agent-dir)`);
        if (ctx.out.json) printJson({ snapshotId: null, reason: "agent dir missing", agentDir: ctx.config.agentDir });
        return;
      }
      const s = result.snapshot.summary;
      const skipped = result.snapshot.skipped ?? [];
      if (skipped.length) {
        // Exit 3 as restic does: the snapshot exists, but it is not everything.
        process.exitCode = EXIT.damaged;
        for (const k of skipped) {
          const name = `${k.root === "agent" ? "" : `${k.root}:`}${k.path || "."}`;
          warn(`skipped ${/[\x00-\x1f\x7f]/.test(name) ? JSON.stringify(name) : name}: ${k.error}`);
        }
        warn(`snapshot ${result.id.slice(0, 8)} is incomplete: ${skipped.length} path(s) could not be read (tagged "incomplete")`);
      }
      if (result.loss && !r.lossAccepted) {
        if (!process.exitCode) process.exitCode = EXIT.failure;
        warn(describeLoss(result.loss, result.id, result.snapshot.parent));
      } else if (r.lossAccepted) info(ctx.out, `accepted the deletion of ${result.loss!.lost} of ${result.loss!.filesBefore} files: snapshot ${result.id.slice(0, 8)} is the new whole state`);
      const { reportShipments, shipmentJson } = await import("./copy-commands.js");
      if (ctx.out.json) {
        printJson({
          snapshotId: result.id,
          time: result.snapshot.time,
          parent: result.snapshot.parent ?? null,
          tags: result.snapshot.tags,
          skipped,
          ...s,
          suspectLoss: result.loss ?? null,
          lossAccepted: r.lossAccepted,
          ...(r.mirrors.length ? { mirrors: r.mirrors.map(shipmentJson) } : {}),
        });
        reportShipments(ctx, r.mirrors, result.id);
        return;
      }
      info(
        ctx.out,
        table([
          ["snapshot", `${result.id.slice(0, 8)}  ${result.snapshot.time}${result.snapshot.tags.length ? `  [${result.snapshot.tags.join(", ")}]` : ""}`],
          ["files", `${s.files} (${s.filesNew} new, ${s.filesChanged} changed, ${s.filesUnchanged} unchanged)`],
          ["total", formatBytes(s.bytesTotal)],
          ["new data", `${formatBytes(s.bytesNew)} (${formatBytes(s.bytesStored)} stored)`],
          ["duration", formatDuration(s.durationMs)],
        ]),
      );
      reportShipments(ctx, r.mirrors, result.id);
    });

  program
    .command("snapshots")
    .description("list snapshots")
    .option("--tag <tag>", "only snapshots with this tag")
    .option("--host <host>", "only snapshots from this host")
    .addHelpText("after", `\nTimes are shown in UTC and in local time (set by TZ); a time you type without a zone is local.\nEvery host that backs up into the repository is listed (HOST column); --host keeps one.\n\nExamples:\n  $ pi-guard snapshots\n  $ pi-guard snapshots --host laptop\n  $ pi-guard snapshots --json | jq '.[-1].id'`)
    .action(async (opts: { tag?: string; host?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const repo = await ctx.open();
      const wanted = (s: { tags: string[]; host: string }) => (!opts.tag || s.tags.includes(opts.tag)) && (!opts.host || s.host === opts.host);
      if (ctx.out.json) {
        const all = (await repo.listSnapshots()).filter((r) => wanted(r.snapshot));
        for (const bad of repo.unreadableSnapshots) warn(`skipped ${bad.error}; run \`pi-guard check\``);
        await printJsonArray(slices(all, 2000), ({ id, snapshot: s }) => ({
          id,
          shortId: id.slice(0, 8),
          time: s.time,
          localTime: formatLocalTime(new Date(s.time)),
          host: s.host,
          user: s.user,
          tags: s.tags,
          roots: s.roots,
          parent: s.parent ?? null,
          imported: s.imported ?? null,
          skipped: s.skipped ?? [],
          summary: s.summary,
        }));
        return;
      }
      // The table needs only the briefs: 100,000 snapshots list without parsing each in full.
      const all = (await repo.listSnapshotBriefs()).filter((r) => wanted(r.snapshot));
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
      `\nExit code 3 when damage is found. With --all, each target is reported on its own and the exit\ncode is the worst of them (3 damage, 1 a target that cannot be opened or reached).\n\nExamples:\n  $ pi-guard check\n  $ pi-guard check --read-data --json\n  $ pi-guard check --all --read-data    # the repository and every mirror`,
    )
    .action(async (opts: { readData?: boolean; all?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const { runCheck } = await import("../repo/check-run.js");
      const check = async (repo: Awaited<ReturnType<typeof ctx.open>>) => {
        const progress = new Progress(!ctx.out.json && !ctx.out.quiet);
        try {
          return await runCheck(repo, { readData: opts.readData, lockWaitMs: ctx.lockWaitMs, onProgress: (p) => progress.update(`reading packs ${p.packs}/${p.total}`) });
        } finally {
          progress.done();
        }
      };
      const print = (report: Awaited<ReturnType<typeof check>>, prefix: string) => {
        for (const p of report.problems) (p.severity === "error" ? warn : (l: string) => info(ctx.out, l))(`${prefix}${p.severity}: ${p.message}`);
        info(ctx.out, `${prefix}${report.snapshots} snapshots, ${report.packs} packs, ${report.blobs} blobs${opts.readData ? `, ${formatBytes(report.bytesRead)} read` : ""}: ${report.ok ? "no errors" : "DAMAGED"}`);
      };
      if (!opts.all) {
        const report = await check(await ctx.open());
        if (ctx.out.json) printJson(report);
        else print(report, "");
        if (!report.ok) process.exitCode = EXIT.damaged;
        return;
      }
      const { openAt } = await import("./copy-commands.js");
      const { reportError } = await import("./output.js");
      const results: { target: string; ok: boolean; error: string | null; report: unknown }[] = [];
      let code: number = EXIT.ok;
      for (const target of [ctx.config.repo, ...ctx.config.mirrors]) {
        try {
          const report = await check(await openAt(ctx, target));
          results.push({ target, ok: report.ok, error: null, report });
          if (!ctx.out.json) print(report, `${target}: `);
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
      const { listKeys } = await import("../repo/keys.js");
      const keys = await listKeys(repo.target);
      if (ctx.out.json) printJson(keys.map((k) => ({ ...k, current: k.id === repo.keyId })));
      else info(ctx.out, table([["ID", "KIND", "CREATED", "HOST", ""], ...keys.map((k) => [k.id.slice(0, 8), k.kdf === "scrypt" ? "password" : "key file", k.created, k.host, k.id === repo.keyId ? "(current)" : ""])]));
    });
  key
    .command("add")
    .description("add a credential: a new key file, or a password from PI_GUARD_NEW_PASSWORD or a prompt")
    .option("--new-key-file <file>", "create this key file (mode 0600) and let it open the repository")
    .addHelpText("after", `\nExamples:\n  $ pi-guard key add --new-key-file ~/.config/pi-guard/key      # unattended access for a password repo\n  $ PI_GUARD_NEW_PASSWORD=... pi-guard key add`)
    .action(async (opts: { newKeyFile?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const repo = await ctx.open();
      const { addKey } = await import("../repo/keys.js");
      const { createKeyFile } = await import("../config/credentials.js");
      let cred;
      if (opts.newKeyFile) cred = await createKeyFile(opts.newKeyFile);
      else {
        let password = process.env.PI_GUARD_NEW_PASSWORD;
        if (password === undefined && process.stdin.isTTY) password = await promptHidden("new password: ");
        if (!password) throw new RepoError("no new password: set PI_GUARD_NEW_PASSWORD or use --new-key-file", "usage");
        cred = { kind: "password" as const, password, source: "new password" };
      }
      const id = await addKey(repo.target, repo.key, cred);
      if (ctx.out.json) printJson({ id, kind: cred.kind, keyFile: opts.newKeyFile ?? null });
      else info(ctx.out, `added key ${id.slice(0, 8)}${opts.newKeyFile ? ` (key file ${opts.newKeyFile}; keep a copy somewhere safe)` : ""}`);
    });
}

export function registerDoctorCommand(program: Command): void {
  program
    .command("doctor")
    .description("check the setup for ways the backups could be lost with the data")
    .addHelpText(
      "after",
      `
Besides the repository and credentials, doctor looks for the hazards behind the accident
pi-guard exists for: a package.json, node_modules or npm prefix in or beside the agent dir, a
repository or key file inside it, a sessions dir that is a symlink, no watcher running and no
snapshot in the last hour, and session files with a torn last line, glued entries or no header.
It only reads. Each warning or error comes with a one-line fix.

Exit code 1 when a check fails (an error); warnings do not change the exit code.

Examples:
  $ pi-guard doctor
  $ pi-guard doctor --json | jq '.checks[] | select(.status != "ok")'`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = context(cmd);
      const { runDoctor } = await import("../doctor.js");
      const checks = await runDoctor(ctx.config);
      if (ctx.out.json) printJson({ ok: !checks.some((c) => c.status === "error"), checks });
      else info(ctx.out, table(checks.flatMap((c) => [[c.status === "ok" ? "ok" : c.status.toUpperCase(), c.name, c.message], ...(c.fix ? [["", "", `fix: ${c.fix}`]] : [])])));
      if (checks.some((c) => c.status === "error")) process.exitCode = EXIT.failure;
    });
}
