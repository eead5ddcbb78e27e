"""The console's one upstream HTTP client (httpx over app/mcp/netstream.py) against a raw socket server.

Every target scheme goes through the same client, so what is checked here holds for http:// and https:// alike:
the recorded headers are the bytes that went on the wire (names in their case, in their order), a compressed
answer is inflated in bounded pieces (a gzip bomb of zeros cannot become one huge allocation before the stream
bound looks at it), and hostile framing is a protocol error, not a hang or a crash.
"""

from __future__ import annotations

import asyncio
import gzip
import ipaddress
import json
import ssl
import sys
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.mcp.errors import TransportError
from app.mcp.http import HttpTransport
from app.mcp.inflate import DECODED_PIECE, body_pieces
from app.mcp.upstream import upstream_client
from app.mcp.wire import WireEvent
from tests.integration.conftest import REPO_ROOT, child_env

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
BOMB_BYTES = 64 * 1024 * 1024
TIMEOUT = httpx.Timeout(5.0)


class RawServer:
    """A TCP server that answers each connection with `handler`: the bytes a hostile target would send."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self.handler(reader, writer)
        finally:
            writer.close()

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/mcp"


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return head + await reader.readexactly(length)


def answering(raw: bytes, seen: list[bytes] | None = None) -> RawServer:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        if seen is not None:
            seen.append(request)
        writer.write(raw)
        await writer.drain()
        await reader.read()  # until the client closes: the answer is all the server says

    return RawServer(handler)


def encoded(encoding: str, body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n%s" % (
        encoding.encode(), len(body), body)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    """The client as the console builds it (app/console/manager.py)."""
    async with upstream_client() as c:
        yield c


async def test_the_recorded_headers_keep_the_case_and_order_they_went_on_the_wire_with(
        client: httpx.AsyncClient) -> None:
    seen: list[bytes] = []
    body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Odd-CASE: yes\r\nx-lower: 1\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    events: list[WireEvent] = []
    async with answering(answer, seen) as server:
        transport = HttpTransport(server.url, client, events.append, extra_headers={"X-Team-Token": "t"})
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}
        exchange = await transport.open(message, {"Mcp-Method": "tools/call", "Mcp-Name": "echo"}, "k1")
        frames = [frame async for frame in exchange.frames()]
        await exchange.aclose()
    assert frames and frames[0].id == 1
    sent = next(e for e in events if e.direction == "out")
    assert sent.headers is not None
    names = [name for name, _ in sent.headers]
    assert {"Mcp-Method", "Mcp-Name", "X-Team-Token", "Content-Type", "Host"} <= set(names)
    # What the record says is what the server read, name for name and in the same order.
    head = seen[0].split(b"\r\n\r\n")[0].split(b"\r\n")[1:]
    assert [line.split(b":")[0].decode() for line in head] == names
    answered = next(e for e in events if e.http_status == 200)
    assert answered.headers == [("Content-Type", "application/json"), ("X-Odd-CASE", "yes"), ("x-lower", "1"),
                                ("Content-Length", str(len(body)))]


async def test_a_gzip_bomb_is_inflated_in_bounded_pieces_so_the_stream_bound_holds(
        client: httpx.AsyncClient) -> None:
    bomb = gzip.compress(b"\0" * BOMB_BYTES, 9)  # about 64 KiB on the wire
    tracemalloc.start()
    try:
        async with answering(encoded("gzip", bomb)) as server, client.stream("POST", server.url) as response:
            biggest = total = 0
            async for piece in body_pieces(response):
                biggest, total = max(biggest, len(piece)), total + len(piece)
                if total > 8 * 1024 * 1024:  # what a stream bound does: stop reading
                    break
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert biggest <= DECODED_PIECE
    assert peak < 8 * 1024 * 1024 + 16 * DECODED_PIECE, f"peak {peak} bytes"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw deflate"])
async def test_bounded_inflating_gives_the_bytes_httpx_would_read_whole(client: httpx.AsyncClient,
                                                                         encoding: str) -> None:
    body = b"".join(b"line %d of a compressible answer\n" % i for i in range(200_000))
    raw = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)  # "deflate" as some servers send it: no zlib header
    packed = {"gzip": gzip.compress(body), "deflate": zlib.compress(body),
              "raw deflate": raw.compress(body) + raw.flush()}[encoding]
    name = encoding.split()[-1]
    async with answering(encoded(name, packed)) as server, client.stream("POST", server.url) as response:
        got = b"".join([piece async for piece in body_pieces(response)])
    assert got == body == httpx.Response(200, headers={"content-encoding": name}, content=packed).read()


async def test_a_corrupt_gzip_body_is_an_httpx_decoding_error(client: httpx.AsyncClient) -> None:
    async with answering(encoded("gzip", b"\x1f\x8b\x08\x00not gzip at all")) as server, \
            client.stream("POST", server.url) as response:
        with pytest.raises(httpx.DecodingError):
            b"".join([piece async for piece in body_pieces(response)])


@pytest.mark.parametrize("raw", [
    b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999999\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffffff\r\nabc",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc",
    b"NOT HTTP AT ALL\r\n\r\n",
], ids=["negative length", "overflowing length", "two lengths", "overflowing chunk size", "chunk size not hex",
        "no status line"])
async def test_hostile_framing_is_a_transport_error_on_the_record_not_a_hang(client: httpx.AsyncClient,
                                                                             raw: bytes) -> None:
    events: list[WireEvent] = []
    async with answering(raw) as server:
        transport = HttpTransport(server.url, client, events.append)
        message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        with pytest.raises(TransportError):
            async with asyncio.timeout(10):
                exchange = await transport.open(message, {}, "k1")
                try:
                    _ = [frame async for frame in exchange.frames()]
                finally:
                    await exchange.aclose()
    assert any(e.direction == "out" for e in events)
    assert any(e.direction == "transport" and e.note for e in events)


async def test_the_command_line_retires_a_connection_a_server_sent_unasked_bytes_on_as_the_console_does(
        tmp_path: Path) -> None:
    """The CLI had its own plain httpx client: a second answer a server put after its discover answer, in the same
    write, was read as the answer to the CLI's next request (tools/list), injected tools and all."""
    def answer(message: dict[str, Any]) -> bytes:
        method = message.get("method")
        result: dict[str, Any] = {"resultType": "complete"}
        if method == "server/discover":
            result |= {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
        elif method == "tools/list":
            result |= {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result |= {"content": [{"type": "text", "text": "called"}]}
        body = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": result}).encode()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
        if method == "server/discover":
            injected = json.dumps({"jsonrpc": "2.0", "id": 2, "result": {
                "resultType": "complete", "tools": [{"name": "INJECTED", "inputSchema": {"type": "object"}}]}}).encode()
            body += b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
                len(injected), injected)
        return head + body

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                request = await read_request(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            message = json.loads(request.split(b"\r\n\r\n", 1)[1] or b"{}")
            if "id" not in message:
                writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            else:
                writer.write(answer(message))
            await writer.drain()

    har = tmp_path / "call.har"
    async with RawServer(handler) as server:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "app", "call", server.url, "echo", "--har", str(har), cwd=REPO_ROOT,
            env=child_env(), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert json.loads(out)["result"]["content"][0]["text"] == "called"
    text = har.read_text()
    assert "INJECTED" not in text
    assert "bytes after this answer on its connection, unasked" in err.decode() + text


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1, made for this test with the cryptography package (what TLS servers use here)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


async def test_an_https_target_gets_the_very_bytes_an_http_target_gets_and_answers_the_same_way(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One path for every scheme: the request head and body a TLS target reads are the ones a plain one reads
    (names, case, order), and the answer is read and recorded the same way."""
    cert_file, key_file = _self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))  # trusted as a user trusts their own CA (httpx reads it)
    body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    seen: dict[str, list[bytes]] = {"http": [], "https": []}
    recorded: dict[str, list[WireEvent]] = {"http": [], "https": []}
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert_file, key_file)
    for scheme in ("http", "https"):
        raw = answering(answer, seen[scheme])
        async with raw:
            if scheme == "https":  # the same handler, behind TLS on a port of its own
                raw.server.close()
                raw.server = await asyncio.start_server(raw._serve, "127.0.0.1", 0, ssl=server_tls)
            url = raw.url.replace("http://", f"{scheme}://")
            async with upstream_client() as client:
                transport = HttpTransport(url, client, recorded[scheme].append, extra_headers={"X-Team": "t"})
                message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}
                exchange = await transport.open(message, {"Mcp-Method": "tools/call", "Mcp-Name": "echo"}, "k1")
                frames = [frame async for frame in exchange.frames()]
                await exchange.aclose()
            assert [f.id for f in frames] == [1]

    def without_host(request: bytes) -> bytes:
        return b"\r\n".join(line for line in request.split(b"\r\n") if not line.lower().startswith(b"host:"))

    assert without_host(seen["https"][0]) == without_host(seen["http"][0])
    heads = {s: [e.headers for e in recorded[s] if e.http_status == 200] for s in recorded}
    assert heads["https"] == heads["http"]


async def test_a_transfer_encoding_typed_among_the_targets_headers_is_refused_not_sent_beside_the_length(
        client: httpx.AsyncClient) -> None:
    seen: list[bytes] = []
    events: list[WireEvent] = []
    async with answering(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", seen) as server:
        transport = HttpTransport(server.url, client, events.append, extra_headers={"Transfer-Encoding": "chunked"})
        with pytest.raises(TransportError, match="Transfer-Encoding header beside the body's Content-Length"):
            await transport.open({"jsonrpc": "2.0", "id": 1, "method": "ping"}, {}, "k1")
    assert seen == []  # nothing reached the target
    assert any(e.direction == "transport" and "Transfer-Encoding" in (e.note or "") for e in events)
