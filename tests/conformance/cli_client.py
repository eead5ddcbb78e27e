"""The command line, `mcp-console check`, as the client under `@modelcontextprotocol/conformance client` for the
OAuth scenarios: this only turns the runner's environment into the options a person would type, then runs it.

- the revision (MCP_CONFORMANCE_PROTOCOL_VERSION) → `--era modern|legacy`;
- the scenario's context (MCP_CONFORMANCE_CONTEXT: `client_id`, `client_secret` of a pre-registered client) →
  `--client-id` and, for the secret, MCP_CONSOLE_CLIENT_SECRET (kept out of the process list, as a person would);
- `--oauth follow`: the mock authorization server redirects at once, no person is asked;
- `--client-metadata-url`: the fixed client id metadata document URL the runner expects where CIMD is offered.
Then `check --call-tools all` lists the tools and calls each, as the scenarios ask.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

CIMD_URL = "https://conformance-test.local/client-metadata.json"


def argv_for(url: str, environ: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    console = shutil.which("mcp-console") or str(Path(sys.executable).with_name("mcp-console"))
    version = environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2026-07-28")
    era = "modern" if version >= "2026-07-28" else "legacy"
    argv = [console, "check", "--era", era, "--call-tools", "all", "--fail-on", "error", "--oauth", "follow",
            "--client-metadata-url", CIMD_URL, "--timeout", "15"]
    env = dict(environ)
    try:
        context = json.loads(environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    except ValueError:
        context = {}
    if isinstance(context, dict) and isinstance(context.get("client_id"), str):
        argv += ["--client-id", context["client_id"]]
        if isinstance(context.get("client_secret"), str):
            env["MCP_CONSOLE_CLIENT_SECRET"] = context["client_secret"]
    return [*argv, url], env


def main() -> None:
    argv, env = argv_for(sys.argv[-1], dict(os.environ))
    os.execve(argv[0], argv, env)


if __name__ == "__main__":
    main()
