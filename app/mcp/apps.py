"""MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865, stable 2026-01-26): what a host must know of a tool's UI.

A tool names its view with `_meta.ui.resourceUri` (a `ui://` URI; the older flat `_meta["ui/resourceUri"]` is read
too) and who may call it with `_meta.ui.visibility`. The view is a `text/html;profile=mcp-app` resource whose
`_meta.ui` declares the domains its Content-Security-Policy may name and the permissions its frame may get. This
module reads those facts and builds the policy; it knows nothing of the web, the console or the bridge
(app/mcp/app_host.py runs the bridge).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

EXTENSION = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"
BRIDGE_VERSION = "2026-01-26"  # the `protocolVersion` of `ui/initialize`, the bridge's own
CAPABILITY = {"mimeTypes": [MIME]}
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
# What a frame may be allowed, keyed as `_meta.ui.permissions` names them, valued as the iframe `allow` names them.
PERMISSIONS = {"camera": "camera", "microphone": "microphone", "geolocation": "geolocation",
               "clipboardWrite": "clipboard-write"}
# The spec's policy for a view that declares none.
DEFAULT_CSP = ("default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
               "img-src 'self' data:; media-src 'self' data:; connect-src 'none'")
# A source the console puts into a policy: an http(s) or ws(s) origin, its host possibly a `*.` wildcard, no path,
# nothing that could end a directive (`;`, `,`, quotes, spaces). Anything else is refused and said.
_SOURCE = re.compile(r"(https?|wss?)://(\*\.(?=[a-z0-9-]+\.))?[a-z0-9]([a-z0-9-]*[a-z0-9])?"
                     r"(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:(\d{1,5}|\*))?/?", re.IGNORECASE | re.ASCII)
MAX_HTML_BYTES = 5 * 1024 * 1024  # a view larger than this is not rendered (said why): a frame is no place for it


def ui_resource_uri(tool: Any) -> str | None:
    """The view a tool declares (`_meta.ui.resourceUri`, else the deprecated `_meta["ui/resourceUri"]`)."""
    meta = tool.get("_meta") if isinstance(tool, dict) else None
    if not isinstance(meta, dict):
        return None
    ui = meta.get("ui")
    value = ui.get("resourceUri") if isinstance(ui, dict) else None
    if value is None:
        value = meta.get("ui/resourceUri")
    return value if isinstance(value, str) and value else None


def visibility(tool: Any) -> list[str]:
    """Who may call a tool: `"model"`, `"app"`, or both (the default, and what a malformed value reads as)."""
    meta = tool.get("_meta") if isinstance(tool, dict) else None
    ui = meta.get("ui") if isinstance(meta, dict) else None
    value = ui.get("visibility") if isinstance(ui, dict) else None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return ["model", "app"]
    return list(value)


def app_may_call(tool: Any) -> bool:
    """Whether a view may call this tool through the bridge (a host MUST refuse one without "app")."""
    return "app" in visibility(tool)


@dataclass(frozen=True, slots=True)
class Csp:
    """The policy built for one view, what it was built from, and what was refused from it."""

    policy: str
    declared: dict[str, list[str]]  # the domains the resource declared, by key (empty: it declared none)
    refused: list[str] = field(default_factory=list)  # each: "<key>: <value> (why)"

    @property
    def granted(self) -> dict[str, list[str]]:
        """What `hostCapabilities.sandbox.csp` says was granted: the declared domains that were kept."""
        refused = {r.split(": ", 1)[1].rsplit(" (", 1)[0] for r in self.refused}
        return {k: [d for d in v if d not in refused] for k, v in self.declared.items()}


def build_csp(declared: Any) -> Csp:
    """The Content-Security-Policy for a view, from its `_meta.ui.csp` (B2 of the spec): none declared → the
    spec's default; declared domains go to their directives; a domain that is not a plain origin is refused (a
    host MUST NOT allow undeclared domains, and a value with `;` or `'` would declare more than it says)."""
    if not isinstance(declared, dict):
        return Csp(DEFAULT_CSP, {}, [] if declared is None else [f"csp: {str(declared)[:80]} (not an object)"])
    kept: dict[str, list[str]] = {}
    refused: list[str] = []
    shown: dict[str, list[str]] = {}
    for key in CSP_KEYS:
        values = declared.get(key)
        if values is None:
            continue
        if not isinstance(values, list):
            refused.append(f"{key}: {str(values)[:80]} (not a list)")
            continue
        shown[key] = [str(v)[:200] for v in values]
        for value in values:
            if isinstance(value, str) and _SOURCE.fullmatch(value) and _port_ok(value):
                kept.setdefault(key, []).append(value.rstrip("/"))
            else:
                refused.append(f"{key}: {str(value)[:200]} (not an http(s) or ws(s) origin)")
    for key in declared:
        if key not in CSP_KEYS:
            refused.append(f"{str(key)[:80]}: {str(declared[key])[:80]} (not a CSP key of the spec)")
    resources = " ".join(kept.get("resourceDomains", []))
    connect = " ".join(kept.get("connectDomains", [])) or "'none'"
    frames = " ".join(kept.get("frameDomains", [])) or "'none'"
    base = " ".join(kept.get("baseUriDomains", [])) or "'self'"
    extra = f" {resources}" if resources else ""
    policy = (f"default-src 'none'; script-src 'self' 'unsafe-inline'{extra}; style-src 'self' 'unsafe-inline'{extra}; "
              f"img-src 'self' data:{extra}; font-src 'self'{extra}; media-src 'self' data:{extra}; "
              f"connect-src {connect}; frame-src {frames}; base-uri {base}; object-src 'none'")
    return Csp(policy, shown, refused)


def _port_ok(source: str) -> bool:
    port = source.rstrip("/").rsplit(":", 1)[-1]
    return not port.isdigit() or 0 < int(port) <= 65535 or source.count(":") == 1


def allow_attribute(permissions: Any) -> tuple[str, list[str]]:
    """The inner frame's `allow` attribute for the permissions a view declares, and what was not granted."""
    if not isinstance(permissions, dict):
        return "", [] if permissions is None else [f"permissions: {str(permissions)[:80]} (not an object)"]
    granted = [PERMISSIONS[k] for k in permissions if k in PERMISSIONS]
    unknown = [f"permissions.{str(k)[:80]} (not a permission of the spec)" for k in permissions if k not in PERMISSIONS]
    return "; ".join(granted), unknown


@dataclass(frozen=True, slots=True)
class View:
    """A view as read from its resource: the HTML and what its `_meta.ui` declares, or why it cannot be shown."""

    uri: str
    html: str | None
    mime: str | None
    csp: Csp
    allow: str
    permissions: dict[str, Any]
    prefers_border: bool | None
    domain: str | None
    problems: list[str]  # what is wrong with the resource (lint findings say the same with a rule each)

    @property
    def shown(self) -> dict[str, Any]:
        """What anyone may see of it (not the HTML: the read's entry has that)."""
        return {"uri": self.uri, "mime": self.mime, "csp": self.csp.policy, "declared_csp": self.csp.declared,
                "refused": self.csp.refused, "allow": self.allow, "permissions": self.permissions,
                "prefers_border": self.prefers_border, "domain": self.domain, "problems": self.problems,
                "bytes": len(self.html.encode()) if self.html is not None else 0}


def read_view(uri: str, result: Any, listed: Any = None) -> View:
    """The view in a `resources/read` result: the content item for `uri` (else the first), its HTML from `text` or
    base64 `blob`, and `_meta.ui` from the item, else from the resource's listing (`listed`)."""
    problems: list[str] = []
    contents = result.get("contents") if isinstance(result, dict) else None
    items = [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []
    item = next((c for c in items if c.get("uri") == uri), items[0] if items else None)
    html: str | None = None
    mime: str | None = None
    if item is None:
        problems.append("the read returned no content")
    else:
        mime = item.get("mimeType") if isinstance(item.get("mimeType"), str) else None
        if mime is None or mime.replace(" ", "").lower() != MIME:
            problems.append(f"mimeType is {mime!r}, not {MIME!r}")
        if "text" in item and "blob" in item:
            problems.append("the content has both text and blob")
        if isinstance(item.get("text"), str):
            html = item["text"]
        elif isinstance(item.get("blob"), str):
            try:
                html = base64.b64decode(item["blob"], validate=True).decode("utf-8")
            except (binascii.Error, ValueError):
                problems.append("blob is not base64 of UTF-8 text")
        else:
            problems.append("the content has neither text nor blob")
    if html is not None and len(html) > MAX_HTML_BYTES:
        problems.append(f"the HTML is {len(html)} characters, past the {MAX_HTML_BYTES} the console renders")
        html = None
    ui = _ui_meta(item) or _ui_meta(listed) or {}
    csp = build_csp(ui.get("csp"))
    allow, unknown = allow_attribute(ui.get("permissions"))
    perms: dict[str, Any] = ui["permissions"] if isinstance(ui.get("permissions"), dict) else {}
    border = ui.get("prefersBorder")
    domain = ui.get("domain")
    return View(uri, html, mime, csp, allow, dict(perms), border if isinstance(border, bool) else None,
                domain if isinstance(domain, str) else None, problems + csp.refused + unknown)


def _ui_meta(item: Any) -> dict[str, Any] | None:
    meta = item.get("_meta") if isinstance(item, dict) else None
    ui = meta.get("ui") if isinstance(meta, dict) else None
    return ui if isinstance(ui, dict) else None


def declaring(capabilities: dict[str, Any]) -> dict[str, Any]:
    """Client capabilities that declare the extension beside any others (as `initialize` on 2025-11-25 and each
    request's `_meta` on 2026-07-28 carry them)."""
    extensions = capabilities.get("extensions")
    return {**capabilities, "extensions": {**(extensions if isinstance(extensions, dict) else {}),
                                           EXTENSION: CAPABILITY}}
