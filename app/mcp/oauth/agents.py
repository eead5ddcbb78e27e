"""How the person gets to the authorization page and back, away from the console: the command line's agents.

- `FollowRedirects`: no person at all (CI, the conformance runner): the authorization URL is requested without
  following redirects, hop by hop, until one points at the redirect URI; its query is the callback. A page that
  wants a person (a login form) stops it with a message that says so.
- `LoopbackCallback`: the person opens the printed URL in their browser; a listener on the redirect URI's
  loopback address and port takes the one callback and answers with a page that says they may close it.
"""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Callable
from urllib.parse import parse_qsl, urljoin, urlsplit

import httpx

from app.mcp.oauth.driver import AuthAborted
from app.mcp.oauth.steps import Authorize

MAX_HOPS = 10
MAX_PAGE_CHARS = 20_000  # of an error page, searched for its OAuth error code
CALLBACK_WAIT_S = 300.0


def same_endpoint(url: str, redirect_uri: str) -> bool:
    """Whether a redirect lands on the redirect URI (scheme, host, port and path; the query is the answer)."""
    a, b = urlsplit(url), urlsplit(redirect_uri)
    return (a.scheme.lower(), (a.hostname or "").lower(), a.port, a.path or "/") == \
        (b.scheme.lower(), (b.hostname or "").lower(), b.port, b.path or "/")


def callback_params(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


class FollowRedirects:
    def __init__(self, http: httpx.AsyncClient, say: Callable[[str], None] = lambda _text: None) -> None:
        self._http = http
        self._say = say

    async def authorize(self, command: Authorize) -> dict[str, str]:
        url = command.url
        # This authorization's own cookies, as a browser keeps them: a provider ties its hops together with them
        # (oidc-provider's interaction cookie), and the shared client keeps none.
        jar = httpx.Cookies()
        for _hop in range(MAX_HOPS):
            try:
                request = self._http.build_request("GET", url, timeout=15.0)
                jar.set_cookie_header(request)
                response = await self._http.send(request, follow_redirects=False)
            except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
                raise AuthAborted(f"the authorization page could not be reached: {type(exc).__name__}: {exc}") \
                    from exc
            jar.extract_cookies(response)
            location = response.headers.get("location")
            if response.is_redirect and location:
                try:
                    target = urljoin(url, location)
                    arrived = same_endpoint(target, command.redirect_uri)
                except ValueError as exc:  # "https://[x", a port that is no number: the server's, not ours
                    raise AuthAborted(f"the authorization server redirected to a malformed URL {location!r}: "
                                      f"{exc}") from exc
                if arrived:
                    self._say(f"the authorization server redirected to the redirect URI after {_hop + 1} request(s)")
                    return callback_params(target)
                url = target
                continue
            kind = response.headers.get("content-type", "no content type").split(";")[0]
            if response.status_code >= 400:
                raise AuthAborted(f"the authorization server refused the authorization request with HTTP "
                                  f"{response.status_code} ({kind}){_oauth_error(response.text)}: check --client-id, "
                                  "--redirect-uri and --scope (open the URL in a browser to read its page)")
            raise AuthAborted(f"the authorization server answered HTTP {response.status_code} ({kind}) instead of "
                              "redirecting: it wants a person (a login or consent page); run with --oauth "
                              "interactive and open the URL in a browser")
        raise AuthAborted(f"more than {MAX_HOPS} redirects without reaching the redirect URI")


# RFC 6749 §4.1.2.1's codes, invalid_client and RFC 8707's invalid_target: an error page names one, in JSON or HTML.
OAUTH_ERROR = re.compile(r"\b(invalid_request|invalid_client|invalid_redirect_uri|unauthorized_client|access_denied|"
                         r"unsupported_response_type|invalid_scope|invalid_target|server_error|"
                         r"temporarily_unavailable)\b")


def _oauth_error(text: str) -> str:
    """The first OAuth error code an error page names (", invalid_client"), or nothing."""
    found = OAUTH_ERROR.search(text[:MAX_PAGE_CHARS])
    return f", {found.group(1)}" if found else ""


class LoopbackCallback:
    """Listens on the redirect URI's own host and port (a loopback http URI) for the one callback."""

    def __init__(self, announce: Callable[[str], None], wait_s: float = CALLBACK_WAIT_S) -> None:
        self._announce = announce
        self._wait_s = wait_s

    async def authorize(self, command: Authorize) -> dict[str, str]:
        parts = urlsplit(command.redirect_uri)
        if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise AuthAborted(f"the redirect URI {command.redirect_uri} is not a loopback http URI this command can "
                              "listen on: give --redirect-uri http://127.0.0.1:PORT/callback")
        got: asyncio.Future[dict[str, str]] = asyncio.get_running_loop().create_future()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                line = (await asyncio.wait_for(reader.readline(), 10.0)).decode("latin-1")
                target = line.split(" ")[1] if line.count(" ") >= 2 else ""
                params = callback_params(target)
                ours = urlsplit(target).path == (parts.path or "/") and params.get("state") == command.state
                if not ours:
                    body = "This is not the callback mcp-console waits for."
                elif params.get("code") and "error" not in params:
                    body = "Authorized: you may close this tab and go back to the terminal."
                else:  # an error is not quoted: its iss is not checked yet (RFC 9207), the terminal says the rest
                    body = "Not authorized: the answer carries no code. The terminal says why; you may close this tab."
                page = f"<!doctype html><title>mcp-console</title><p>{html.escape(body)}</p>".encode()
                writer.write(b"HTTP/1.1 " + (b"200 OK" if ours else b"404 Not Found") +
                             b"\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: " +
                             str(len(page)).encode() + b"\r\nConnection: close\r\n\r\n" + page)
                await writer.drain()
                if ours and not got.done():
                    got.set_result(params)
            except (OSError, TimeoutError, IndexError):
                pass
            finally:
                writer.close()

        host = parts.hostname or "127.0.0.1"
        try:
            server = await asyncio.start_server(serve, host, parts.port or 80)
        except OSError as exc:
            raise AuthAborted(f"cannot listen on {host}:{parts.port} for the callback: {exc}") from exc
        try:
            self._announce(command.url)
            return await asyncio.wait_for(got, self._wait_s)
        except TimeoutError:
            raise AuthAborted(f"no callback came within {self._wait_s:g} s") from None
        finally:
            server.close()
            await server.wait_closed()
