"""Whether a result has the shape the result template reads: a server is untrusted, and a reply's `content`,
`contents`, `messages` or `completion` of another shape made the page fail (an operation's page, the session page,
and, through the rendering of its push, the call that recorded it). A result of another shape is shown as sent."""

from __future__ import annotations

from typing import Any


def result_shaped(result: Any) -> bool:
    if not isinstance(result, dict):
        return False
    content = result.get("content")
    if content is not None and not (isinstance(content, list) and all(_block(c) for c in content)):
        return False
    contents = result.get("contents")
    if contents is not None and not (isinstance(contents, list) and all(_resource(c) for c in contents)):
        return False
    messages = result.get("messages")
    if messages is not None and not (isinstance(messages, list) and all(
            isinstance(m, dict) and _block(m.get("content")) for m in messages)):
        return False
    completion = result.get("completion")
    return completion is None or (isinstance(completion, dict) and isinstance(completion.get("values", []), list))


def _block(c: Any) -> bool:
    """A content block as `_content.html` reads it (one of an unknown type is shown as JSON: fine)."""
    if not isinstance(c, dict):
        return c is None or isinstance(c, str | int | float | bool | list)  # shown as JSON by the macro
    resource = c.get("resource")
    return c.get("type") != "resource" or resource is None or _resource(resource)


def _resource(r: Any) -> bool:
    return isinstance(r, dict) and all(isinstance(r.get(k), str | None) for k in ("uri", "mimeType", "text", "blob"))
