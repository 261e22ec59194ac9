// Bundles the compiled CLI (dist/src, from tsc) into dist/cli/: the command-line entry, the seal
// worker and shared chunks. A short command then loads a few files instead of ~60 modules, which
// is a measurable part of its start-up. Dependencies stay in node_modules (several are native);
// lazy imports stay lazy (code splitting). Run by `npm run build` after tsc.
import { build } from "esbuild";
import { readFileSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const pkg = JSON.parse(readFileSync(`${root}package.json`, "utf8"));
const outdir = `${root}dist/cli`;
rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  // The worker is an entry of its own: SealPool starts it from the file next to its own chunk.
  entryPoints: { main: "dist/src/cli/main.js", "seal-worker": "dist/src/repo/seal-worker.js" },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  external: Object.keys(pkg.dependencies),
  chunkNames: "chunk-[hash]",
  logLevel: "warning",
});
