"""The one client every request to a target goes through, from the console and from the command line, for every
scheme: httpx, over the HTTP/1.1 transport of app/mcp/h11_transport.py."""

from __future__ import annotations

from http.cookiejar import Cookie, CookieJar
from typing import Any

import httpx

from app.mcp.h11_transport import H11Transport


class NoCookies(CookieJar):
    """The jar of a client shared by every session: it keeps nothing.

    Cookies are not isolated by port, so a cookie one target set, kept by the shared client, went to every other
    target on that host (another session's server, maybe a hostile one) and into that session's recording. Each
    transport keeps its own target's cookies instead (`HttpTransport.cookies`); httpx still stores what every
    answer sets in its client's jar, and this one drops it.
    """

    def set_cookie(self, cookie: Cookie) -> None:
        return


def upstream_client() -> httpx.AsyncClient:
    """The client the console and the command line send every request to a target with, whatever its scheme.

    Its transport is HTTP/1.1 by h11 over asyncio streams (app/mcp/h11_transport.py), for every scheme, which also
    retires a connection a server sent unasked bytes on. Its jar keeps nothing: each target's cookies stay with its
    own transport (NoCookies). No read deadline here: the client's idle and overall deadlines bound each request
    (app/mcp/deadline.py)."""
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
    return _UpstreamClient(timeout=httpx.Timeout(30.0, read=None), follow_redirects=False, limits=limits,
                           transport=H11Transport(limits))


class _NoClientCookies(httpx.Cookies):
    """The shared client's cookies: none, and nothing read off an answer. httpx reads every answer's Set-Cookie
    into its client's jar, building urllib request and response objects for it each time (a few percent of a
    call), only for NoCookies to drop them: each transport keeps its own target's cookies instead."""

    def __init__(self) -> None:
        super().__init__(NoCookies())

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


class _UpstreamClient(httpx.AsyncClient):
    _none = _NoClientCookies()

    @property
    def cookies(self) -> httpx.Cookies:
        return self._none

    @cookies.setter
    def cookies(self, _cookies: Any) -> None:
        return None  # httpx's constructor sets its own; this client keeps none
