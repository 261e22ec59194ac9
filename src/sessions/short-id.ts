// Session ids as people read and type them. pi's ids are UUIDv7 (pi 0.73.1 and 1.x): the first
// 8 hex digits are the top of a millisecond timestamp, the same for every session started within
// about 65 s, and the first 12 the same within one millisecond. A fixed 8-character prefix would
// show two sessions under one id. So, as git does with commits, each UUID is shown by the
// shortest prefix, at least 8 characters, that no other id of the catalog starts with; every
// shown id then resolves to its session. An id that is not a UUID (pi 1.x's `--session-id
// ledger-july`, a salvaged `term_…`) is a name the user chose or can recognise: shown whole.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The fewest characters of a UUID shown, whatever the catalog holds. */
export const MIN_SHORT_ID = 8;

function commonPrefix(a: string, b: string): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

/**
 * The short form of each of `ids`, unique among `all` (which includes `ids`; by default `ids`
 * alone). Prefixes are compared case-insensitively, as `resolveSession` matches them, and never
 * end on a dash.
 */
export function shortIds(ids: Iterable<string>, all: Iterable<string> = ids): Map<string, string> {
  const sorted = [...new Set([...all, ...ids].map((id) => id.toLowerCase()))].sort();
  const at = new Map(sorted.map((id, i) => [id, i]));
  const out = new Map<string, string>();
  for (const id of ids) {
    if (!UUID.test(id)) {
      out.set(id, id);
      continue;
    }
    const low = id.toLowerCase();
    const i = at.get(low)!;
    // In sorted order the id sharing the longest prefix with this one is a neighbour.
    const shared = Math.max(i > 0 ? commonPrefix(low, sorted[i - 1]) : 0, i + 1 < sorted.length ? commonPrefix(low, sorted[i + 1]) : 0);
    let len = Math.max(MIN_SHORT_ID, shared + 1);
    if (id[len - 1] === "-") len++;
    out.set(id, id.slice(0, Math.min(len, id.length)));
  }
  return out;
}

/** One id's short form among `all`. */
export function shortId(id: string, all: Iterable<string>): string {
  return shortIds([id], all).get(id)!;
}
