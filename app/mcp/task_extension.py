"""The tasks extension's declaration (2026-07-28, `io.modelcontextprotocol/tasks`): the one place that names it.

A request declares it in its `_meta` client capabilities; only then may a `tools/call` answer with a task. The
client, the lint and the task machine all ask the same question, so it lives below all three.
"""

from __future__ import annotations

from typing import Any

EXTENSION = "io.modelcontextprotocol/tasks"


def declaring(capabilities: dict[str, Any]) -> dict[str, Any]:
    """The client capabilities a 2026-07-28 request declares when its client follows tasks: the extension beside
    any others (a server MUST NOT answer a task to a request that did not declare it). Shared by the console and
    the command line; 2025-11-25 has no per-request declaration."""
    extensions = capabilities.get("extensions")
    return {**capabilities, "extensions": {**(extensions if isinstance(extensions, dict) else {}), EXTENSION: {}}}


def declares_tasks(params: Any) -> bool:
    """Whether a request's params declared the extension in their `_meta` client capabilities."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    caps = meta.get("io.modelcontextprotocol/clientCapabilities") if isinstance(meta, dict) else None
    extensions = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions
