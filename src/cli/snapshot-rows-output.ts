// `snapshots --json` from cached rows (src/repo/snapshot-rows.ts): the same bytes printJsonArray
// prints for those records, written a slice at a time as buffers, with only the local time made
// here (it depends on TZ).
import { formatLocalTime } from "../present/time.js";
import type { SnapshotRow } from "../repo/snapshot-rows.js";

const SLICE = 2000;

export async function printSnapshotRows(rows: readonly SnapshotRow[]): Promise<void> {
  const write = async (data: Buffer) => {
    if (!process.stdout.write(data)) await new Promise<void>((resolve) => process.stdout.once("drain", resolve));
  };
  if (!rows.length) return write(Buffer.from("[]\n"));
  const open = Buffer.from("[\n");
  const comma = Buffer.from(",\n");
  for (let start = 0; start < rows.length; start += SLICE) {
    const parts: Buffer[] = [];
    for (let i = start; i < Math.min(rows.length, start + SLICE); i++) {
      const row = rows[i];
      parts.push(i === 0 ? open : comma, row.before, Buffer.from(formatLocalTime(new Date(row.time))), row.after);
    }
    await write(Buffer.concat(parts));
  }
  await write(Buffer.from("\n]\n"));
}
