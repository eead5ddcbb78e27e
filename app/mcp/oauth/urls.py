"""Where a client looks for what it needs, in the order the specification gives (oauth.md §2), and the
canonical URI of the MCP server that names it as a resource (RFC 8707).

Pure string work: each function returns the URLs to try, the driver fetches them in that order.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import SplitResult, urlsplit, urlunsplit

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


def _split(url: str) -> SplitResult:
    """urlsplit that never raises: these URLs come from servers ("https://[x", a port "bad"), and a malformed
    one is a finding of the step that read it, not an exception out of the machine. Unparsable: all empty."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in range
    except ValueError:
        return urlsplit("")
    return parts


def canonical_resource(url: str) -> str:
    """The MCP server's canonical URI: scheme and host lowercased, default port dropped, no fragment, no query (it
    may hold a credential, and it does not name the resource), no trailing slash on a bare origin."""
    parts = _split(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is not None and (scheme, port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    path = parts.path
    if path == "/":
        path = ""
    return urlunsplit((scheme, host, path, "", ""))


def origin(url: str) -> str:
    parts = _split(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.rsplit("@", 1)[-1].lower(), "", "", ""))


def prm_urls(mcp_url: str, from_header: str | None) -> list[str]:
    """Protected resource metadata (RFC 9728): the challenge's `resource_metadata`, then the path-inserted
    well-known URL (when the MCP endpoint has a path), then the root one."""
    urls: list[str] = []
    if from_header:
        urls.append(from_header)
    base = origin(mcp_url)
    path = _split(mcp_url).path.rstrip("/")
    if path:
        urls.append(base + PRM_WELL_KNOWN + path)
    urls.append(base + PRM_WELL_KNOWN)
    return list(dict.fromkeys(urls))


def server_metadata_urls(issuer: str) -> list[tuple[str, str]]:
    """Authorization server metadata for `issuer`, as (URL, "oauth" | "oidc"): with a path, RFC 8414's
    path-inserted URL, OIDC's path-inserted one, then OIDC's path-appended one; without, the two root URLs."""
    base = origin(issuer)
    path = _split(issuer).path.rstrip("/")
    if path:
        return [(base + OAUTH_WELL_KNOWN + path, "oauth"), (base + OIDC_WELL_KNOWN + path, "oidc"),
                (base + path + OIDC_WELL_KNOWN, "oidc")]
    return [(base + OAUTH_WELL_KNOWN, "oauth"), (base + OIDC_WELL_KNOWN, "oidc")]


def is_loopback(url: str) -> bool:
    host = (_split(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_https(url: str) -> bool:
    return _split(url).scheme.lower() == "https"


def resource_covers(advertised: str, mcp_url: str) -> bool:
    """Whether the metadata's `resource` names this server: the same canonical URI, or (as RFC 9728 servers
    often say of themselves) the same origin with a path that is a prefix of ours at a segment boundary."""
    mine, theirs = canonical_resource(mcp_url), canonical_resource(advertised)
    if mine == theirs:
        return True
    if origin(mine) != origin(theirs):
        return False
    prefix = _split(theirs).path.rstrip("/")
    path = _split(mine).path
    return prefix == "" or path == prefix or path.startswith(prefix + "/")


def with_query(url: str, params: list[tuple[str, str]]) -> str:
    """`url` with `params` appended to whatever query it already has (an authorization endpoint may carry one)."""
    from urllib.parse import urlencode
    parts = urlsplit(url)
    query = parts.query + ("&" if parts.query and params else "") + urlencode(params)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
