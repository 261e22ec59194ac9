import path from "node:path";
import { RepoError } from "../repo/errors.js";

/** What a repository location string (PI_GUARD_REPO, --repo, "repo" in the config file) names. */
export type RepoLocation =
  | { kind: "local"; path: string }
  | { kind: "s3"; bucket: string; prefix: string }
  /** A restic repository, driven through the restic binary (src/restic/); `repository` is restic's own string. */
  | { kind: "restic"; repository: string };

/** The schemes pi-guard knows, as shown in messages. */
export const KNOWN_LOCATIONS = "s3://bucket/prefix, restic:<restic repository> or a local path";

// S3's bucket naming rules (3-63 characters, lowercase letters, digits, dots, hyphens).
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * Parse a location. Anything that starts like a URL scheme (`restic:/x`, `sftp:host:/x`, `gs://b`)
 * and is not one pi-guard knows is a usage error: silently taking it as a local folder named
 * `restic:` would put the backups somewhere the user did not mean.
 */
export function parseRepoLocation(repo: string): RepoLocation {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(repo)?.[1];
  if (scheme === undefined) return { kind: "local", path: path.resolve(repo) };
  if (scheme.toLowerCase() === "s3" && repo.startsWith("s3://")) {
    const rest = repo.slice("s3://".length);
    const slash = rest.indexOf("/");
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    const prefix = (slash < 0 ? "" : rest.slice(slash + 1)).replace(/^\/+|\/+$/g, "");
    if (!BUCKET.test(bucket)) throw new RepoError(`"${repo}": "${bucket}" is not a valid S3 bucket name (write s3://bucket/prefix)`, "usage");
    if (prefix !== "" && prefix.split("/").some((part) => part === "" || part === "." || part === "..")) {
      throw new RepoError(`"${repo}": the prefix must be plain names separated by single slashes`, "usage");
    }
    return { kind: "s3", bucket, prefix };
  }
  if (scheme === "restic") {
    const repository = repo.slice("restic:".length);
    if (repository.trim() === "") throw new RepoError(`"${repo}": name the restic repository after "restic:" (for example restic:/srv/backup or restic:s3:host/bucket)`, "usage");
    return { kind: "restic", repository };
  }
  throw new RepoError(
    `"${repo}": unknown repository scheme "${scheme}:"; a repository is ${KNOWN_LOCATIONS} (for a local folder whose name has a colon, write ./${repo})`,
    "usage",
  );
}

/** The location in the form Config keeps: local paths absolute, remote ones as written. */
export function normalizeRepoLocation(repo: string): string {
  const loc = parseRepoLocation(repo);
  return loc.kind === "local" ? loc.path : repo;
}

export function isLocalLocation(repo: string): boolean {
  return parseRepoLocation(repo).kind === "local";
}
