"""The doctor's network steps for an HTTP target: name resolution, TCP, TLS, the HTTP answer to a real first
request, and the CORS headers a browser host would need.

The first request is the console's own (`server/discover` through app/mcp/http.py, the one upstream client); what
this module reads is the status line and headers the transport recorded for it. Only the CORS step sends requests
of its own (an OPTIONS preflight and a POST with an `Origin`), because a browser host's requests are not the
console's: they carry an Origin the console never sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import ssl
import time
from urllib.parse import urlsplit

import httpx

from app.mcp.client import Reply
from app.mcp.doctor.checks import Check, Visit, cut
from app.mcp.doctor.protocol import first_request, legacy_initialize
from app.mcp.errors import McpError
from app.mcp.handshake import NOT_SERVED_STATUSES
from app.mcp.http import request_url, userinfo_unless_authorization
from app.mcp.oauth.challenge import bearer_challenge
from app.mcp.secret import reveal

RESOLVE, TCP, TLS, HTTP, CORS = "name resolution", "TCP connect", "TLS", "HTTP answer", "CORS for browser hosts"
MCP_TYPES = ("application/json", "text/event-stream")
BROWSER_ORIGIN = "https://browser-host.example"  # an origin no server has allowed on purpose
EXPOSED = ("Mcp-Session-Id", "WWW-Authenticate")
EXPIRY_WARN_DAYS = 14
# OpenSSL's verify codes (X509_V_ERR_*) the doctor names in words of its own.
EXPIRED, NOT_YET_VALID, SELF_SIGNED, SELF_SIGNED_IN_CHAIN, NO_LOCAL_ISSUER, NO_ISSUER, HOST_MISMATCH = \
    10, 9, 18, 19, 20, 2, 62
TRUST_FIX = ("Trust the certificate's CA on this machine: point SSL_CERT_FILE at a PEM bundle that holds it before "
             "starting the console (it reads that variable), or serve a certificate from a CA the system trusts "
             "(for a local host, mkcert makes one).")


def _where(visit: Visit) -> tuple[str, str, int]:
    """The scheme, host and port the URL names (the port its scheme implies when it names none)."""
    parts = urlsplit(reveal(visit.url))
    scheme = parts.scheme.lower()
    return scheme, parts.hostname or "", parts.port or (443 if scheme == "https" else 80)


async def resolve(visit: Visit) -> Check:
    scheme, host, port = _where(visit)
    if scheme not in ("http", "https") or not host:
        return Check(RESOLVE, "fail", cut(f"not an http:// or https:// URL with a host: {scheme}://…"),
                     "Give the server's Streamable HTTP URL, such as http://127.0.0.1:8766/mcp.")
    with contextlib.suppress(ValueError):
        visit.addresses = [str(ipaddress.ip_address(host))]
        return Check(RESOLVE, "ok", f"{host} is an IP address: nothing to resolve")
    loop = asyncio.get_running_loop()
    try:
        found = await asyncio.wait_for(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), visit.timeout_s)
    except TimeoutError:
        return Check(RESOLVE, "fail", f"no answer for {host} within {visit.timeout_s:g} s",
                     "This machine's resolver did not answer: check its DNS settings or network.")
    except OSError as exc:
        return Check(RESOLVE, "fail", cut(f"{host} does not resolve: {exc.strerror or exc}"),
                     "Check the host name for a typo, and that this machine's DNS (or /etc/hosts) knows it.")
    visit.addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
    return Check(RESOLVE, "ok", cut(f"{host}: {', '.join(visit.addresses)}"))


async def tcp(visit: Visit) -> Check:
    _scheme, host, port = _where(visit)
    problems: list[str] = []
    for address in visit.addresses[:4]:
        started = time.monotonic()
        try:
            _reader, writer = await asyncio.wait_for(asyncio.open_connection(address, port), visit.timeout_s)
        except TimeoutError:
            problems.append(f"{address}:{port} timed out after {visit.timeout_s:g} s")
            continue
        except ConnectionRefusedError:
            problems.append(f"{address}:{port} refused the connection")
            continue
        except OSError as exc:
            problems.append(f"{address}:{port}: {exc.strerror or exc}")
            continue
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return Check(TCP, "ok", f"connected to {address}:{port} in {(time.monotonic() - started) * 1000:.0f} ms")
    detail = "; ".join(problems) or "no address to connect to"
    if any("refused" in p for p in problems):
        fix = (f"Nothing listens on port {port} of {host}: start the server, or check the port in the URL (and "
               "that the server listens on this address, not only on another interface).")
    elif any("timed out" in p for p in problems):
        fix = "Packets go unanswered: a firewall drops them, or the host is down or unreachable from here."
    else:
        fix = "The connection could not be made: check the address and this machine's network."
    return Check(TCP, "fail", cut(detail), fix)


async def tls(visit: Visit) -> Check:
    scheme, host, port = _where(visit)
    if scheme != "https":
        return Check(TLS, "skipped", "an http:// URL: no TLS")
    context = httpx.create_ssl_context()  # the trust the console's upstream client has (SSL_CERT_FILE included)
    try:
        _reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=context, server_hostname=host), visit.timeout_s)
    except ssl.SSLCertVerificationError as exc:
        return _unverified(exc, host)
    except ssl.SSLError as exc:
        return Check(TLS, "fail", cut(f"the TLS handshake failed: {exc.reason or exc}"),
                     "Is this port serving TLS? A plain HTTP server wants an http:// URL.")
    except (TimeoutError, OSError) as exc:
        return Check(TLS, "fail", cut(f"the TLS handshake did not complete: {exc or 'timed out'}"),
                     "The server accepted TCP but not a TLS handshake: check that it serves https on this port.")
    cert = writer.get_extra_info("peercert") or {}
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError):
        await writer.wait_closed()
    subject = _name(cert.get("subject")) or "no subject"
    issuer = _name(cert.get("issuer")) or "an unnamed issuer"
    until = cert.get("notAfter")
    days = (ssl.cert_time_to_seconds(until) - time.time()) / 86400 if isinstance(until, str) else None
    detail = f"verified: {subject}, issued by {issuer}" + (f", valid until {until}" if until else "")
    if days is not None and days < EXPIRY_WARN_DAYS:
        return Check(TLS, "warn", cut(f"{detail} (expires in {max(days, 0):.0f} days)"),
                     "Renew the server's certificate before it expires.")
    return Check(TLS, "ok", cut(detail))


def _unverified(exc: ssl.SSLCertVerificationError, host: str) -> Check:
    code, said = exc.verify_code, exc.verify_message or str(exc)
    if code == SELF_SIGNED:
        return Check(TLS, "fail", cut(f"the certificate is self-signed ({said})"), TRUST_FIX)
    if code in (SELF_SIGNED_IN_CHAIN, NO_LOCAL_ISSUER, NO_ISSUER):
        return Check(TLS, "fail", cut(f"the certificate is signed by a CA this machine does not trust ({said})"),
                     TRUST_FIX)
    if code == EXPIRED:
        return Check(TLS, "fail", cut(f"the certificate has expired ({said})"),
                     "Renew the server's certificate (and check this machine's clock).")
    if code == NOT_YET_VALID:
        return Check(TLS, "fail", cut(f"the certificate is not valid yet ({said})"),
                     "Check this machine's clock, or the certificate's start date.")
    if code == HOST_MISMATCH:
        return Check(TLS, "fail", cut(f"the certificate is not for {host} ({said})"),
                     "Connect with a host name the certificate names, or give the server a certificate whose "
                     "subjectAltName holds this one.")
    return Check(TLS, "fail", cut(f"the certificate was not accepted ({said})"), TRUST_FIX)


def _name(parts: object) -> str:
    """`commonName` (else `organizationName`) of a getpeercert() subject or issuer."""
    if not isinstance(parts, tuple):
        return ""
    flat = {k: v for rdn in parts for k, v in rdn}
    return str(flat.get("commonName") or flat.get("organizationName") or "")


def _head(visit: Visit, reply: Reply) -> tuple[int, str, list[tuple[str, str]]] | None:
    """The status, media type and headers of the answer to `reply`'s request, as the transport recorded them."""
    for event in visit.events:
        if event.exchange == reply.key and event.direction == "transport" and event.http_status is not None:
            headers = event.headers or []
            ctype = next((v for n, v in headers if n.lower() == "content-type"), "")
            return event.http_status, ctype.split(";")[0].strip().lower(), headers
    return None


async def http_answer(visit: Visit) -> Check:
    try:
        reply = await first_request(visit)
    except McpError as exc:
        return Check(HTTP, "fail", cut(f"the request could not be sent: {exc}"), "See the steps above.")
    head = _head(visit, reply)
    if head is None:
        return Check(HTTP, "fail", cut(f"no HTTP answer to server/discover: {reply.error}"),
                     "The server closed the connection without answering: read its logs.")
    status, ctype, headers = head
    said = f"server/discover: HTTP {status}{f', {ctype}' if ctype else ', no Content-Type'}"
    if status in (401, 403):
        return _refused(status, headers, said)
    if status in NOT_SERVED_STATUSES:
        try:  # a 2025-11-25 server refuses server/discover this way: its initialize is the real first request
            init = await legacy_initialize(visit)
        except McpError:
            init = None
        second = _head(visit, init) if init is not None else None
        if second is not None and 200 <= second[0] < 300 and second[1] in MCP_TYPES:
            return Check(HTTP, "ok", f"{said} (not served); initialize: HTTP {second[0]}, {second[1]}")
        if second is not None and second[0] in (401, 403):
            return _refused(second[0], second[2], f"{said}; initialize: HTTP {second[0]}")
    if 200 <= status < 300 and ctype in MCP_TYPES:
        return Check(HTTP, "ok", said)
    if ctype == "text/html":
        return Check(HTTP, "fail", f"{said}: an HTML page, not an MCP endpoint",
                     "This URL serves a web page (a site, a login wall, a proxy's page): give the server's MCP "
                     "endpoint, often the same host with the path /mcp.")
    if status == 404:
        return Check(HTTP, "fail", f"{said}: nothing is served at this path",
                     "Check the URL's path: MCP servers usually serve /mcp (the SDKs' default); an older one may "
                     "serve /sse with the 2024-11-05 transport (era sse-2024).")
    if status == 405:
        return Check(HTTP, "fail", f"{said}: this URL does not take POST",
                     "A Streamable HTTP endpoint takes POST: check the path; a server of the older HTTP+SSE "
                     "transport takes GET on /sse (choose era sse-2024).")
    if status >= 500:
        return Check(HTTP, "fail", f"{said}: the server failed", "Read the server's logs: it failed on the request.")
    if 200 <= status < 300:
        return Check(HTTP, "fail", f"{said}: not a JSON or event-stream answer",
                     "An MCP endpoint answers a POST with application/json or text/event-stream: check the URL.")
    return Check(HTTP, "fail", cut(f"{said}: {reply.error}"), "Read the server's answer in the steps above.")


def _refused(status: int, headers: list[tuple[str, str]], said: str) -> Check:
    """A 401 or 403, with its WWW-Authenticate parsed (app/mcp/oauth/challenge.py) and what to do about it."""
    challenge = bearer_challenge(status, headers)
    if not challenge.bearer:
        return Check(HTTP, "fail", cut(f"{said}: refused, {challenge.describe()}"),
                     "The server refuses without a Bearer challenge, so no OAuth client can learn how to "
                     "authorize: give the credential it expects (--header 'Authorization: …').")
    parts = [f"{name}={value}" for name, value in challenge.params.items() if name]
    detail = f"{said}: refused with a Bearer challenge ({', '.join(parts) or 'no parameters'})"
    where = challenge.resource_metadata
    fix = ("Authorize: connect with OAuth (the console runs the flow; on the command line --oauth interactive or "
           "--oauth follow), or give a token with --header 'Authorization: Bearer …'. ")
    fix += (f"The server's protected resource metadata is at {where}." if where else
            "The challenge names no resource_metadata: the client looks for it at /.well-known/"
            "oauth-protected-resource on the server's host.")
    if challenge.insufficient_scope:
        fix = f"The token lacks scope {challenge.scope or '(unnamed)'}: authorize again asking for it."
    return Check(HTTP, "fail", cut(detail), fix)


async def cors(visit: Visit) -> Check:
    """A warning at most: this console is no browser client, but a browser host (the Inspector's web page, say)
    reads nothing the server does not let it. One overall deadline: a server trickling its answer a byte at a time
    passes every read's timeout and would keep the session's doctor running for hours."""
    try:
        return await asyncio.wait_for(_cors(visit), visit.timeout_s)
    except TimeoutError:
        return Check(CORS, "warn", f"no whole answer to the preflight within {visit.timeout_s:g} s", "")


async def _cors(visit: Visit) -> Check:
    assert visit.http is not None
    url = request_url(userinfo_unless_authorization(reveal(visit.url), visit.headers))
    typed = {name: reveal(value) for name, value in visit.headers.items()}
    ask = {"Origin": BROWSER_ORIGIN, "Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "authorization, content-type, mcp-method, mcp-protocol-version, "
                                             "mcp-session-id"}
    body = b'{"jsonrpc":"2.0","id":"doctor-cors","method":"server/discover","params":{}}'
    try:
        # Headers only: a preflight's body means nothing here, and a hostile one may be gigabytes.
        async with visit.http.stream("OPTIONS", url, headers=ask, timeout=visit.timeout_s) as pre:
            pre_headers = pre.headers
        async with visit.http.stream("POST", url, content=body, timeout=visit.timeout_s, headers={
                **typed, "Origin": BROWSER_ORIGIN, "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "server/discover"}) as post:
            post_status, post_headers = post.status_code, post.headers
    except httpx.HTTPError as exc:
        return Check(CORS, "warn", cut(f"could not ask: {exc}"), "")
    problems: list[str] = []
    if pre_headers.get("access-control-allow-origin") not in (BROWSER_ORIGIN, "*"):
        problems.append(f"the preflight (OPTIONS) got HTTP {pre.status_code} without Access-Control-Allow-Origin")
    if post_status == 403:
        problems.append("a POST from another origin was refused (HTTP 403: Origin checking, as DNS rebinding "
                        "protection does)")
    elif post_headers.get("access-control-allow-origin") not in (BROWSER_ORIGIN, "*"):
        problems.append("the POST's answer has no Access-Control-Allow-Origin")
    exposed = {h.strip().lower() for h in post_headers.get("access-control-expose-headers", "").split(",")}
    hidden = [h for h in EXPOSED if h.lower() not in exposed and "*" not in exposed]
    if hidden:
        problems.append(f"Access-Control-Expose-Headers lacks {', '.join(hidden)}")
    if not problems:
        return Check(CORS, "ok", f"a browser on another origin may call it, and reads {', '.join(EXPOSED)}")
    return Check(CORS, "warn", cut("; ".join(problems)),
                 "Only a browser-based host needs this (this console connects from its backend): allow its origin "
                 "(Access-Control-Allow-Origin on OPTIONS and POST) and send Access-Control-Expose-Headers: "
                 "Mcp-Session-Id, WWW-Authenticate, or the page can read neither the session id nor the OAuth "
                 "challenge.")
