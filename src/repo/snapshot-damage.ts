// Damaged snapshot objects as the commands that list snapshots report them. A module of its own,
// so that restore's snapshot choice, which every command loads, does not load the repository.
import { RepoError } from "./errors.js";

/**
 * What a listing that found snapshot objects but could read none of them means: damage (exit 3).
 * Never "no snapshots yet", which would invite starting over on top of a repository that only
 * needs healing. `mirror` names the copy to heal from, when one is configured.
 */
export function allSnapshotsDamaged(unreadable: readonly { id: string; error: string }[], where: { location?: string; mirror?: string } = {}): RepoError {
  const n = unreadable.length;
  const which = n === 1 ? "the only snapshot object is damaged" : `all ${n} snapshot objects are damaged`;
  const to = where.location ?? "<this repository>";
  const heal = where.mirror ? `\`pi-guard repair --from ${where.mirror} --to ${to}\` heals ${n === 1 ? "it" : "them"} from the mirror` : `\`pi-guard repair --from <another copy> --to ${to}\` heals ${n === 1 ? "it" : "them"} from a mirror`;
  return new RepoError(`${which} (${unreadable[0]?.error ?? "unreadable"}${n > 1 ? ", …" : ""}): this is damage, not an empty repository; \`pi-guard check\` names it, ${heal}`, "corrupt");
}

/**
 * The damage a listing of `listed` readable snapshots means, with `unreadable` ones beside them,
 * in the repository and mirrors the config names; undefined when there is none to report.
 */
export function listingDamage(listed: number, unreadable: readonly { id: string; error: string }[], config: { repo: string; mirrors: readonly string[] }): RepoError | undefined {
  return listed === 0 && unreadable.length ? allSnapshotsDamaged(unreadable, { location: config.repo, mirror: config.mirrors[0] }) : undefined;
}
