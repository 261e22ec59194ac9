import { appendFileSync } from "node:fs";

export async function load(url, context, next) {
  appendFileSync(process.env.LOADED_FILES_OUT, `${url}\n`);
  return next(url, context);
}
