"""Owner token, Host allow-list and Origin checks, for HTTP and the websocket alike.

Browsers do not apply CORS to websockets and DNS rebinding makes any page "same host", so every
request is checked three ways: the Host is ours, a state-changing request's Origin is ours, and
the caller holds the owner token (an HttpOnly, SameSite=Strict cookie set by the launch URL, or a
Bearer header for scripts).

Cookies are honoured only under the console's public host (see app/web/public_host.py): browsers send
a 127.0.0.1 cookie to every port of 127.0.0.1, so a cookie that worked there would work for any local
service the owner is lured to. Under any other allowed Host the middleware drops the Cookie header
before anything reads it; a Bearer header, which no browser sends on its own, still works.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.web.peer import PEER_HEADER

COOKIE = "mcp_console_token"
LINK_COOKIE = "mcp_console_link"
PRESENTER_COOKIE = "mcp_console_presenter"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
WILDCARDS = frozenset({"0.0.0.0", "::", "[::]", "*", ""})
MIN_TOKEN_CHARS = 16


def hostname(host_header: str) -> str:
    """The host part of a Host header value, without the port, lower-cased."""
    host = host_header.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return host
        rest = host[end + 1:]
        # After the bracket only a port may follow: "[::1]evil.example" is no host of ours (nor any valid host).
        return host[: end + 1] if rest == "" or (rest.startswith(":") and ":" not in rest[1:]) else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_port(host_header: str, scheme: str) -> int | None:
    """The port a Host header names (the scheme's default when it names none); None when unreadable."""
    host = host_header.strip()
    tail = host[host.find("]") + 1:] if host.startswith("[") else host
    if tail.count(":") != 1:
        return 443 if scheme in ("https", "wss") else 80
    port = tail.rsplit(":", 1)[1]
    # ASCII digits only: str.isdigit() also says yes to "²" (a latin-1 byte any client may send), which int() refuses.
    return int(port) if port.isascii() and port.isdigit() and len(port) <= 5 else None


def local_path(target: str | None, default: str = "/") -> str:
    """`target` when it is a path on this console, else `default`: where a redirect after a cookie may go.

    "Starts with / but not //" is not enough: browsers read a backslash as a slash and drop tabs and newlines
    from a URL, so `/\\evil.example` and `/<TAB>/evil.example` both open `//evil.example`, another site.
    """
    if not target or not target.startswith("/") or target.startswith("//"):
        return default
    if "\\" in target or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in target):
        return default
    return target


def token_matches(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def token_problem(token: str | None) -> str | None:
    """Why a token the user set is refused (None when it is fine, or unset: then a random one is made)."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        return (f"The owner token is {len(token)} characters long; use at least {MIN_TOKEN_CHARS} "
                "(or leave it unset for a random one).")
    return None


@dataclass(frozen=True, slots=True)
class Screened:
    """What `Guard.screen` found: the scope to go on with and its headers (names lower-cased), or why not."""

    scope: Scope
    headers: dict[str, str]
    status: int
    problem: str | None


class Guard:
    def __init__(self, token: str, extra_hosts: set[str] | None = None, public_host: str = "127.0.0.1",
                 port: int = 8765, internal_hosts: set[str] | None = None) -> None:
        self.token = token
        self.public_host = public_host.lower()
        self.port = port  # the console's port when a request does not say which socket it came in on
        self.hosts = set(LOCAL_HOSTS) | {h.lower() for h in (extra_hosts or set()) if h} | {self.public_host}
        # Team deployment: the host of this process's advertise_url (`console-a`), where the other processes
        # forward actions. Accepted only for a request that says it is signed with the team key: the routing
        # layer then proves the signature or refuses the request (app/web/peer.py), before anything else reads
        # it. The Host check exists against DNS rebinding; a rebound page can set any header, but cannot sign.
        # Browsers keep the plain allow-list.
        self.internal_hosts = {h.lower() for h in (internal_hosts or set()) if h} - self.hosts
        self.sandbox_host: str | None = None  # the MCP Apps sandbox proxy's host name (app/web/app_routes.py)

    def host_ok(self, host_header: str | None) -> bool:
        return host_header is not None and hostname(host_header) in self.hosts

    def request_host_ok(self, headers: dict[str, str]) -> bool:
        """The Host check of one request: the allow-list, or an internal host for a signed forwarded request."""
        host = headers.get("host")
        if self.host_ok(host):
            return True
        if host is None or hostname(host) not in self.internal_hosts:
            return False
        return PEER_HEADER in headers

    def console_port(self, scope: Scope) -> int:
        """The port this request reached: the listening socket's, never a header's."""
        server = scope.get("server")
        if not server:
            return self.port
        if server[1] is None:  # a server that names no port listens on the scheme's default
            return 443 if scope.get("scheme") in ("https", "wss") else 80
        return int(server[1])

    def is_public(self, host_header: str | None, port: int, scheme: str = "http") -> bool:
        """Whether the request was addressed to the public host *and* the console's own port."""
        return (host_header is not None and hostname(host_header) == self.public_host
                and host_port(host_header, scheme) == port)

    def public_url(self, path_and_query: str, port: int) -> str:
        """An absolute URL on the console, from the configured host and its port only (never a header)."""
        netloc = self.public_host if port == 80 else f"{self.public_host}:{port}"
        return f"http://{netloc}{path_and_query}"

    def origin_ok(self, origin: str | None, sec_fetch_site: str | None, host: str | None, scheme: str) -> bool:
        """A state-changing request or a websocket must come from this very origin.

        Same origin means scheme, host *and port*: another service on 127.0.0.1 (a dev server, a
        page a hostile MCP server asks you to open) is same-site to a browser, and would otherwise
        ride the owner's cookie. `scheme` is the one this request arrived over (http/ws or https/wss).
        """
        if sec_fetch_site in ("cross-site", "same-site"):
            return False
        if origin is None:
            return True  # not a browser (browsers send Origin on POST and websockets); the token still applies
        parts = urlsplit(origin)
        expected = "https" if scheme in ("https", "wss") else "http"
        return (parts.scheme == expected and host is not None
                and parts.netloc.lower() == host.strip().lower() and self.host_ok(host))

    def screen(self, scope: Scope) -> Screened:
        """The Host and Origin checks of one HTTP or websocket request, made before anything reads it.

        Passed, the scope comes back as the app must see it: without its Cookie header unless it was addressed to
        the public host and the console's own port (see the module's docstring).
        """
        raw = scope.get("headers", [])
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}
        names = [k.lower() for k, _ in raw]
        if names.count(b"host") > 1:
            # Two Host headers: the check would see one and a proxy or the app might act on the other.
            return Screened(scope, headers, 400, "More than one Host header")
        if names.count(b"origin") > 1:  # the same: the check reads the last, something else may read the first
            return Screened(scope, headers, 403, "More than one Origin header")
        if not self.request_host_ok(headers):
            return Screened(scope, headers, 403, "Host header not allowed")
        if (scope["type"] == "websocket" or scope.get("method") not in SAFE_METHODS) and not \
                self.origin_ok(headers.get("origin"), headers.get("sec-fetch-site"), headers.get("host"),
                               str(scope.get("scheme", "http"))):
            return Screened(scope, headers, 403, "Origin not allowed")
        if not self.is_public(headers.get("host"), self.console_port(scope), str(scope.get("scheme", "http"))):
            scope = {**scope, "headers": [(k, v) for k, v in raw if k.lower() != b"cookie"]}
            headers.pop("cookie", None)
        return Screened(scope, headers, 200, None)

    def caller_token(self, headers: dict[str, str], cookies: dict[str, str]) -> str | None:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        return cookies.get(COOKIE)


# Defence in depth: even if a server string ever escaped into markup, no inline script runs, no
# other origin is contacted, and no other site can frame the console (only its own workspace pages do).
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                 b"img-src 'self' data:; media-src 'self' data:; connect-src 'self'; "
                                 b"frame-ancestors 'self'; base-uri 'none'; form-action 'self'"),
    (b"x-content-type-options", b"nosniff"),
    # same-origin, not no-referrer: with no-referrer Chrome sends "Origin: null" on form posts.
    (b"referrer-policy", b"same-origin"),
]


# Pages, JSON twins and exports hold what a target sent and, asked for, the values the owner typed: a browser must
# not keep them in its disk cache after the tab is gone (a shared machine). Static files stay cacheable.
NO_STORE = (b"cache-control", b"no-store")


def page_headers(sandbox_host: str | None) -> list[tuple[bytes, bytes]]:
    """SECURITY_HEADERS, with the MCP Apps sandbox proxy's origins allowed as frames when there is one (any port:
    the console may be reached on another than it was started with, behind a proxy)."""
    if not sandbox_host:
        return SECURITY_HEADERS
    name, policy = SECURITY_HEADERS[0]
    frames = f"; frame-src 'self' http://{sandbox_host}:* https://{sandbox_host}:*".encode()
    return [(name, policy + frames), *SECURITY_HEADERS[1:]]


def _with_headers(send: Send, path: str, page: list[tuple[bytes, bytes]] = SECURITY_HEADERS) -> Send:
    cacheable = path.startswith("/static/")

    async def sender(message: Message) -> None:
        if message["type"] == "http.response.start":
            # The MCP Apps sandbox proxy (app/web/app_routes.py) sets its own: it must be framed by the console,
            # and its policy would be inherited by the view's frame.
            own = path.startswith("/sandbox/")
            headers = [*message.get("headers", []), *([] if own else page)]
            if not cacheable and not any(name.lower() == b"cache-control" for name, _ in headers):
                headers.append(NO_STORE)
            message["headers"] = headers
        await send(message)

    return sender


class GuardMiddleware:
    """Rejects bad Host and Origin before routing; token checks happen in the route dependencies."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard
        self._page: list[tuple[bytes, bytes]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        screened = self.guard.screen(scope)
        status, problem = screened.status, screened.problem
        if problem is None:
            scope = screened.scope
            if self._page is None:  # once: the sandbox host is set before the first request
                self._page = page_headers(self.guard.sandbox_host)
            await self.app(scope, receive,
                           _with_headers(send, scope["path"], self._page) if scope["type"] == "http" else send)
            return
        if scope["type"] == "websocket":
            await receive()  # the websocket.connect message; closing before accept answers 403
            await send({"type": "websocket.close", "code": 1008, "reason": problem})
            return
        body = problem.encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
