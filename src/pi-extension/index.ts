/**
 * pi-guard's pi extension (pi 1.x; docs/EXTENSION.md). Loaded by pi from pi-guard's package
 * (`pi-guard pi install-extension`, or `pi -e <pi-guard>/dist/pi-extension/index.js`).
 *
 * It never hurts pi: every handler catches everything (errors go to
 * $XDG_STATE_HOME/pi-guard/pi-extension.log), message_update, message_end and the tool events only
 * note what they saw and return, and no handler waits on the watcher or the repository. Nothing starts in the
 * factory itself: pi also loads extensions for commands that run no session.
 */
import os from "node:os";
import { WatchLog } from "../watch/log.js";
import { Guard, type PiContext } from "./guard.js";
import { guardPaths } from "./protection.js";
import type { PartialMessage } from "./journal.js";

/** The part of pi's ExtensionAPI used here. */
interface PiApi {
  on(event: string, handler: (event: Record<string, unknown>, ctx: PiContext) => unknown): unknown;
}

const DEFAULT_FLUSH_MS = 200;

/** PI_GUARD_JOURNAL_FLUSH_MS: how often at most the in-flight journal is written (20 to 10000 ms). */
function flushMs(env: NodeJS.ProcessEnv): number {
  const n = Number(env.PI_GUARD_JOURNAL_FLUSH_MS);
  return Number.isSafeInteger(n) && n >= 20 && n <= 10_000 ? n : DEFAULT_FLUSH_MS;
}

export default function piGuardExtension(pi: PiApi): void {
  let guard: Guard | undefined;
  let log: WatchLog | undefined;
  const get = (): Guard => {
    if (!guard) {
      const paths = guardPaths();
      log = new WatchLog({ file: paths.log, maxBytes: 1024 * 1024, keep: 1 });
      guard = new Guard(paths, os.hostname(), log, flushMs(process.env));
    }
    return guard;
  };
  const safe = (where: string, work: (g: Guard) => unknown): void => {
    try {
      const r = work(get()) as Promise<unknown> | undefined;
      if (r && typeof r.then === "function") r.then(undefined, (err: unknown) => guard?.error(where, err));
    } catch (err) {
      try {
        guard?.error(where, err);
      } catch {
        // nothing may reach pi
      }
    }
  };
  const message = (e: Record<string, unknown>) => e?.message as PartialMessage;
  pi.on("session_start", (_e, ctx) => safe("session_start", (g) => g.sessionStart(ctx)));
  pi.on("message_start", (e, ctx) => safe("message_start", (g) => g.messageStart(message(e), ctx)));
  pi.on("message_update", (e) => safe("message_update", (g) => g.messageUpdate(message(e))));
  pi.on("message_end", (e) => safe("message_end", (g) => g.messageEnd(message(e))));
  pi.on("tool_execution_start", (e) => safe("tool_execution_start", (g) => g.toolStart(e?.toolCallId)));
  pi.on("tool_execution_update", (e) => safe("tool_execution_update", (g) => g.toolUpdate(e?.toolCallId, e?.toolName, e?.partialResult)));
  pi.on("turn_end", (_e, ctx) => safe("turn_end", (g) => g.persisted("turn_end", ctx)));
  pi.on("agent_settled", (_e, ctx) => safe("agent_settled", (g) => g.persisted("agent_settled", ctx)));
  // pi awaits this one before it exits: the journal of an unfinished answer and the last request
  // must be on disk by then. Bounded: a couple of small file writes.
  pi.on("session_shutdown", async (_e, ctx) => {
    try {
      await get().shutdown(ctx);
      await log?.close();
    } catch (err) {
      try {
        guard?.error("session_shutdown", err);
      } catch {
        // nothing may reach pi
      }
    }
  });
}
