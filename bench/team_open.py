"""Opening a big session on SQLite and on PostgreSQL: bench/big_session.py's figures, run on each store.

Starts a throwaway PostgreSQL (and redis-server, unused here: bench.common.team_services starts the pair) and
runs `bench.big_session.run` twice at the same size: on SQLite in a temporary data directory, then on a fresh
PostgreSQL database. Prints the session page (complete HTML response, the server's share of first paint) and
the JSON twin's first page for the small and the big session on each store, then one JSON line.

    .venv/bin/python -m bench.team_open [--entries 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from bench import big_session
from bench.common import emit_json, print_table, team_services

# big_session also exports the big session and imports the file back: at 100,000 entries the file is larger
# than the default max_import_bytes (64 MiB), so the console processes it starts (they inherit the
# environment) accept up to this much for the run.
IMPORT_BYTES = str(512 * 2**20)


def run(entries: int, repeat: int) -> dict[str, Any]:
    os.environ.setdefault("MCP_CONSOLE_MAX_IMPORT_BYTES", IMPORT_BYTES)
    sqlite = big_session.run(entries, repeat)
    with team_services() as (database_url, _redis_url):
        postgres = big_session.run(entries, repeat, database_url)
    rows = [[f"{store}: {figure}", result["small"][figure], result["big"][figure]]
            for figure in ("page_ms", "json_ms") for store, result in (("SQLite", sqlite), ("PostgreSQL", postgres))]
    print_table(f"opening a session, medians of {repeat}; ms", ["store: figure", f"{big_session.SMALL} entries",
                                                                f"{entries:,} entries"], rows)
    return {"entries": entries, "repeat": repeat, "sqlite": sqlite, "postgresql": postgres}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.team_open", description=__doc__.split("\n")[0])
    p.add_argument("--entries", type=int, default=100_000, help="entries in the big session (default 100000)")
    p.add_argument("--repeat", type=int, default=3, help="interleaved runs per side (default 3)")
    args = p.parse_args(argv)
    if not 1 <= args.entries <= 1_000_000 or not 1 <= args.repeat <= 20:
        p.error("--entries must be 1..1000000 and --repeat 1..20")
    emit_json("team_open", run(args.entries, args.repeat))


if __name__ == "__main__":
    main()
