/**
 * Times as the CLI shows them: in local time (set by TZ), beside the UTC they are stored in.
 * The formatter still lives with the time parser in src/restore/select.ts, which is being changed
 * in another branch right now; this is the name the CLI's presentation takes it by.
 */
export { formatLocalTime, LOCAL_TIME_NOTE } from "../restore/select.js";
