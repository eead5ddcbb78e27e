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

.venv/bin/ruff check app tests bench
.venv/bin/mypy app
.venv/bin/python -m pytest -q "$@"
