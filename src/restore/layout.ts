// Where each root of a snapshot lands when it is restored into a folder of the user's choice
// (`restore --target`) or written into an archive: the agent dir at the top, any other root of
// pi's (a sessions dir moved out of it) in `.<root>/`, and pi-guard's own metadata root only when
// asked. That tree is what a user copies back into ~/.pi/agent, so by default it holds nothing
// but pi's files; an in-place restore puts pi-guard's metadata back into its own place instead.
import path from "node:path";
import { META_ROOT_NAME } from "../config/config.js";
import { isSafeRootName } from "./safe-path.js";

export interface TreeLayout {
  /** Also pi-guard's own metadata root (session tags), as `.pi-guard-meta/`. */
  withMeta?: boolean;
}

/**
 * The folder of a root inside the tree (relative, "" for the agent dir), undefined for a root the
 * tree leaves out (pi-guard's metadata without withMeta), or "unsafe" for a root name that is not
 * one plain component (the snapshot is untrusted).
 */
export function rootFolder(root: string, layout: TreeLayout): string | undefined | "unsafe" {
  if (root === "agent") return "";
  if (!isSafeRootName(root)) return "unsafe";
  if (root === META_ROOT_NAME && !layout.withMeta) return undefined;
  return `.${root}`;
}

/** rootFolder as an absolute folder under `targetDir`. */
export function targetRootDir(root: string, targetDir: string, layout: TreeLayout): string | undefined | "unsafe" {
  const folder = rootFolder(root, layout);
  return folder === undefined || folder === "unsafe" ? folder : path.resolve(targetDir, folder);
}
