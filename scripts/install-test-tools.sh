#!/usr/bin/env bash
# Installs the programs the tests run besides this checkout's own dependencies, into a cache folder
# outside the repository ($PI_GUARD_TEST_TOOLS, default ~/.cache/pi-guard-test-tools), never as a
# dependency of the project. Idempotent: what is there already is kept. .ci/run calls it.
#   node-<floor>/  the oldest Node that package.json's "engines" admits (test/cli/node-floor.test.ts)
set -euo pipefail
cd "$(dirname "$0")/.."
tools="${PI_GUARD_TEST_TOOLS:-$HOME/.cache/pi-guard-test-tools}"
mkdir -p "$tools"

floor=$(node -p 'require("./package.json").engines.node.replace(/^>=\s*/, "").split(".").concat(["0", "0"]).slice(0, 3).join(".")')
if [ "$("$tools/node-$floor/node_modules/.bin/node" --version 2>/dev/null)" != "v$floor" ]; then
  rm -rf "$tools/node-$floor"
  npm install --no-save --no-audit --no-fund --prefix "$tools/node-$floor" "node@$floor" >/dev/null
  echo "installed Node $floor into $tools/node-$floor"
fi
