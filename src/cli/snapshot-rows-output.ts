// `snapshots --json` from its rendered text (src/repo/rendered-listing.ts): the bytes
// printJsonArray prints for those records, copied into a 1 MiB buffer with the local time (which
// depends on TZ) written in at each record's cut. Nothing is allocated per record: at 100,000
// records, the garbage of small buffers and strings was most of a second.
import { LOCAL_TIME_ROOM, writeLocalTime } from "../present/time.js";
import type { RenderedListing } from "../repo/rendered-listing.js";

const OUT = 1 << 20;

export async function printRenderedSnapshots(listing: RenderedListing): Promise<void> {
  let out = Buffer.allocUnsafe(OUT);
  let used = 0;
  let blocked = false;
  const flush = () => {
    if (!used) return;
    if (!process.stdout.write(out.subarray(0, used))) blocked = true;
    // Written at once (a file, or a pipe on Linux): the buffer is free again. A fresh buffer per
    // MiB of 70 would make V8 collect its heap several times over.
    if (process.stdout.writableLength) out = Buffer.allocUnsafe(OUT);
    used = 0;
  };
  const put = (bytes: Buffer, from: number, to: number) => {
    while (from < to) {
      if (used === OUT) flush();
      const n = bytes.copy(out, used, from, Math.min(to, from + OUT - used));
      used += n;
      from += n;
    }
  };
  const { count, cuts, times } = listing;
  const date = new Date(0);
  let row = 0;
  let pos = 0; // where in the text `piece` starts
  for await (const piece of listing.text()) {
    let from = 0;
    for (; row < count && cuts[row] <= pos + piece.length; row++) {
      put(piece, from, cuts[row] - pos);
      from = cuts[row] - pos;
      if (OUT - used < LOCAL_TIME_ROOM) flush();
      date.setTime(times[row]);
      used = writeLocalTime(date, out, used);
    }
    put(piece, from, piece.length);
    pos += piece.length;
    if (blocked) {
      blocked = false;
      await new Promise<void>((resolve) => process.stdout.once("drain", resolve));
    }
  }
  flush();
  if (blocked) await new Promise<void>((resolve) => process.stdout.once("drain", resolve));
}
