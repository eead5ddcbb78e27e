"""The lean HTTP/1.1 client (app/mcp/lean_http.py) against a raw socket server: what it sends, reuses and refuses."""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from app.mcp.http import lean_route
from app.mcp.lean_http import LeanPool, LeanResponse
from app.mcp.netstream import AsyncioHTTPTransport

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
TIMEOUT = httpx.Timeout(5.0)


class RawServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.closed = asyncio.Event()  # a connection's peer (the client) closed it
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
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
    def origin(self) -> tuple[str, int]:
        assert self.server is not None
        return "127.0.0.1", self.server.sockets[0].getsockname()[1]


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return head + await reader.readexactly(length)


def json_answer(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def body_of(response: LeanResponse) -> bytes:
    return b"".join([chunk async for chunk in response.aiter_bytes()])


@pytest.fixture
async def pool() -> AsyncIterator[LeanPool]:
    p = LeanPool(10, 10, 5.0)
    yield p
    p.close()


async def test_keep_alive_sends_every_request_on_one_connection_per_origin(pool: LeanPool) -> None:
    async def echo_forever(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while not reader.at_eof():
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(json_answer(b'{"ok":true}'))

    async with RawServer(echo_forever) as server:
        for _ in range(5):
            response = await pool.request(server.origin, b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n",
                                          b"{}", TIMEOUT)
            assert response.status_code == 200 and response.reason_phrase == "OK"
            assert await body_of(response) == b'{"ok":true}'
    assert pool.connections_opened == 1 and server.connections == 1


async def test_chunked_event_stream_arrives_whole_and_decoded(pool: LeanPool) -> None:
    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=latin-1\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        for piece in (b"data: one\n\n", b"data: two\n\n"):
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")

    async with RawServer(chunked) as server:
        response = await pool.request(server.origin, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                                      b"", TIMEOUT)
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.encoding == "latin-1"
        assert await body_of(response) == b"data: one\n\ndata: two\n\n"


async def test_a_backlog_of_chunks_is_handed_over_as_one_piece_with_every_byte_in_order(pool: LeanPool) -> None:
    pieces = [b"data: {\"i\": %d, \"s\": \"\xc3\xa9\"}\n\n" % i for i in range(300)]

    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        # The head and every chunk in one write: a socket read brings many chunks at once.
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                     + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n")
        await writer.drain()

    async with RawServer(flood) as server:
        response = await pool.request(server.origin, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                                      b"", TIMEOUT)
        got = [piece async for piece in response.aiter_bytes()]
    assert b"".join(got) == b"".join(pieces)
    assert len(got) < len(pieces)  # buffered chunks came joined, not one piece per chunk


async def test_closing_an_answer_before_its_end_closes_its_connection(pool: LeanPool) -> None:
    async def half(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await reader.read()  # returns when the client closes: the 2026-07-28 cancel
        server.closed.set()

    async with RawServer(half) as server:
        response = await pool.request(server.origin, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                                      b"", TIMEOUT)
        await response.aclose()
        await asyncio.wait_for(server.closed.wait(), 5)


async def test_server_closing_before_answering_is_httpx_remote_protocol_error(pool: LeanPool) -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)

    async with RawServer(hang_up) as server:
        with pytest.raises(httpx.RemoteProtocolError):
            await pool.request(server.origin, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                               b"", TIMEOUT)


async def test_endless_headers_are_refused_past_the_head_bound(pool: LeanPool) -> None:
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n")
        for i in range(20_000):
            writer.write(b"X-Pad-%d: %s\r\n" % (i, b"a" * 50))
            await writer.drain()

    async with RawServer(endless) as server:
        with pytest.raises(httpx.RemoteProtocolError, match="headers passed"):
            await pool.request(server.origin, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                               b"", TIMEOUT)


async def test_refused_connection_is_httpx_connect_error(pool: LeanPool) -> None:
    async with RawServer(read_request) as server:  # type: ignore[arg-type]
        origin = server.origin
    with pytest.raises(httpx.ConnectError):
        await pool.request(origin, b"POST / HTTP/1.1\r\n\r\n", b"", TIMEOUT)


@pytest.mark.parametrize("before_reset", [b"", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{\"a\"",
                                          b"HTTP/1.1 200 OK\r\n\r\n{\"a\""])  # the last one's body ends at a close
async def test_a_target_that_resets_the_connection_fails_as_it_does_through_httpx(
        pool: LeanPool, before_reset: bytes) -> None:
    # The failure becomes the exchange's transport note: a reset must read as one on both paths, not as a close.
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(before_reset)
        await writer.drain()
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    async def failure(run: Callable[[], Awaitable[object]]) -> tuple[str, str]:
        with pytest.raises(httpx.HTTPError) as caught:
            await run()
        return type(caught.value).__name__, str(caught.value)

    async with RawServer(handler) as server:
        host, port = server.origin
        async with shared_client() as client:
            async def through_httpx() -> object:
                async with client.stream("POST", f"http://{host}:{port}/", content=b"") as response:
                    return await response.aread()

            expected = await failure(through_httpx)

        async def lean() -> object:
            response = await pool.request(server.origin, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                                          b"", httpx.Timeout(5.0))
            return await body_of(response)

        assert await failure(lean) == expected


def shared_client() -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=10, max_keepalive_connections=5)
    return httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None), follow_redirects=False, limits=limits,
                             transport=AsyncioHTTPTransport(limits))


async def test_lean_headers_are_the_ones_httpx_would_send_in_its_order() -> None:
    async with shared_client() as client:
        route = lean_route("http://127.0.0.1:8123/mcp?x=1", client)
        assert route is not None
        ours = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "user-agent": "mine"}
        sent = route.headers(ours, 17)
        assert sent is not None
        expected = client.build_request("POST", "http://127.0.0.1:8123/mcp?x=1", content=b"x" * 17, headers=ours)
        assert [(low, value) for _, low, value in sent] == expected.headers.multi_items()
        assert route.head(sent).startswith(b"POST /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8123\r\n")


async def test_unusual_headers_and_targets_are_left_to_httpx() -> None:
    async with shared_client() as client:
        route = lean_route("http://127.0.0.1:8123/mcp", client)
        assert route is not None
        assert route.headers({"X-Evil": "a\r\nInjected: 1"}, 0) is None
        assert route.headers({"X-Name": "café"}, 0) is None
        assert route.headers({"Host": "elsewhere"}, 0) is None
        assert lean_route("https://127.0.0.1:8123/mcp", client) is None
        assert lean_route("http://user:secret@127.0.0.1:8123/mcp", client) is None
    async with httpx.AsyncClient() as plain:  # a client without the console's transport (tests' MockTransport)
        assert lean_route("http://127.0.0.1:8123/mcp", plain) is None
    limits = httpx.Limits(max_connections=10)
    async with httpx.AsyncClient(proxy="http://127.0.0.1:9", transport=AsyncioHTTPTransport(limits)) as proxied:
        assert lean_route("http://example.test:8123/mcp", proxied) is None  # the proxy's transport is another


async def test_a_body_bigger_than_the_socket_buffers_goes_out_whole_under_flow_control(pool: LeanPool) -> None:
    got: list[int] = []

    async def slow_reader(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got.append(len(await read_request(reader)))
        writer.write(json_answer(b"{}"))

    body = b"x" * (8 * 1024 * 1024)
    async with RawServer(slow_reader) as server:
        head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
        response = await pool.request(server.origin, head, body, TIMEOUT)
        assert await body_of(response) == b"{}"
    assert got == [len(head) + len(body)]


async def test_requests_past_the_pool_bound_wait_for_a_slot_and_time_out_as_httpx_does() -> None:
    small = LeanPool(1, 1, 5.0)
    release = asyncio.Event()

    async def holds(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n")
            await release.wait()
            writer.write(b"0\r\n\r\n")

    head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
    async with RawServer(holds) as server:
        first = await small.request(server.origin, head, b"", TIMEOUT)
        with pytest.raises(httpx.PoolTimeout):
            await small.request(server.origin, head, b"", httpx.Timeout(5.0, pool=0.1))
        waiting = asyncio.ensure_future(small.request(server.origin, head, b"", TIMEOUT))
        release.set()
        assert await body_of(first) == b"a"
        second = await asyncio.wait_for(waiting, 5)  # the slot passed to the waiter, on the same connection
        assert await body_of(second) == b"a"
    assert small.connections_opened == 1
    small.close()


async def test_unusual_headers_stay_refused_when_asked_again_and_usual_ones_stay_sendable() -> None:
    # (Sendable headers are remembered per route: asking twice must give the same answer as asking once.)
    async with shared_client() as client:
        route = lean_route("http://127.0.0.1:8123/mcp", client)
        assert route is not None
        for _ in range(3):
            assert route.headers({"X-Evil": "a\r\nInjected: 1"}, 0) is None
            assert route.headers({"Mcp-Name": "echo", "X-Name": "café"}, 0) is None
            sent = route.headers({"Mcp-Name": "echo"}, 3)
            assert sent is not None and ("Mcp-Name", "mcp-name", "echo") in sent
        for n in range(600):  # values that change on every call do not pile up
            assert route.headers({"Mcp-Name": f"tool-{n}"}, 0) is not None
        assert route.headers({"X-Evil": "a\r\nInjected: 1"}, 0) is None


@pytest.mark.parametrize("head", [
    b"Content-Type: application/json\r\nX-A: 1\r\nx-a: 2",
    b"Content-Type: text/event-stream; charset=utf-8\r\nContent-Type: application/json",
    b"X-Cafe: \xc3\xa9t\xc3\xa9\r\nContent-Type: application/json",
    b"X-Latin: \xe9\r\nContent-Type: Application/JSON",
    b"X-None: ",
])
async def test_an_answers_header_list_and_content_type_are_what_httpx_reads(pool: LeanPool, head: bytes) -> None:
    raw = b"HTTP/1.1 200 OK\r\n" + head + b"\r\nContent-Length: 2\r\n\r\n{}"

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(raw)
        await writer.drain()
        await reader.read()

    async with RawServer(handler) as server:
        response = await pool.request(server.origin, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                                      b"", httpx.Timeout(5.0))
        expected = httpx.Headers(response._raw)
        assert list(response.header_list) == expected.multi_items()
        assert response.content_type == expected.get("content-type", "")
        assert await body_of(response) == b"{}"


@pytest.mark.parametrize("status_line", [b"HTTP/1.1 200 OK", b"HTTP/1.1 200 \xd6kay", b"HTTP/1.1 200 \xc3\x96kay",
                                         b"HTTP/1.1 200 ", b"HTTP/1.1 200   All  good "])
async def test_an_answers_reason_phrase_is_what_httpx_reads(pool: LeanPool, status_line: bytes) -> None:
    # The transport note ("HTTP 200 ...") is made from it: the same answer must be recorded alike on both paths.
    raw = status_line + b"\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(raw)
            await writer.drain()

    async with RawServer(handler) as server:
        host, port = server.origin
        async with httpx.AsyncClient() as client:
            expected = (await client.post(f"http://{host}:{port}/", content=b"")).reason_phrase
        response = await pool.request(server.origin, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                                      b"", httpx.Timeout(5.0))
        assert response.reason_phrase == expected
        assert await body_of(response) == b"{}"


async def test_on_sent_runs_once_after_the_request_is_on_the_socket_and_before_its_answer(pool: LeanPool) -> None:
    seen: list[str] = []
    got = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        seen.append("server read it")
        got.set()
        writer.write(json_answer(b"{}"))
        await writer.drain()
        await reader.read()

    async with RawServer(handler) as server:
        response = await pool.request(server.origin, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n",
                                      b"{}", httpx.Timeout(5.0), on_sent=lambda: seen.append("sent"))
        await asyncio.wait_for(got.wait(), 5)
        assert seen == ["sent", "server read it"]
        assert await body_of(response) == b"{}"


async def test_on_sent_does_not_run_when_the_connection_is_refused(pool: LeanPool) -> None:
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    seen: list[str] = []
    with pytest.raises(httpx.ConnectError):
        await pool.request(("127.0.0.1", port), b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", b"",
                           httpx.Timeout(5.0), on_sent=lambda: seen.append("sent"))
    assert seen == []


async def test_a_complete_plain_answer_is_read_whole_and_anything_else_is_left_to_the_stream(pool: LeanPool) -> None:
    gzipped = gzip.compress(b'{"jsonrpc":"2.0"}')
    answers = [json_answer(b'{"a":1}'),
               b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (len(gzipped), gzipped)]
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for raw in answers:
            await read_request(reader)
            writer.write(raw)
            await writer.drain()
        await read_request(reader)  # the third: its head now, its body only when the test says
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\"")
        await writer.drain()
        await release.wait()
        writer.write(b":1}")
        await writer.drain()
        await reader.read()

    request = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
    async with RawServer(handler) as server:
        plain = await pool.request(server.origin, request, b"", httpx.Timeout(5.0))
        assert plain.read_whole() == b'{"a":1}'
        packed = await pool.request(server.origin, request, b"", httpx.Timeout(5.0))  # the same connection again
        assert packed.read_whole() is None
        assert await body_of(packed) == b'{"jsonrpc":"2.0"}'
        partial = await pool.request(server.origin, request, b"", httpx.Timeout(5.0))
        assert partial.read_whole() is None
        release.set()
        assert await body_of(partial) == b'{"a":1}'
        assert server.connections == 1
