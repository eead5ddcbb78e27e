"""A small fastmcp server, as a server author writes one in their first hour: run by the fastmcp venv that
scripts/test.sh makes (.cache/fastmcp), on 127.0.0.1 and a port the OS picks, printed as `listening PORT`."""

from __future__ import annotations

import socket
import sys

from fastmcp import FastMCP

mcp = FastMCP("Notes Server")


@mcp.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@mcp.tool
def tag_note(note: dict, tags: list[dict]) -> str:  # type: ignore[type-arg]
    """Tags a note: a nested object and an array of objects."""
    return f"{note.get('title', '?')}: {', '.join(str(t.get('name')) for t in tags)}"


@mcp.resource("notes://{name}")
def note(name: str) -> str:
    """One note, by name."""
    return f"the note {name}"


@mcp.prompt
def summarize(topic: str) -> str:
    """Asks for a summary of a topic."""
    return f"Summarize {topic}."


if __name__ == "__main__":
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"listening {sock.getsockname()[1]}", flush=True)
    sys.stdout.flush()
    mcp.run(transport="http", sockets=[sock], show_banner=False, log_level="warning")
