"""Where the stdio transport puts a server's request that comes right after the answer to one of ours.

A 2025-11-25 server asks (roots/list, elicitation, sampling) on the one stdout; the transport gives the question to
the newest ordinary request in flight. A request whose final answer has already come is no longer asking anything:
a question after it (server-everything asks roots/list right after answering a call, when told the roots changed)
belongs to the session, which answers it. Routed into the answered request's stream, it was read by no one and
the server waited for its answer for good. A real child process; the script writes the answer and the question in
one write, as server-everything did.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap

from app.mcp.jsonrpc import Frame
from app.mcp.stdio import StdioTransport
from app.mcp.wire import WireEvent

SERVER = textwrap.dedent("""
    import json, sys
    request = json.loads(sys.stdin.readline())
    answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}}
    question = {"jsonrpc": "2.0", "id": "s1", "method": "roots/list"}
    sys.stdout.write(json.dumps(answer) + "\\n" + json.dumps(question) + "\\n")
    sys.stdout.flush()
    sys.stdin.readline()  # until the transport closes stdin
""")


async def test_a_server_request_right_after_an_answer_goes_to_the_session_not_to_the_answered_request() -> None:
    recorded: list[WireEvent] = []
    asked = asyncio.get_running_loop().create_future()
    transport = StdioTransport([sys.executable, "-c", SERVER], recorded.append)

    def session_message(frame: Frame) -> None:
        if not asked.done():
            asked.set_result(frame)

    transport.on_server_message = session_message
    await transport.start()
    try:
        exchange = await transport.open({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}}, {}, "k7")
        frames = exchange.frames()
        answer = await asyncio.wait_for(anext(frames), 10)
        assert answer.kind == "response" and answer.id == 7
        question = await asyncio.wait_for(asked, 10)
        assert question.method == "roots/list" and question.id == "s1"
        assert exchange.queue.empty()  # nothing of it waits, unread, in the finished request's stream
        [seen] = [ev for ev in recorded if ev.direction == "in" and ev.frame is not None and ev.frame.id == "s1"]
        assert seen.exchange is None and seen.signal == "session_message"
        await exchange.aclose()
    finally:
        await transport.close()


async def test_a_server_request_while_a_call_is_still_unanswered_still_goes_to_that_call() -> None:
    script = textwrap.dedent("""
        import json, sys
        request = json.loads(sys.stdin.readline())
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": "s2", "method": "roots/list"}) + "\\n")
        sys.stdout.flush()
        sys.stdin.readline()
    """)
    transport = StdioTransport([sys.executable, "-c", script], lambda ev: None)
    transport.on_server_message = lambda frame: None
    await transport.start()
    try:
        exchange = await transport.open({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {}}, {}, "k8")
        question = await asyncio.wait_for(anext(exchange.frames()), 10)
        assert question.method == "roots/list" and question.id == "s2"  # asked while handling our call: its own
        await exchange.aclose()
    finally:
        await transport.close()
