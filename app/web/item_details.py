"""What a listed tool, resource, template or prompt declares, shaped for display (templates/_item_details.html).

Every value comes from the target and is hostile: these functions only read shapes and pick labels; the
templates escape every string they show. Nothing here is marked safe.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any

from app.mcp.apps import visibility
from app.mcp.task import TaskChoice, as_task, lists_tasks

MAX_ICONS = 8  # a list of thousands of icons is shown as its first few and a count
MAX_ICON_BYTES = 64 * 1024  # a data: icon larger than this is named, not drawn
_DATA_URI = re.compile(r"\Adata:([A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+)((?:;[^,;]*)*);base64,(.*)\Z", re.DOTALL)
TASK_SUPPORT = {"forbidden": "The tool must not be run as a task (2025-11-25 tasks).",
                "optional": "The tool may be run as a task or as a plain call (2025-11-25 tasks).",
                "required": "The tool must be run as a task (2025-11-25 tasks)."}


@dataclass(frozen=True, slots=True)
class Hint:
    """One of a tool's behaviour hints: its value (declared or the spec's default) and what that means."""

    key: str
    label: str
    meaning: str
    declared: bool  # the server sent this key (with a boolean); otherwise the default applies
    applies: bool  # destructive/idempotent mean something only for a tool that is not read-only
    raw: Any = None  # a declared value that is not a boolean (shown as sent; the default applies)


# key → (default, label when true, meaning when true, label when false, meaning when false); the spec's defaults.
_HINTS: tuple[tuple[str, bool, str, str, str, str], ...] = (
    ("readOnlyHint", False, "read-only", "The tool does not modify its environment.",
     "may modify", "The tool may modify its environment."),
    ("destructiveHint", True, "destructive", "The tool may perform destructive updates (delete or overwrite).",
     "additive", "The tool's updates are only additive: it deletes and overwrites nothing."),
    ("idempotentHint", False, "idempotent", "Calling it again with the same arguments has no further effect.",
     "not idempotent", "Calling it again with the same arguments may have further effects."),
    ("openWorldHint", True, "open world", "The tool may interact with an open world of external entities.",
     "closed world", "The tool's domain of interaction is closed (e.g. a local store)."),
)


def tool_hints(tool: Any) -> list[Hint]:
    """The four hints of a tool, each as declared or as the spec's default (readOnly false, destructive true,
    idempotent false, openWorld true). Destructive and idempotent are "meaningful only when readOnlyHint is
    false": for a read-only tool they are marked as not applying."""
    annotations = tool.get("annotations") if isinstance(tool, dict) else None
    declared = annotations if isinstance(annotations, dict) else {}
    read_only = declared.get("readOnlyHint") is True
    hints = []
    for key, default, yes, yes_means, no, no_means in _HINTS:
        value = declared.get(key)
        is_bool = isinstance(value, bool)
        effective = value if is_bool else default
        hints.append(Hint(key=key, label=yes if effective else no, meaning=yes_means if effective else no_means,
                          declared=is_bool, applies=not (read_only and key in ("destructiveHint", "idempotentHint")),
                          raw=None if is_bool or key not in declared else value))
    return hints


def declared_hints(tool: Any) -> list[Hint]:
    """The hints the server declared that mean something for this tool: the badges of its row in the list."""
    return [h for h in tool_hints(tool) if h.declared and h.applies]


def display_title(item: Any) -> Any:
    """The spec's display name order, less the name itself: `title`, then `annotations.title` (tools)."""
    if not isinstance(item, dict):
        return None
    if item.get("title"):
        return item["title"]
    annotations = item.get("annotations")
    return annotations.get("title") if isinstance(annotations, dict) and annotations.get("title") else None


def description_lines(item: Any) -> tuple[str, str]:
    """(first line, the rest) of an item's description: the first line goes in the closed row of the list."""
    value = item.get("description") if isinstance(item, dict) else None
    if value is None:
        return "", ""
    text = str(value).strip()
    first, _, rest = text.partition("\n")
    return first.strip(), rest.strip()


def task_support(tool: Any) -> tuple[str, str] | None:
    """(value, meaning) of a tool's `execution.taskSupport` (a 2025-11-25 field), when it declares one."""
    execution = tool.get("execution") if isinstance(tool, dict) else None
    if not isinstance(execution, dict) or "taskSupport" not in execution:
        return None
    value = execution["taskSupport"]
    if isinstance(value, str) and value in TASK_SUPPORT:
        return value, TASK_SUPPORT[value]
    return str(value), "Not a value the 2025-11-25 revision defines (forbidden, optional or required)."


def task_offer(s: Any, tool: Any) -> str | None:
    """How a call of this tool may go as a task in this session, for its call form: "optional" (the person chooses,
    per call), "required" (always), None (never: 2026-07-28, where the server alone decides; a 2025-11-25 server
    that runs no tool calls as tasks; a tool that forbids it or says nothing). The same test as the call's
    (app/mcp/task.py as_task), so the form never offers what would not be sent."""
    era = s.state.era  # the fold's: what the last connect negotiated (a page sees a view, never the live client)
    if not isinstance(era, dict) or era.get("era") != "legacy":
        return None
    support = task_support(tool)
    if support is None or support[0] not in ("optional", "required"):
        return None
    sent = as_task({}, s.server_capabilities, support[0], TaskChoice())
    return support[0] if "task" in sent else None


def app_ui(item: Any) -> str | None:
    """The MCP Apps UI resource a tool points at: `_meta.ui.resourceUri` (or the older flat `ui/resourceUri`)."""
    meta = item.get("_meta") if isinstance(item, dict) else None
    if not isinstance(meta, dict):
        return None
    ui = meta.get("ui")
    value = ui.get("resourceUri") if isinstance(ui, dict) else meta.get("ui/resourceUri")
    return str(value) if value is not None else None


@dataclass(frozen=True, slots=True)
class IconView:
    src: str | None  # a data: URI the page may draw, else None (then `note` says why it is not drawn)
    text: str  # what the server sent as src, for people to read
    mime: str
    sizes: str
    theme: str
    note: str


def _data_icon(src: str, allowed: frozenset[str]) -> tuple[str | None, str]:
    match = _DATA_URI.match(src)
    if match is None:
        return None, "not drawn: a data: URI that is not base64"
    mime, data = match.group(1).lower(), match.group(3)
    if mime not in allowed:
        return None, f"not drawn: {mime} is not a raster type the console draws (SVG can carry script)"
    if len(data) > MAX_ICON_BYTES:
        return None, f"not drawn: larger than {MAX_ICON_BYTES // 1024} KB"
    try:
        base64.b64decode(data, validate=True)
    except ValueError:
        return None, "not drawn: its base64 is not valid"
    return f"data:{mime};base64,{data}", ""


def icon_views(icons: Any, allowed: frozenset[str]) -> tuple[list[IconView], int]:
    """The icons an item declares (at most MAX_ICONS) and how many more there are.

    The page draws only what it draws for image content: a data: URI of a raster type with valid base64
    (app/web/render.py `data_uri`). An https: icon is named, never loaded: the console contacts no other origin
    (its Content-Security-Policy allows images from itself and data: only), and a fetched icon would tell the
    server who opened the page and when."""
    if not isinstance(icons, list):
        return [], 0
    views = []
    for icon in icons[:MAX_ICONS]:
        if not isinstance(icon, dict):
            views.append(IconView(None, str(icon)[:200], "", "", "", "not an icon object"))
            continue
        src = icon.get("src")
        text = src if isinstance(src, str) else repr(src)
        drawn, note = None, ""
        if isinstance(src, str) and src[:5].lower() == "data:":
            drawn, note = _data_icon(src, allowed)
        elif isinstance(src, str) and src[:8].lower() == "https://":
            note = "not loaded: the console loads nothing from another origin"
        else:
            note = "not an https: or data: URI"
        sizes = icon.get("sizes")
        keep = 60 if text[:5].lower() == "data:" else 300  # a data: URI's base64 says nothing to a reader
        views.append(IconView(src=drawn, text=text if len(text) <= keep else text[:keep] + "…",
                              mime=str(icon.get("mimeType") or ""),
                              sizes=" ".join(map(str, sizes)) if isinstance(sizes, list) else str(sizes or ""),
                              theme=str(icon.get("theme") or ""), note=note))
    return views, max(0, len(icons) - MAX_ICONS)


def resource_annotations(item: Any) -> list[tuple[str, str, str]]:
    """(field, value shown, meaning) for a resource's or template's `annotations`: audience, priority,
    lastModified, then any other key as sent."""
    annotations = item.get("annotations") if isinstance(item, dict) else None
    if not isinstance(annotations, dict):
        return []
    rows = []
    audience = annotations.get("audience")
    if "audience" in annotations:
        shown = ", ".join(map(str, audience)) if isinstance(audience, list) else str(audience)
        rows.append(("audience", shown, "Who this is meant for: the user, the assistant (the model), or both."))
    if "priority" in annotations:
        priority = annotations["priority"]
        ok = isinstance(priority, int | float) and not isinstance(priority, bool) and 0 <= priority <= 1
        rows.append(("priority", str(priority), "How important it is, from 0 (optional) to 1 (required)."
                     if ok else "Not a number from 0 to 1, as the spec asks."))
    if "lastModified" in annotations:
        rows.append(("lastModified", str(annotations["lastModified"]), "When it was last changed (ISO 8601)."))
    for key, value in annotations.items():
        if key not in ("audience", "priority", "lastModified"):
            rows.append((str(key), str(value), "A key the spec does not define."))
    return rows


def prompt_arguments(prompt: Any) -> list[dict[str, Any]]:
    """A prompt's arguments as objects (a server's number or string there lists nothing)."""
    args = prompt.get("arguments") if isinstance(prompt, dict) else None
    if not isinstance(args, list):
        return []
    return [a for a in args if isinstance(a, dict)]


def declared_keys(item: Any, keys: tuple[str, ...]) -> list[str]:
    """Which of `keys` an item declares (with a value other than null), in that order."""
    return [k for k in keys if isinstance(item, dict) and item.get(k) is not None]


# What the templates call (app/web/render.py puts these in the environment's globals).
DETAIL_GLOBALS: dict[str, Any] = {
    "tool_hints": tool_hints, "declared_hints": declared_hints, "display_title": display_title,
    "description_lines": description_lines, "task_support": task_support, "app_ui": app_ui,
    "app_visibility": visibility,
    "task_offer": task_offer, "lists_tasks": lists_tasks,
    "icon_views": icon_views, "resource_annotations": resource_annotations, "prompt_arguments": prompt_arguments,
    "declared_keys": declared_keys,
}
