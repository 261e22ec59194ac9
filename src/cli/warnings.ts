import { describeRetry, reportRetriesTo } from "../targets/retry-report.js";
import { warn } from "./output.js";

/**
 * The AWS SDK warns on Node 20 that its releases after January 2027 will need Node 22. Users of
 * pi-guard cannot act on that (pi-guard pins the SDK), so the CLI drops exactly that warning and
 * lets every other one through.
 */
export function hideSdkNodeVersionWarning(): void {
  const emit = process.emitWarning as (...args: unknown[]) => void;
  (process as { emitWarning: unknown }).emitWarning = (warning: unknown, ...rest: unknown[]) => {
    const text = typeof warning === "string" ? warning : (warning as Error | undefined)?.message ?? "";
    const type = typeof rest[0] === "string" ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
    if (text.startsWith("NodeVersionSupportWarning") || type === "NodeVersionSupportWarning") return;
    emit.call(process, warning, ...rest);
  };
}

/** What every command of this process does with warnings: the SDK's is dropped, and a storage outage being waited out is one line per wait on stderr (never in --json stdout). */
export function routeProcessWarnings(): void {
  hideSdkNodeVersionWarning();
  reportRetriesTo((r) => warn(describeRetry(r)));
}
