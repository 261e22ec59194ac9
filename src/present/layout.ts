// Help text shared by `restore` and `archive`: where pi-guard's own metadata goes (restore/layout.ts decides it).
import { META_ROOT_NAME } from "../config/config.js";

export const META_LAYOUT_HELP = `Into --target, and in an archive, the tree is an agent dir: pi-guard's own metadata (session
tags, the ${META_ROOT_NAME} root) is left out unless --with-meta puts it in .${META_ROOT_NAME}/ at
the top (not something to copy into ~/.pi/agent). In place, it goes back to pi-guard's data dir.`;
