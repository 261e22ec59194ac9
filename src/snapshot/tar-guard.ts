// Which tar entries an import accepts. An archive is hostile input: a name that climbs out of the
// agent dir, a link, a device, or a file placed under an earlier symlink would later make restore
// write somewhere else. node-tar's Parser hands names over as they are in the header (`../x` and
// `/abs` included; only Unpack strips them), so every check is ours.

/** Entry types whose content or meaning is plain data in the agent dir. */
const FILE_TYPES = new Set(["File", "OldFile", "ContiguousFile"]);

const TYPE_REASONS: Record<string, string> = {
  Link: "is a hard link",
  SymbolicLink: "",
  CharacterDevice: "is a character device",
  BlockDevice: "is a block device",
  FIFO: "is a fifo",
};

export interface TarEntryHead {
  type: string;
  path: string;
  linkpath?: string;
}

/** `./a/b/` → `a/b`; the archive root (`.`, `./`) → "". Other oddities are left for `check`. */
export function normalizeTarPath(p: string): string {
  return p.replace(/^(\.\/)+/, "").replace(/\/+$/, "").replace(/^\.$/, "");
}

/** A name safe to print on one line, whatever bytes it holds. */
export function showName(p: string): string {
  return JSON.stringify(p);
}

/**
 * Checks entries in archive order and remembers what it saw, so that it can refuse a file under an
 * earlier symlink, a symlink over a folder earlier entries used, and a name given twice (a later
 * duplicate silently replaces the earlier one when extracted).
 */
export class TarEntryGuard {
  private readonly seen = new Set<string>();
  /** Symlinks and files: nothing may lie under them. */
  private readonly leaves = new Map<string, string>();
  private readonly folders = new Set<string>();

  /** Why `entry` is refused, or undefined when it is safe. */
  check(entry: TarEntryHead): string | undefined {
    const raw = entry.path;
    if (raw.includes("\0")) return "has a NUL byte in its name";
    if (raw.includes("\uFFFD")) return "has a name that is not valid UTF-8";
    if (raw.startsWith("/")) return "is an absolute path";
    const rel = normalizeTarPath(raw);
    const typeReason = TYPE_REASONS[entry.type];
    if (typeReason) return `${typeReason}${entry.linkpath ? ` (to ${showName(entry.linkpath)})` : ""}`;
    if (typeReason === undefined && !FILE_TYPES.has(entry.type) && entry.type !== "Directory") {
      return `has an entry type pi-guard does not import (${entry.type})`;
    }
    if (rel === "") return entry.type === "Directory" ? undefined : "has an empty name";
    const parts = rel.split("/");
    if (parts.includes("..")) return 'has a ".." component';
    if (parts.includes("")) return "has an empty component (//)";
    if (parts.includes(".")) return 'has a "." component';
    // No file system here takes a longer name: a restore could never write it.
    if (parts.some((p) => Buffer.byteLength(p) > 255)) return "has a name component longer than 255 bytes";
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join("/");
      const leaf = this.leaves.get(parent);
      if (leaf) return `lies under ${showName(parent)}, which the archive made a ${leaf === "SymbolicLink" ? "symlink" : "file"}`;
    }
    if (this.seen.has(rel)) return "appears twice in the archive";
    const isDir = entry.type === "Directory";
    if (!isDir && this.folders.has(rel)) return "is not a folder, but earlier entries lie under it";
    this.seen.add(rel);
    if (!isDir) this.leaves.set(rel, entry.type);
    for (let i = 1; i < parts.length; i++) this.folders.add(parts.slice(0, i).join("/"));
    return undefined;
  }
}
