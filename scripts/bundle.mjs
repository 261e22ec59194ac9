// Bundles the compiled CLI (dist/src, from tsc) into dist/cli/: the command-line entry, the seal
// worker, the library entry (index.js) and shared chunks. A short command then loads a few files instead of ~60 modules, which
// is a measurable part of its start-up. Other dependencies stay in node_modules (several are native);
// lazy imports stay lazy (code splitting). Run by `npm run build` after tsc.
import { build } from "esbuild";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const pkg = JSON.parse(readFileSync(`${root}package.json`, "utf8"));
const outdir = `${root}dist/cli`;
const BUNDLED = new Set(["@aws-sdk/client-s3", "@aws-sdk/lib-storage", "commander"]);

// commander is bundled (pure JS): loading its seven CommonJS files from node_modules cost every
// command their resolution and compilation. It requires child_process at its top only to run
// executable subcommands, which pi-guard has none of, and child_process pulls in net and dgram:
// the require is deferred to the spawn. An upgrade that changes the line fails the build here.
const lazyChildProcess = {
  name: "commander-lazy-child-process",
  setup(b) {
    b.onLoad({ filter: /[\\/]commander[\\/]lib[\\/]command\.js$/ }, (args) => {
      const line = "const childProcess = require('node:child_process');";
      const source = readFileSync(args.path, "utf8");
      if (!source.includes(line)) throw new Error(`${args.path}: no "${line}" to defer`);
      const lazy = "const childProcess = { spawn: (...a) => require('node:child_process').spawn(...a) };";
      return { contents: source.replace(line, lazy), loader: "js" };
    });
  },
};
rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  // bin/pi-guard.js runs start.js, which loads main.js (commander and the command table) unless the
  // command is a plain snapshot (src/cli/start.ts).
  // The workers are entries of their own: SealPool and ParsePool start them from the file next to their chunk.
  // The library API (src/index.ts, package.json "exports") shares the CLI's chunks: one copy of
  // the code in the package, and its types are tsc's declarations in dist/types.
  entryPoints: { start: "dist/src/cli/start.js", main: "dist/src/cli/main.js", "seal-worker": "dist/src/repo/seal-worker.js", "parse-worker": "dist/src/sessions/parse-worker.js", index: "dist/src/index.js" },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // The AWS SDK is bundled too, from its ES module builds ("module"): importing its CommonJS
  // packages from node_modules took about 85 ms, its bundled chunks about 45 ms (a short S3
  // command such as `snapshots` went from 0.27 to 0.22 s).
  external: Object.keys(pkg.dependencies).filter((d) => !BUNDLED.has(d)),
  mainFields: ["module", "main"],
  plugins: [lazyChildProcess],
  chunkNames: "chunk-[hash]",
  logLevel: "warning",
});

// A bundled CommonJS package (commander) requires node's built-ins at run time through esbuild's
// __require, which needs a `require` where it is defined, and an ES module has none. It is given
// one there only (a banner in every chunk cost a createRequire per file loaded, ~1.5 ms a search).
const helpers = readdirSync(outdir).filter((f) => f.endsWith(".js") && readFileSync(`${outdir}/${f}`, "utf8").includes("var __require = "));
if (helpers.length === 0) throw new Error("bundle: no chunk defines __require, yet commander is bundled");
for (const f of helpers) {
  const text = readFileSync(`${outdir}/${f}`, "utf8");
  writeFileSync(`${outdir}/${f}`, `import { createRequire as __pgRequire } from "node:module"; const require = __pgRequire(import.meta.url);\n${text}`);
}

// The pi extension (src/pi-extension/) runs inside pi, on pi's Node: one self-contained file of
// node built-ins only, so pi loads it without resolving pi-guard's dependencies.
rmSync(`${root}dist/pi-extension`, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { index: "dist/src/pi-extension/index.js" },
  outdir: `${root}dist/pi-extension`,
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  logLevel: "warning",
});
