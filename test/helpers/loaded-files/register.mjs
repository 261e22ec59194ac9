// Preloaded (`node --import`) into a CLI process: records the URL of every ES module it loads in
// $LOADED_FILES_OUT, one a line (what a command's start-up costs grows with their number).
import { register } from "node:module";

register("./hooks.mjs", import.meta.url);
