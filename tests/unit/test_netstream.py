"""The network layer under the console's httpx client (h11 over asyncio streams): keep-alive, a closed idle
connection, flow control, one write per request."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from app.mcp import netstream
from app.mcp.h11_transport import H11Transport

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
LIMITS = httpx.Limits(max_connections=10, max_keepalive_connections=5)


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return await reader.readexactly(length)


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[tuple[str, list[int]]]]]:
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> tuple[str, list[int]]:
        connections: list[int] = []

        async def counted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            connections.append(len(connections) + 1)
            try:
                await handler(reader, writer)
            finally:
                writer.close()

        server = await asyncio.start_server(counted, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/mcp", connections

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


async def _echo_forever(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        try:
            body = await _read_request(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(body), body))
        await writer.drain()


async def test_calls_to_one_target_share_one_keep_alive_connection(
        serve: Callable[..., Awaitable[tuple[str, list[int]]]]) -> None:
    url, connections = await serve(_echo_forever)
    async with httpx.AsyncClient(transport=H11Transport(LIMITS)) as client:
        for i in range(5):
            reply = await client.post(url, content=b'{"n":%d}' % i)
            assert reply.json() == {"n": i}
    assert connections == [1]


async def test_an_idle_connection_the_server_closed_is_replaced_not_reused(
        serve: Callable[..., Awaitable[tuple[str, list[int]]]]) -> None:
    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()  # then close: keep-alive was offered but the server hangs up

    url, connections = await serve(once)
    async with httpx.AsyncClient(transport=H11Transport(LIMITS)) as client:
        assert (await client.post(url, content=b"a")).text == "ok"
        for _ in range(50):  # the close reaches the client's protocol on a later loop turn
            if len(connections) == 1 and _all_idle_closed(client):
                break
            await asyncio.sleep(0.01)
        assert (await client.post(url, content=b"b")).text == "ok"
    assert connections == [1, 2]


def _all_idle_closed(client: httpx.AsyncClient) -> bool:
    transport = client._transport  # type: ignore[attr-defined]
    return not any(conn.reusable(None) for idle in transport._idle.values() for conn in idle)


async def test_a_server_sending_faster_than_the_reader_reads_is_paused_at_the_high_water_mark(
        serve: Callable[..., Awaitable[tuple[str, list[int]]]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netstream, "READ_HIGH_WATER", 64 * 1024)
    chunk = b"x" * 65536
    total = 64

    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (len(chunk) * total))
        for _ in range(total):
            writer.write(chunk)
            await writer.drain()

    url, _ = await serve(flood)
    peak = 0
    real = netstream._Protocol.data_received

    def watched(self: netstream._Protocol, data: bytes) -> None:
        nonlocal peak
        real(self, data)
        peak = max(peak, len(self.buffer))

    monkeypatch.setattr(netstream._Protocol, "data_received", watched)
    async with httpx.AsyncClient(transport=H11Transport(LIMITS)) as client, \
            client.stream("POST", url, content=b"go") as reply:
        size = 0
        async for part in reply.aiter_raw():
            size += len(part)
            await asyncio.sleep(0)  # a slow reader
    assert size == len(chunk) * total
    assert peak <= 64 * 1024 + 256 * 1024  # the high-water mark plus what one read of the socket brings (256 KB)


async def test_a_requests_headers_and_body_leave_in_one_write(
        serve: Callable[..., Awaitable[tuple[str, list[int]]]], monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = await serve(_echo_forever)
    writes: list[bytes] = []
    real = netstream._Protocol.connection_made

    def watched(self: netstream._Protocol, transport: asyncio.BaseTransport) -> None:
        real(self, transport)
        assert self.transport is not None
        send = self.transport.write

        def counted(data: bytes | bytearray | memoryview) -> None:
            writes.append(bytes(data))
            send(data)

        self.transport.write = counted  # type: ignore[method-assign]

    monkeypatch.setattr(netstream._Protocol, "connection_made", watched)
    async with httpx.AsyncClient(transport=H11Transport(LIMITS)) as client:
        for i in range(3):
            assert (await client.post(url, content=b'{"n":%d}' % i)).json() == {"n": i}
    assert len(writes) == 3
    assert all(w.startswith(b"POST /mcp HTTP/1.1\r\n") and w.endswith(b'}') for w in writes)


async def test_a_target_holding_every_slot_of_its_origin_does_not_keep_another_target_waiting(
        serve: Callable[..., Awaitable[tuple[str, list[int]]]]) -> None:
    """At most max_connections requests per origin, each waiting `pool` seconds for a slot: a hostile target that
    holds its answers open fills only its own slots."""
    async def holds(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhal")  # and the rest never comes
        await writer.drain()
        await reader.read()

    async def answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()

    slow_url, _ = await serve(holds)
    fast_url, _ = await serve(answers)
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(transport=H11Transport(limits), timeout=httpx.Timeout(5.0, pool=0.3)) as client:
        held = await client.send(client.build_request("POST", slow_url, content=b"a"), stream=True)
        with pytest.raises(httpx.PoolTimeout):
            await client.post(slow_url, content=b"b")
        assert (await client.post(fast_url, content=b"c")).text == "ok"
        await held.aclose()  # closed before its end: its slot comes free, its connection is not reused
        second = await client.send(client.build_request("POST", slow_url, content=b"d"), stream=True)
        await second.aclose()


async def test_a_burst_of_chunks_already_read_goes_up_as_one_piece_with_every_byte_in_order(
        serve: Callable[..., Awaitable[tuple[str, list[int]]]]) -> None:
    """A flood of one HTTP chunk per SSE event: what one read brought is handed up at once, not chunk by chunk
    (each piece paid httpx's stream layers and a wake-up of the reader: bench.progress_latency)."""
    events = [b"data: %d\n\n" % i for i in range(500)]

    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                     + chunked)
        await writer.drain()

    url, _ = await serve(flood)
    async with httpx.AsyncClient(transport=H11Transport(LIMITS)) as client, \
            client.stream("POST", url, content=b"x") as response:
        pieces = [piece async for piece in response.aiter_raw()]
    assert b"".join(pieces) == b"".join(events)
    assert len(pieces) < 20, len(pieces)


async def test_a_cancel_in_the_turn_a_slot_comes_free_ends_the_waiting_request(
        serve: Callable[..., Awaitable[tuple[str, list[int]]]]) -> None:
    """Python 3.11's wait_for drops a cancel that lands in the turn its awaitable completes: a request waiting for
    a slot, cancelled just as one came free, went on with no deadline (its Stop lost) and could hang for good."""
    async def hangs(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhal")
        await writer.drain()
        await reader.read()

    url, _ = await serve(hangs)
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(transport=H11Transport(limits), timeout=httpx.Timeout(5.0, read=None)) as client:
        holder = await client.send(client.build_request("POST", url, content=b"a"), stream=True)
        waiter = asyncio.create_task(client.post(url, content=b"b"))
        await asyncio.sleep(0.05)  # waiting for the one slot
        await holder.aclose()  # the slot comes free ...
        waiter.cancel()  # ... and the cancel lands in the same turn
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(waiter, 3)


async def test_idle_connections_past_their_expiry_are_closed_whichever_origin_is_called_next(
        serve: Callable[..., Awaitable[tuple[str, list[int]]]], monkeypatch: pytest.MonkeyPatch) -> None:
    from app.mcp import h11_transport

    monkeypatch.setattr(h11_transport, "SWEEP_S", 0.0)

    async def answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await _read_request(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()

    a_url, _ = await serve(answers)
    b_url, _ = await serve(answers)
    transport = H11Transport(httpx.Limits(max_connections=10, max_keepalive_connections=5, keepalive_expiry=0.2))
    async with httpx.AsyncClient(transport=transport) as client:
        await asyncio.gather(*(client.post(a_url, content=b"x") for _ in range(3)))
        assert sum(len(idle) for idle in transport._idle.values()) == 3
        await asyncio.sleep(0.3)
        assert (await client.post(b_url, content=b"y")).text == "ok"
        assert [len(idle) for idle in transport._idle.values()] == [1]  # only B's, just used: A's were closed


async def test_a_server_that_closes_without_answering_is_said_so_in_plain_words(
        serve: Callable[..., Awaitable[tuple[str, list[int]]]]) -> None:
    async def hangs_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)

    url, _ = await serve(hangs_up)
    async with httpx.AsyncClient(transport=H11Transport(LIMITS)) as client:
        with pytest.raises(httpx.RemoteProtocolError, match="closed the connection without an answer"):
            await client.post(url, content=b"x")
