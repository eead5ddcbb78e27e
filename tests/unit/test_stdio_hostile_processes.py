"""Hostile stdio server processes: each one a real child process the owner could start.

The transport has one reader for the server's stdout; whatever a line holds, it must keep reading (a reader that
dies leaves every request in flight waiting for good). When the server process ends, its requests end with it, even
if something it left behind still holds the pipe; and closing the transport ends that something too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import textwrap
import time

import pytest

from app.mcp.errors import ProcessExited, ProtocolViolation
from app.mcp.stderr import STDERR_LINE_KEEP_BYTES
from app.mcp.stdio import EXIT_DRAIN_S, EXIT_POLL_S, StdioTransport
from app.mcp.wire import WireEvent
from tests.processes import wait_gone

DEADLINE_S = 10.0


UNHASHABLE_IDS = textwrap.dedent("""
    import json, sys
    request = json.loads(sys.stdin.readline())
    rid = request["id"]
    meta = {"io.modelcontextprotocol/subscriptionId": [rid]}
    for line in (
        {"jsonrpc": "2.0", "id": [rid], "result": {}},
        {"jsonrpc": "2.0", "id": {"id": rid}, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [rid]}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": {"t": 1}, "progress": 1}},
        {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "x", "_meta": meta}},
        {"jsonrpc": "2.0", "id": rid, "result": {"content": []}},
    ):
        sys.stdout.write(json.dumps(line) + "\\n")
    sys.stdout.flush()
    sys.stdin.readline()
""")


async def test_frames_whose_ids_are_lists_or_objects_are_recorded_and_the_reader_keeps_routing() -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", UNHASHABLE_IDS], recorded.append)
    transport.on_server_message = lambda frame: None
    await transport.start()
    try:
        exchange = await transport.open({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                         "params": {"_meta": {"progressToken": "p3"}}}, {}, "k3")
        frames = exchange.frames()
        answer = await asyncio.wait_for(anext(frames), DEADLINE_S)
        while answer.id != 3:  # what the strays carry is the server's business; the real answer must come
            answer = await asyncio.wait_for(anext(frames), DEADLINE_S)
        assert answer.kind == "response"
        strays = [ev for ev in recorded if ev.direction == "in" and ev.frame is not None
                  and isinstance(ev.frame.id, (list, dict))]
        assert len(strays) == 2 and all(ev.note == "matches no request in flight" for ev in strays)
        await exchange.aclose()
    finally:
        await transport.close()


# The server starts a child that inherits its stdout and stderr, then exits when it gets a request: the child
# holds the pipes open, so stdout never ends.
LEAVES_A_CHILD = textwrap.dedent("""
    import subprocess, sys
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    print(f"child {child.pid}", file=sys.stderr, flush=True)
    sys.stdin.readline()
    sys.exit(3)
""")


async def test_a_server_that_exits_leaving_a_child_on_its_pipes_ends_its_requests_and_close_ends_the_child(
) -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", LEAVES_A_CHILD], recorded.append, shutdown_grace_s=0.5)
    await transport.start()
    child = 0
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not child and time.monotonic() < deadline:
            child = next((int(ev.raw.split()[1]) for ev in recorded
                          if ev.direction == "stderr" and ev.raw.startswith("child ")), 0)
            await asyncio.sleep(0.02)
        assert child, "the server never named its child"
        exchange = await transport.open({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}, {}, "k1")
        with pytest.raises(ProcessExited, match="code 3"):
            await asyncio.wait_for(anext(exchange.frames()), DEADLINE_S)
        assert any(ev.signal == "process_exited" for ev in recorded)
        assert not transport.alive
    finally:
        await asyncio.wait_for(transport.close(), DEADLINE_S)
    assert await wait_gone(child, DEADLINE_S), f"the server's child {child} outlived the transport's close"


# Reads nothing: its stdin pipe fills and stays full.
READS_NOTHING = textwrap.dedent("""
    import sys, time
    print("up", file=sys.stderr, flush=True)
    time.sleep(120)
""")


async def test_a_server_that_never_reads_stdin_fails_the_write_in_bounded_time_and_a_cancel_still_goes_out(
) -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", READS_NOTHING], recorded.append, write_timeout_s=0.5)
    await transport.start()
    try:
        big = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "x", "arguments": {"blob": "y" * (2 * 1024 * 1024)}}}
        with pytest.raises(ProtocolViolation, match="not reading its stdin"):
            await asyncio.wait_for(transport.open(big, {}, "k1"), DEADLINE_S)
        assert any("not reading its stdin" in (ev.note or "") for ev in recorded if ev.direction == "transport")
        # The next small message does not queue behind the stuck write for good either.
        small = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        with pytest.raises(ProtocolViolation, match="not reading its stdin"):
            await asyncio.wait_for(transport.notify(small, {}, "k1"), DEADLINE_S)
    finally:
        await asyncio.wait_for(transport.close(), DEADLINE_S)


# Closes its stdout at once but keeps running (reading stdin, answering nothing).
CLOSES_STDOUT = textwrap.dedent("""
    import os, sys, time
    os.close(1)
    print("stdout closed", file=sys.stderr, flush=True)
    time.sleep(120)
""")


async def test_a_server_that_closes_its_stdout_but_keeps_running_ends_its_requests_and_close_ends_it() -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", CLOSES_STDOUT], recorded.append, shutdown_grace_s=0.5)
    await transport.start()
    assert transport._proc is not None
    pid = transport._proc.pid
    try:
        try:
            exchange = await transport.open({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}},
                                            {}, "k1")
        except ProcessExited as exc:  # already told: its stdout closed before the request went out
            assert "closed its stdout" in str(exc)
        else:
            with pytest.raises(ProcessExited, match="closed its stdout"):
                await asyncio.wait_for(anext(exchange.frames()), DEADLINE_S)
        assert not transport.alive
    finally:
        await asyncio.wait_for(transport.close(), DEADLINE_S)
    assert await wait_gone(pid, DEADLINE_S)


# Reads its requests and answers none of them.
ANSWERS_NOTHING = textwrap.dedent("""
    import sys
    for line in sys.stdin:
        pass
""")


async def test_closing_the_transport_ends_a_request_the_server_never_answered() -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", ANSWERS_NOTHING], recorded.append, shutdown_grace_s=0.5)
    await transport.start()
    exchange = await transport.open({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}, {}, "k1")
    waiting = asyncio.ensure_future(anext(exchange.frames()))
    try:
        await asyncio.wait_for(transport.close(), DEADLINE_S)
        with pytest.raises(ProcessExited):
            await asyncio.wait_for(waiting, DEADLINE_S)
    finally:
        waiting.cancel()


# Exits at once after the request; what it left behind on the pipe keeps writing, and answers last.
LEAVES_A_WRITER = textwrap.dedent('''
    import json, subprocess, sys
    request = json.loads(sys.stdin.readline())
    answer = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}})
    writer = "\\n".join([
        "import sys, time",
        "for i in range(8):",
        "    print('not json ' + str(i), flush=True); time.sleep(0.3)",
        f"print({answer!r}, flush=True)",
    ])
    subprocess.Popen([sys.executable, "-c", writer])
    sys.exit(0)
''')


async def test_after_the_server_exits_its_stdout_is_still_read_while_lines_keep_coming() -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", LEAVES_A_WRITER], recorded.append, shutdown_grace_s=0.5)
    await transport.start()
    try:
        exchange = await transport.open({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {}}, {}, "k5")
        frames = exchange.frames()
        frame = await asyncio.wait_for(anext(frames), DEADLINE_S)
        while frame.kind == "invalid":
            frame = await asyncio.wait_for(anext(frames), DEADLINE_S)
        assert frame.kind == "response" and frame.id == 5
    finally:
        await asyncio.wait_for(transport.close(), DEADLINE_S)


# Exits once what it leaves behind is running; that one writes its answer only a while after the exit, long enough
# for the transport to have seen it (every EXIT_POLL_S), well within the EXIT_DRAIN_S that stdout may still deliver.
# Under load, the writer's interpreter starting slowly did the same to LEAVES_A_WRITER: no line came before the
# exit was seen, the drain counted its quiet from "no line ever" and ended the request at once.
WRITES_ONLY_AFTER_THE_EXIT = textwrap.dedent('''
    import json, subprocess, sys
    request = json.loads(sys.stdin.readline())
    answer = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}})
    writer = "\\n".join([
        "import sys, time",
        "print('ready', file=sys.stderr, flush=True)",
        "sys.stdin.read()",  # its end of a pipe only the server writes to: EOF when the server has exited
        "time.sleep(AFTER_S)",
        f"print({answer!r}, flush=True)",
    ])
    child = subprocess.Popen([sys.executable, "-c", writer], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stderr.readline()  # running (its interpreter's start, slow under load, is no part of the wait)
    sys.exit(0)
''').replace("AFTER_S", repr(EXIT_DRAIN_S / 2))


async def test_a_line_that_comes_only_after_the_exit_was_seen_is_still_read_within_the_drain() -> None:
    assert 2 * EXIT_POLL_S < EXIT_DRAIN_S / 2  # the exit is seen before the line comes
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", WRITES_ONLY_AFTER_THE_EXIT], recorded.append,
                               shutdown_grace_s=0.5)
    await transport.start()
    try:
        exchange = await transport.open({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {}}, {}, "k6")
        frame = await asyncio.wait_for(anext(exchange.frames()), DEADLINE_S)
        assert frame.kind == "response" and frame.id == 6
    finally:
        await asyncio.wait_for(transport.close(), DEADLINE_S)


ANSWERS_TWICE = textwrap.dedent("""
    import json, sys
    request = json.loads(sys.stdin.readline())
    first = {"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": "one"}]}}
    second = {"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": "two"}]}}
    sys.stdout.write(json.dumps(first) + "\\n" + json.dumps(second) + "\\n")
    sys.stdout.flush()
    sys.stdin.readline()
""")


async def test_a_second_answer_to_the_same_request_in_the_same_write_is_flagged_not_filed_silently_with_it() -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", ANSWERS_TWICE], recorded.append)
    await transport.start()
    try:
        exchange = await transport.open({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {}}, {}, "k9")
        answer = await asyncio.wait_for(anext(exchange.frames()), DEADLINE_S)
        assert '"one"' in answer.raw
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and not any('"two"' in ev.raw for ev in recorded):
            await asyncio.sleep(0.02)
        [second] = [ev for ev in recorded if '"two"' in ev.raw]
        # Without an exchange the session turns it into a warning notice; filed under the request it was not.
        assert second.exchange is None and second.note == "answers a request that was already answered"
    finally:
        await transport.close()


# Its child leaves the process group (a daemon's double fork does the same) and holds the pipes.
LEAVES_AN_ESCAPED_CHILD = textwrap.dedent("""
    import subprocess, sys
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    print(f"child {child.pid}", file=sys.stderr, flush=True)
    sys.exit(0)
""")


async def test_closing_the_transport_lets_go_of_the_pipes_a_child_outside_its_process_group_still_holds() -> None:
    recorded: list[WireEvent] = []
    before = len(os.listdir("/proc/self/fd"))
    transport = StdioTransport([sys.executable, "-c", LEAVES_AN_ESCAPED_CHILD], recorded.append,
                               shutdown_grace_s=0.5)
    await transport.start()
    child = 0
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not (child and not transport.alive) and time.monotonic() < deadline:
            child = next((int(ev.raw.split()[1]) for ev in recorded
                          if ev.direction == "stderr" and ev.raw.startswith("child ")), 0)
            await asyncio.sleep(0.02)
        assert child and not transport.alive
        await asyncio.wait_for(transport.close(), DEADLINE_S)
        # Held, the console's ends of the pipes leaked with every such session (until the child wrote nothing more,
        # or ended): file descriptors run out before memory does.
        assert len(os.listdir("/proc/self/fd")) <= before
    finally:
        if child:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


# Floods stderr with short lines (a debug print in a tight loop), then says it is done and waits. Short lines are
# the worst case for a line-per-await reader: a single pipe read of 256 KiB holds tens of thousands of them.
FLOODS_STDERR = textwrap.dedent("""
    import sys
    block = b"e1\\n" * (1 << 18)
    for _ in range(int(sys.argv[1])):
        sys.stderr.buffer.write(block)
    sys.stderr.buffer.write(b"done\\n")
    sys.stderr.buffer.flush()
    sys.stdin.readline()
""")
# The loop's worst stall while the flood is read, as the loop thread's CPU time between two turns of a ticker: wall
# time counts every moment another process held the core too (on a loaded 2-core machine, 100+ ms gaps with nothing
# wrong), CPU time only what the loop itself did meanwhile. Reading line by line, with no turn between buffered lines
# and up to 32 MB buffered (copied whole on each resize), it was 90 ms and more here; giving way every 2 ms slice with
# a small read-ahead keeps it under 10 ms. 30 ms leaves room, and the old reader still fails it.
STDERR_FLOOD_GAP_S = 0.030


async def test_a_server_flooding_stderr_with_short_lines_leaves_the_event_loop_free_to_run_between_slices() -> None:
    lines = views = 0
    done = asyncio.Event()

    def record(ev: WireEvent) -> None:
        nonlocal lines, views
        if ev.direction == "stderr" and ev.signal == "stderr_unfinished":
            views += 1  # a read that ended mid-line shows that line's start, once a read
        elif ev.direction == "stderr":
            lines += 1
            if ev.raw == "done":
                done.set()

    worst_cpu = worst_wall = 0.0

    async def ticker() -> None:  # what every timer and websocket sender sees: how long the loop kept it waiting
        nonlocal worst_cpu, worst_wall
        cpu, wall = time.thread_time(), time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            cpu_now, wall_now = time.thread_time(), time.perf_counter()
            worst_cpu, worst_wall = max(worst_cpu, cpu_now - cpu), max(worst_wall, wall_now - wall)
            cpu, wall = cpu_now, wall_now

    transport = StdioTransport([sys.executable, "-c", FLOODS_STDERR, "4"], record)  # 3 MB, a million lines
    await transport.start()
    stamping = asyncio.create_task(ticker())
    try:
        await asyncio.wait_for(done.wait(), 60)
        await stamping
    finally:
        stamping.cancel()
        await transport.close()
    assert lines == 4 * (1 << 18) + 1
    assert views <= 3 * (1 << 20) // 1024  # at most one per read, and a read is far more than 1 KiB here
    assert worst_cpu < STDERR_FLOOD_GAP_S, (
        f"the event loop ran {worst_cpu * 1000:.0f} ms (CPU; {worst_wall * 1000:.0f} ms wall) without a turn for "
        "others while stderr was read")


# One stderr "line" of 50 MB with no newline in it (a binary dump, a progress bar redrawn with \r), then a short one.
ONE_HUGE_STDERR_LINE = textwrap.dedent("""
    import sys
    for _ in range(50):
        sys.stderr.buffer.write(b"x" * (1 << 20))
    sys.stderr.buffer.write(b"\\nafter\\n")
    sys.stderr.buffer.flush()
    sys.stdin.readline()
""")


async def test_a_50_mb_stderr_line_is_kept_as_its_start_with_how_many_bytes_were_dropped_and_the_next_line_follows(
) -> None:
    seen: list[WireEvent] = []
    after = asyncio.Event()

    def record(ev: WireEvent) -> None:
        if ev.direction == "stderr":
            seen.append(ev)
            if ev.raw == "after":
                after.set()

    transport = StdioTransport([sys.executable, "-c", ONE_HUGE_STDERR_LINE], record)
    await transport.start()
    try:
        await asyncio.wait_for(after.wait(), 60)
    finally:
        await transport.close()
    [huge, last] = [ev for ev in seen if ev.signal is None]
    assert last.raw == "after"
    # While it was read, its start showed as the unfinished line: told again only when what shows changed.
    views = [ev.raw for ev in seen if ev.signal == "stderr_unfinished"]
    assert views and views[-1] == huge.raw and len(views) <= 3, len(views)
    assert 0 < len(huge.raw) <= STDERR_LINE_KEEP_BYTES and set(huge.raw) == {"x"}
    assert huge.note == f"{50 * (1 << 20) - len(huge.raw)} more bytes of this line not kept"


# Answers with one stdout line longer than the console takes (its ids first, as most SDKs write them), then waits.
ANSWERS_TOO_LONG = textwrap.dedent("""
    import json, sys
    request = json.loads(sys.stdin.readline())
    head = json.dumps({"jsonrpc": "2.0", "id": request["id"]})[:-1]
    sys.stdout.write(head + ', "result": {"content": [{"type": "text", "text": "' + "y" * 3_000_000 + '"}]}}\\n')
    sys.stdout.flush()
    sys.stdin.readline()
""")


@pytest.mark.parametrize("request_id", [7, "call-7"])
async def test_an_answer_longer_than_max_message_bytes_fails_its_request_at_once_instead_of_leaving_it_waiting(
        request_id: object) -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", ANSWERS_TOO_LONG], recorded.append,
                               max_message_bytes=1_000_000)
    await transport.start()
    try:
        exchange = await transport.open({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {}},
                                        {}, "k7")
        # Dropped, the answer never came: the request waited out its idle deadline (60 s in the console), its
        # entry saying nothing of why. Over HTTP an over-long body fails the request at once; so does this.
        with pytest.raises(ProtocolViolation, match="over the 1000000-byte limit"):
            await asyncio.wait_for(anext(exchange.frames()), DEADLINE_S)
        [note] = [ev for ev in recorded if "over the 1000000-byte limit" in (ev.note or "")]
        assert note.exchange == "k7"  # on the request's own entry, not only a session notice
    finally:
        await transport.close()


# Crashes on its first request, as a segfault in a native extension does.
SEGFAULTS = textwrap.dedent("""
    import os, signal, sys
    sys.stdin.readline()
    os.kill(os.getpid(), signal.SIGSEGV)
""")


async def test_a_server_killed_by_a_signal_is_said_to_be_killed_by_it_by_name_not_to_exit_with_a_negative_code(
) -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", SEGFAULTS], recorded.append)
    await transport.start()
    try:
        exchange = await transport.open({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}, {}, "k1")
        # "exited (code -11)" is asyncio's way of saying it; a person reading the session looks for SIGSEGV.
        with pytest.raises(ProcessExited, match=r"killed by signal SIGSEGV \(11\)"):
            await asyncio.wait_for(anext(exchange.frames()), DEADLINE_S)
        assert any("SIGSEGV" in (ev.note or "") for ev in recorded if ev.signal == "process_exited")
    finally:
        await transport.close()


# Answers with JSON the console's parser refuses although it is JSON: nested deeper than it goes, or a number with
# more digits than Python reads (4,300).
ANSWERS_UNPARSEABLE = textwrap.dedent("""
    import json, sys
    request = json.loads(sys.stdin.readline())
    head = json.dumps({"jsonrpc": "2.0", "id": request["id"]})[:-1]
    result = "[" * 100_000 + "]" * 100_000 if sys.argv[1] == "deep" else "9" * 5000
    sys.stdout.write(head + ', "result": ' + result + "}\\n")
    sys.stdout.flush()
    sys.stdin.readline()
""")


@pytest.mark.parametrize(("shape", "says"), [("deep", "recursion"), ("digits", "4300")])
async def test_an_answer_the_parser_refuses_fails_its_request_at_once_saying_why_not_that_the_server_logs_to_stdout(
        shape: str, says: str) -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", ANSWERS_UNPARSEABLE, shape], recorded.append)
    await transport.start()
    try:
        exchange = await transport.open({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {}}, {}, "k4")
        frames = exchange.frames()
        # It was taken for a log line on stdout ("stdio servers must log to stderr"), and the request waited out its
        # idle deadline for an answer that had come.
        with pytest.raises(ProtocolViolation, match=says) as caught:
            while True:
                await asyncio.wait_for(anext(frames), DEADLINE_S)
        assert "log to stderr" not in str(caught.value)
        [line] = [ev for ev in recorded if ev.direction == "in"]
        assert line.frame is not None and line.frame.kind == "invalid" and line.exchange == "k4"
        assert "log to stderr" not in str(line.frame.problem)
    finally:
        await transport.close()


# Writes its whole answer but not the newline that ends it (a write without a "\n", flushed), then waits.
ANSWERS_WITHOUT_A_NEWLINE = textwrap.dedent("""
    import json, sys
    request = json.loads(sys.stdin.readline())
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}}))
    sys.stdout.flush()
    sys.stdin.readline()
""")


async def test_an_answer_left_without_its_newline_is_pointed_out_on_its_request_while_it_waits() -> None:
    recorded: list[WireEvent] = []
    told = asyncio.Event()

    def record(ev: WireEvent) -> None:
        recorded.append(ev)
        if "no newline" in (ev.note or ""):
            told.set()

    transport = StdioTransport([sys.executable, "-c", ANSWERS_WITHOUT_A_NEWLINE], record)
    await transport.start()
    try:
        await transport.open({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}}, {}, "k2")
        # Nothing showed why the request waited out its idle deadline: the answer sat unread, waiting for its end.
        await asyncio.wait_for(told.wait(), DEADLINE_S)
        [note] = [ev for ev in recorded if "no newline" in (ev.note or "")]
        assert note.exchange == "k2" and "bytes" in (note.note or "")
    finally:
        await transport.close()
