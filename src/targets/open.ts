import type { Config } from "../config/config.js";
import { RepoError } from "../repo/errors.js";
import { LocalTarget } from "./local.js";
import type { Target } from "./target.js";

/** The storage a config's repository location names. */
export function openTarget(config: Pick<Config, "repo">): Target {
  if (config.repo.startsWith("s3://")) {
    throw new RepoError("S3 repositories are not supported by this version yet; use a local path", "usage");
  }
  return new LocalTarget(config.repo);
}
