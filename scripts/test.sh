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

# The real @modelcontextprotocol/server-everything for tests/integration/test_server_everything.py (pinned; the
# tests skip with a reason when it is absent, e.g. on a machine without Node or without the registry).
SERVER_EVERYTHING_VERSION=2026.8.31
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 \
   && [ ! -d .cache/npm/node_modules/@modelcontextprotocol/server-everything ]; then
  npm install --prefix .cache/npm --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server-everything@${SERVER_EVERYTHING_VERSION}" \
    || echo "npm install of server-everything failed; its tests will skip" >&2
fi

.venv/bin/ruff check app tests bench
.venv/bin/mypy app
.venv/bin/python -m pytest -q "$@"
