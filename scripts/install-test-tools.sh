#!/usr/bin/env bash
# Installs the programs the tests run besides this checkout's own dependencies, into a cache folder
# outside the repository ($PI_GUARD_TEST_TOOLS, default ~/.cache/pi-guard-test-tools), never as a
# dependency of the project. Idempotent: what is there already is kept. .ci/run calls it.
#   node-<floor>/  the oldest Node that package.json's "engines" admits (test/cli/node-floor.test.ts)
#   node-22.23.3/  the Node pi 1.x needs (>= 22.19), which the tests run pi 1.6.0 on
#   pi-1.6.0/      pi 1.6.0 (@earendil-works/pi-coding-agent and pi-ai), pinned, driven as a child process
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

# pi 1.x: its own Node (never this project's), and the pinned pi packages beside it.
node22=22.23.3
if [ "$("$tools/node-$node22/node_modules/.bin/node" --version 2>/dev/null)" != "v$node22" ]; then
  rm -rf "$tools/node-$node22"
  npm install --no-save --no-audit --no-fund --prefix "$tools/node-$node22" "node@$node22" >/dev/null
  echo "installed Node $node22 into $tools/node-$node22"
fi
pi1=1.6.0
if [ "$(node -p "require('$tools/pi-$pi1/node_modules/@earendil-works/pi-coding-agent/package.json').version" 2>/dev/null)" != "$pi1" ]; then
  rm -rf "$tools/pi-$pi1"
  npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tools/pi-$pi1" \
    "@earendil-works/pi-coding-agent@$pi1" "@earendil-works/pi-ai@$pi1" >/dev/null
  echo "installed pi $pi1 into $tools/pi-$pi1"
fi

# opencode (agent tests, issue 19): the npm wrapper plus its native binary from an optional dependency.
opencode=1.18.33
if [ "$(node -p "require('$tools/agent-opencode-$opencode/node_modules/opencode-ai/package.json').version" 2>/dev/null)" != "$opencode" ]; then
  rm -rf "$tools/agent-opencode-$opencode"
  npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tools/agent-opencode-$opencode" "opencode-ai@$opencode" >/dev/null
  echo "installed opencode $opencode into $tools/agent-opencode-$opencode"
fi

# Gemini CLI (agent tests, issue 19): plain JS, run on the Node the tests run on.
gemini=0.61.0
if [ "$(node -p "require('$tools/agent-gemini-$gemini/node_modules/@google/gemini-cli/package.json').version" 2>/dev/null)" != "$gemini" ]; then
  rm -rf "$tools/agent-gemini-$gemini"
  npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tools/agent-gemini-$gemini" "@google/gemini-cli@$gemini" >/dev/null
  echo "installed Gemini CLI $gemini into $tools/agent-gemini-$gemini"
fi

# Claude Code (agent tests, issue 19): the npm wrapper's postinstall links the native binary from an
# optional dependency (@anthropic-ai/claude-code-linux-x64); the check runs it, so a missing binary shows.
claude=2.1.328
if [ "$("$tools/agent-claude-$claude/node_modules/@anthropic-ai/claude-code-linux-x64/claude" --version 2>/dev/null | cut -d' ' -f1)" != "$claude" ]; then
  rm -rf "$tools/agent-claude-$claude"
  npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tools/agent-claude-$claude" "@anthropic-ai/claude-code@$claude" >/dev/null
  echo "installed Claude Code $claude into $tools/agent-claude-$claude"
fi

# Codex CLI (agent tests, issue 19): a musl-static binary in an optional dependency (@openai/codex-linux-x64).
codex=0.169.0
if [ "$("$tools/agent-codex-$codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex" --version 2>/dev/null | cut -d' ' -f2)" != "$codex" ]; then
  rm -rf "$tools/agent-codex-$codex"
  npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tools/agent-codex-$codex" "@openai/codex@$codex" >/dev/null
  echo "installed Codex CLI $codex into $tools/agent-codex-$codex"
fi
