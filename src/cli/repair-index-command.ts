import type { Command } from "commander";
import { context } from "./context.js";
import { info, printJson, table } from "./output.js";

/** `pi-guard repair index`: a subcommand of `repair`, which otherwise repairs a session file. */
export function registerRepairIndexCommand(repair: Command): void {
  repair
    .command("index")
    .description("rebuild the repository's index from the packs' own headers")
    .addHelpText(
      "after",
      `
Use it when \`pi-guard check\` reports a damaged index file or packs that no index names (left by
an interrupted snapshot). Packs that describe themselves are indexed again; objects in data/ that
no index names and that cannot be read are deleted, as are temp files of writers that died. The
new index file is written before the old ones are deleted, so an interrupted repair loses nothing.
Takes the exclusive lock.

Examples:
  $ pi-guard repair index
  $ pi-guard repair index --json`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = context(cmd);
      const repo = await ctx.open();
      const { rebuildIndex } = await import("../library/repository.js");
      const r = await rebuildIndex(repo, { lockWaitMs: ctx.lockWaitMs });
      if (ctx.out.json) {
        printJson(r);
        return;
      }
      const short = (ids: string[]) => ids.map((id) => id.slice(0, 12)).join(", ");
      if (!r.newIndex) {
        if (r.replaced.length) info(ctx.out, `deleted ${r.replaced.length} index file(s) that another index already replaces`);
        info(ctx.out, `the index is sound (${r.indexFiles - r.replaced.length} index files, ${r.packs} packs); nothing to rebuild`);
      }
      else {
        const rows = [
          ["new index", `${r.newIndex.slice(0, 12)}: ${r.packs} packs (${r.packsFromHeaders.length} read from their own headers)`],
          ["replaced", `${r.replaced.length} index file(s)`],
        ];
        if (r.damagedIndexFiles.length) rows.push(["damaged", `${r.damagedIndexFiles.length} index file(s): ${short(r.damagedIndexFiles)}`]);
        if (r.missingPacks.length) rows.push(["missing", `${r.missingPacks.length} pack(s) gone from data/, dropped from the index: ${short(r.missingPacks)}`]);
        info(ctx.out, table(rows));
      }
      for (const p of r.deletedPacks) info(ctx.out, `deleted ${p.key}: ${p.error}`);
      if (r.tempFilesDeleted) info(ctx.out, `deleted ${r.tempFilesDeleted} temp file(s) of interrupted writers`);
      if (r.listing?.damaged.length) info(ctx.out, `replaced ${r.listing.damaged.length} damaged snapshot listing(s): ${short(r.listing.damaged)}`);
    });
}
