/**
 * What a search run with `warmOnly` throws at the first step a warm search does not take (a
 * catalog or index to bring up to date, a repository to unlock), before that step changes
 * anything. The CLI's plain search (src/cli/search-plain.ts) then hands the command, as its
 * arguments, to the command table, which runs it from the start.
 */
export class NotWarm extends Error {
  override name = "NotWarm";
  /**
   * How many this process has made. Some reads fall back when they fail (a hit's text is left
   * out), so a NotWarm can be caught on its way: searchSessions compares the count instead.
   */
  static made = 0;

  constructor(message: string) {
    super(message);
    NotWarm.made++;
  }
}
