/** Errors a user can act on. The CLI prints `message` as one line and exits non-zero; no stack trace. */
export type RepoErrorKind =
  | "not-found"
  | "exists"
  | "wrong-password"
  | "no-password"
  | "corrupt"
  /** A file the user pointed us at is unusable (not a damaged repository). */
  | "input"
  | "locked"
  | "usage"
  | "io";

export class RepoError extends Error {
  constructor(
    message: string,
    readonly kind: RepoErrorKind,
  ) {
    super(message);
    this.name = "RepoError";
  }
}

export function isRepoError(err: unknown): err is RepoError {
  return err instanceof RepoError;
}
