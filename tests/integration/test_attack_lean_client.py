"""Attack: a hostile target against the lean HTTP/1.1 client (app/mcp/lean_http.py), over a real socket.

The stream bound (`max_stream_bytes`) counts what `aiter_bytes` yields, so it only holds if each yielded piece
is small. A gzip answer of zeros packs about a thousand bytes into one: decoded a network read at a time, one
read of 128 KiB became one allocation of 128 MiB before any bound could look at it (several calls at once, and
the console is gone). Decoded pieces are bounded instead, whatever the compression ratio. The framing attacks
(negative, overflowing or doubled Content-Length, an overflowing chunk size, Content-Length beside chunked,
a flood of 1xx answers) are refused as protocol errors.
"""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
import zlib

import httpx
import pytest

from app.mcp.inflate import DECODED_PIECE, body_pieces
from app.mcp.lean_http import LeanPool
from tests.integration.test_lean_http import TIMEOUT, RawServer, body_of, read_request

REQUEST = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
BOMB_BYTES = 64 * 1024 * 1024


def _answer(raw: bytes) -> RawServer:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(raw)
        await writer.drain()
        await reader.read()  # until the client closes: the answer is all the server says

    return RawServer(handler)


def _encoded(encoding: str, body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n%s" % (
        encoding.encode(), len(body), body)


async def test_a_gzip_bomb_is_decoded_in_bounded_pieces_so_the_stream_bound_holds() -> None:
    bomb = gzip.compress(b"\0" * BOMB_BYTES, 9)  # about 64 KiB on the wire
    pool = LeanPool(10, 10, 5.0)
    tracemalloc.start()
    try:
        async with _answer(_encoded("gzip", bomb)) as server:
            response = await pool.request(server.origin, REQUEST, b"", TIMEOUT)
            biggest = total = 0
            async for piece in response.aiter_bytes():
                biggest, total = max(biggest, len(piece)), total + len(piece)
                if total > 8 * 1024 * 1024:  # what a stream bound does: stop reading
                    break
            await response.aclose()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        pool.close()
    assert biggest <= DECODED_PIECE
    assert peak < 8 * 1024 * 1024 + 16 * DECODED_PIECE, f"peak {peak} bytes"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw deflate"])
async def test_bounded_decoding_gives_the_same_bytes_as_httpx(encoding: str) -> None:
    body = b"".join(b"line %d of a compressible answer\n" % i for i in range(200_000))
    raw = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)  # "deflate" as some servers send it: no zlib header
    packed = {"gzip": gzip.compress(body), "deflate": zlib.compress(body),
              "raw deflate": raw.compress(body) + raw.flush()}[encoding]
    pool = LeanPool(10, 10, 5.0)
    try:
        async with _answer(_encoded(encoding.split()[-1], packed)) as server:
            response = await pool.request(server.origin, REQUEST, b"", TIMEOUT)
            assert await body_of(response) == body
            expected = httpx.Response(200, headers={"content-encoding": encoding.split()[-1]}, content=packed)
            assert expected.read() == body
    finally:
        pool.close()


async def test_a_corrupt_gzip_body_is_an_httpx_decoding_error() -> None:
    pool = LeanPool(10, 10, 5.0)
    try:
        async with _answer(_encoded("gzip", b"\x1f\x8b\x08\x00not gzip at all")) as server:
            response = await pool.request(server.origin, REQUEST, b"", TIMEOUT)
            with pytest.raises(httpx.DecodingError):
                await body_of(response)
    finally:
        pool.close()


async def _flood_of_interim_answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await read_request(reader)
    for i in range(50_000):
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if i % 1000 == 0:
            await writer.drain()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    await writer.drain()


@pytest.mark.parametrize("raw", [
    b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999999\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffffff\r\nabc",
    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
], ids=["negative length", "overflowing length", "two lengths", "overflowing chunk size", "length and chunked"])
async def test_hostile_framing_is_a_protocol_error(raw: bytes) -> None:
    pool = LeanPool(10, 10, 5.0)
    try:
        async with _answer(raw) as server:
            with pytest.raises(httpx.RemoteProtocolError):
                await body_of(await pool.request(server.origin, REQUEST, b"", TIMEOUT))
    finally:
        pool.close()


async def test_a_flood_of_interim_answers_is_refused_at_the_head_bound() -> None:
    pool = LeanPool(10, 10, 5.0)
    try:
        async with RawServer(_flood_of_interim_answers) as server:
            with pytest.raises(httpx.RemoteProtocolError, match="headers passed"):
                await pool.request(server.origin, REQUEST, b"", TIMEOUT)
    finally:
        pool.close()


async def test_an_httpx_answer_in_gzip_is_inflated_in_bounded_pieces_too() -> None:
    # The path httpx keeps (https, proxies, a server that set a cookie): every reader iterates `body_pieces`.
    bomb = gzip.compress(b"\0" * BOMB_BYTES, 9)
    async with _answer(_encoded("gzip", bomb)) as server, httpx.AsyncClient(timeout=TIMEOUT) as client:
        host, port = server.origin
        async with client.stream("POST", f"http://{host}:{port}/mcp") as response:
            biggest = total = 0
            async for piece in body_pieces(response):
                biggest, total = max(biggest, len(piece)), total + len(piece)
    assert biggest <= DECODED_PIECE and total == BOMB_BYTES


@pytest.mark.parametrize(("head", "sets"), [
    (b"HTTP/1.1 200 OK\r\nSet-Cookie: sid=1; Path=/\r\nContent-Length: 2\r\n\r\n{}", True),
    (b"HTTP/1.1 200 OK\r\nset-cookie: a=b\r\nContent-Length: 2\r\n\r\n{}", True),
    (b"HTTP/1.1 200 OK\r\nX-Set-Cookie: no\r\nContent-Length: 2\r\n\r\n{}", False),
])
async def test_an_answer_that_sets_a_cookie_is_told_from_its_head(head: bytes, sets: bool) -> None:
    # The transport hands such an answer to the shared client's cookie jar (later requests then go through httpx).
    pool = LeanPool(10, 10, 5.0)
    try:
        async with _answer(head) as server:
            response = await pool.request(server.origin, REQUEST, b"", TIMEOUT)
            assert response.sets_cookie is sets
            assert ("set-cookie" in response.headers) is sets
            await response.aclose()
    finally:
        pool.close()


async def test_a_second_answer_sent_unasked_in_the_same_write_is_not_spliced_into_the_first() -> None:
    # One write: the answer asked for, then a 500 nobody asked for. The first answer is read as the target framed
    # it (its status, reason, headers and body alone); the second never becomes part of it.
    first = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    unasked = b'{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"not yours"}}'
    raw = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
           b"HTTP/1.1 500 Boom\r\nX-Unasked: 1\r\nContent-Length: %d\r\n\r\n%s"
           % (len(first), first, len(unasked), unasked))
    pool = LeanPool(10, 10, 5.0)
    try:
        async with _answer(raw) as server:
            response = await pool.request(server.origin, REQUEST, b"", TIMEOUT)
            assert (response.status_code, response.reason_phrase) == (200, "OK")
            assert response.header_list == [("content-type", "application/json"),
                                            ("content-length", str(len(first)))]
            assert "x-unasked" not in response.headers
            assert await body_of(response) == first
            again = await pool.request(server.origin, REQUEST, b"", TIMEOUT)  # never on the polluted connection
            assert await body_of(again) == first
            assert pool.connections_opened == 2
    finally:
        pool.close()


async def test_the_trailers_of_a_chunked_answer_are_not_taken_for_its_headers() -> None:
    # httpx drops trailer fields; read as headers, a trailer could name the session (Mcp-Session-Id) or retype
    # the body (Content-Type) after the fact.
    raw = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
           b"Trailer: Mcp-Session-Id\r\n\r\n2\r\n{}\r\n0\r\nMcp-Session-Id: planted\r\nContent-Type: text/html\r\n\r\n")
    pool = LeanPool(10, 10, 5.0)
    try:
        async with _answer(raw) as server:
            response = await pool.request(server.origin, REQUEST, b"", TIMEOUT)
            body = await body_of(response)
            async with httpx.AsyncClient(timeout=TIMEOUT) as client:
                host, port = server.origin
                expected = await client.post(f"http://{host}:{port}/mcp")
        assert body == b"{}"
        assert response.header_list == expected.headers.multi_items()
        assert response.content_type == "application/json"
        assert "mcp-session-id" not in response.headers
    finally:
        pool.close()


async def _through_httpx(origin: tuple[str, int]) -> tuple[int, list[tuple[str, str]], bytes]:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        response = await client.post(f"http://{origin[0]}:{origin[1]}/mcp")
        return response.status_code, response.headers.multi_items(), response.content


@pytest.mark.parametrize("raw", [
    b"HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: 2\n\n{}",
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\nContent-Length: 2\r\n\n{}",
], ids=["bare LF throughout", "bare LF here and there"])
async def test_an_answer_with_bare_lf_line_ends_is_read_as_httpx_reads_it(raw: bytes) -> None:
    # h11 (httpx's parser) takes a lone LF for a line end; llhttp refuses it unless told: a hand-written target
    # that worked through httpx must not fail through the lean client.
    pool = LeanPool(10, 10, 5.0)
    try:
        async with _answer(raw) as server:
            response = await pool.request(server.origin, REQUEST, b"", TIMEOUT)
            lean = (response.status_code, response.header_list, await body_of(response))
            assert lean == await _through_httpx(server.origin)
    finally:
        pool.close()


@pytest.mark.parametrize("raw", [
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 2\r\n\r\n{}",
], ids=["an unasked protocol switch", "a transfer coding besides chunked", "identity beside a length"])
async def test_answers_httpx_refuses_are_refused_as_protocol_errors(
        raw: bytes, caplog: pytest.LogCaptureFixture) -> None:
    pool = LeanPool(10, 10, 5.0)
    try:
        async with _answer(raw) as server:
            with pytest.raises(httpx.RemoteProtocolError):
                await _through_httpx(server.origin)
            with pytest.raises(httpx.RemoteProtocolError):
                await body_of(await pool.request(server.origin, REQUEST, b"", TIMEOUT))
    finally:
        pool.close()
    assert not [r for r in caplog.records if "Fatal error" in r.getMessage()]  # no parser error escapes the protocol


async def test_a_target_holding_every_slot_of_the_pool_does_not_keep_another_target_waiting() -> None:
    # The pool bound (max_connections, 200 in the console) was one count for every target: a target that answers
    # with a head and then holds its streams (hung calls, listen streams that never end) used it up, and every
    # other session's request, to any other target, waited for the pool timeout and failed.
    pool = LeanPool(2, 2, 5.0)
    release = asyncio.Event()

    async def holds(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n")
        await writer.drain()
        await release.wait()

    try:
        async with RawServer(holds) as hostile, _answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}") as fine:
            held = [await pool.request(hostile.origin, REQUEST, b"", TIMEOUT) for _ in range(2)]
            with pytest.raises(httpx.PoolTimeout):  # the hostile target's own next request waits, as before
                await pool.request(hostile.origin, REQUEST, b"", httpx.Timeout(5.0, pool=0.1))
            other = await pool.request(fine.origin, REQUEST, b"", httpx.Timeout(5.0, pool=0.5))
            assert await body_of(other) == b"{}"
            release.set()
            for response in held:
                await response.aclose()
    finally:
        pool.close()
