// Bundles the compiled CLI (dist/src, from tsc) into dist/cli/: the command-line entry (start.js),
// the plain snapshot's hand-off (snapshot-plain.js) and the warm search (search-plain.js), each one
// file; then the command table
// (main.js), the workers, the library entry (index.js) and the entries those two files import
// lazily, with shared chunks. A short command then loads a few files instead of ~60 modules, which
// is a measurable part of its start-up. Other dependencies stay in node_modules (several are
// native); lazy imports stay lazy (code splitting). Run by `npm run build` after tsc.
import { build } from "esbuild";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
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
const external = Object.keys(pkg.dependencies).filter((d) => !BUNDLED.has(d));
rmSync(outdir, { recursive: true, force: true });

// start.js (what bin/pi-guard.js runs: argv and nothing else) and snapshot-plain.js (a plain
// `pi-guard snapshot` until the watcher answers) are files of their own, built without splitting:
// a snapshot handed to a running watcher loads these two instead of 29 split chunks (each file
// costs the ESM loader a resolution and a read: 18 ms of CPU in all). Their own dynamic imports
// (HAND_OFF) are bundled in; every other one (the full command table, the direct snapshot, the
// engine) stays a dynamic import of an entry of the split build, so that code is in the package
// once and a direct snapshot runs on the same module instances as every other command. A dynamic
// import added to the hand-off path and not listed here costs a file more, nothing else.
const OWN = { start: "cli/start.js", "snapshot-plain": "cli/snapshot-plain.js", "search-plain": "cli/search-plain.js" };
const HAND_OFF = new Set(["watch/socket.js", "engine/open.js", "watch/state.js", "host.js", "engine/verdict.js", "agents/pi/paths.js"]);
const lazy = new Map(); // entry name -> compiled source, for the split build
const src = `${root}dist/src/`;
const relative = (a) => path.relative(src, path.resolve(a.resolveDir, a.path));
// How every file of its own is built: one ES module for node, dependencies left in node_modules.
const single = { absWorkingDir: root, outdir, bundle: true, format: "esm", platform: "node", target: "node20", external, logLevel: "warning" };
await build({
  ...single,
  entryPoints: Object.fromEntries(Object.entries(OWN).filter(([name]) => name !== "search-plain").map(([name, file]) => [name, `dist/src/${file}`])),
  plugins: [
    {
      name: "lazy-entries",
      setup(b) {
        b.onResolve({ filter: /^\./ }, (a) => {
          if (a.kind !== "dynamic-import") return undefined;
          const file = relative(a);
          if (HAND_OFF.has(file)) return undefined;
          const own = Object.entries(OWN).find(([, f]) => f === file);
          if (own) return { path: `./${own[0]}.js`, external: true };
          // cli/main.js stays dist/cli/main.js (tests and the bench import it).
          const name = file.replace(/\.js$/, "").replace(/^cli\//, "").replaceAll("/", "-");
          lazy.set(name, `dist/src/${file}`);
          return { path: `./${name}.js`, external: true };
        });
      },
    },
  ],
});

// search-plain.js (a plain `sessions search <query>`) runs a warm search wholly by itself and
// hands anything else to main.js as strings (src/cli/search-plain.ts). So, unlike the two above,
// it shares no module with the split build: the dynamic imports of the warm path (WARM) are
// bundled in, main.js stays the one file of the split build it imports, and every other dynamic
// import (the parse workers, the index build, the repository, the AWS SDK, restic) becomes a module
// that throws, which the plain search takes as "not warm" and hands over. The build fails if the
// output imports any other file of dist/cli, or if WARM names a file the path no longer imports.
// A dynamic import added to the warm path and not listed here makes every search that reaches it
// a hand-over: slower, never different.
const WARM = new Set([
  "library/sessions.js",
  "library/search.js",
  "library/catalog.js",
  "engine/open.js",
  "engine/native.js",
  "sessions/catalog.js",
  "sessions/source.js",
  "targets/open.js",
  "sessions/query.js",
  "sessions/search-index.js",
  "sessions/search-query.js",
  "sessions/short-id.js",
  "sessions/read.js",
  "sessions/search-text.js",
  // Another agent detected (its sessions' stat are in the catalog's fingerprint), or a hit in its session.
  "sessions/agent-sessions.js",
  "agents/registry.js",
  "agents/files.js",
  // --since, --until, --date.
  "sessions/time-filter.js",
]);
const HAND_OVER = "cli/main.js";
const warmSeen = new Set();
const searchPlain = await build({
  ...single,
  entryPoints: { "search-plain": `dist/src/${OWN["search-plain"]}` },
  metafile: true,
  plugins: [
    {
      name: "warm-path-only",
      setup(b) {
        b.onResolve({ filter: /.*/ }, (a) => {
          if (a.kind !== "dynamic-import") return undefined;
          const file = a.path.startsWith(".") ? relative(a) : a.path;
          if (file === HAND_OVER) return { path: "./main.js", external: true };
          if (WARM.has(file)) {
            warmSeen.add(file);
            return undefined;
          }
          // A package left in node_modules is the same module for both copies: not this file's own code.
          if (!a.path.startsWith(".") && !BUNDLED.has(a.path)) return undefined;
          return { path: file, namespace: "not-warm" };
        });
        b.onLoad({ filter: /.*/, namespace: "not-warm" }, (a) => ({
          contents: `import { NotWarm } from ${JSON.stringify(`${src}sessions/not-warm.js`)}; throw new NotWarm(${JSON.stringify(`${a.path} is not on the warm search path`)});`,
          loader: "js",
          resolveDir: src,
        }));
      },
    },
  ],
});
const stale = [...WARM].filter((f) => !warmSeen.has(f));
if (stale.length) throw new Error(`bundle: search-plain's WARM names files the warm path does not import: ${stale.join(", ")}`);
for (const [file, out] of Object.entries(searchPlain.metafile.outputs)) {
  const ours = out.imports.filter((i) => i.external && /^\.\.?\//.test(i.path)).map((i) => i.path);
  if (ours.join() !== "./main.js") throw new Error(`bundle: ${file} must import no file of dist/cli but ./main.js (the hand-over), yet imports ${ours.join(", ") || "none"}`);
}

await build({
  absWorkingDir: root,
  // main.js is the command table (commander and every command), for anything but a plain snapshot.
  // The workers are entries of their own: SealPool and ParsePool start them from the file next to their chunk.
  // The library API (src/index.ts, package.json "exports") shares the CLI's chunks: one copy of
  // the code in the package, and its types are tsc's declarations in dist/types.
  entryPoints: { ...Object.fromEntries(lazy), main: "dist/src/cli/main.js", "seal-worker": "dist/src/repo/seal-worker.js", "parse-worker": "dist/src/sessions/parse-worker.js", index: "dist/src/index.js" },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // The AWS SDK is bundled too, from its ES module builds ("module"): importing its CommonJS
  // packages from node_modules took about 85 ms, its bundled chunks about 45 ms (a short S3
  // command such as `snapshots` went from 0.27 to 0.22 s).
  external,
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
