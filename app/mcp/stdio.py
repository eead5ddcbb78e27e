"""stdio: the server is a subprocess; newline-delimited JSON on stdin/stdout, stderr is a log.

One reader task routes every stdout line: responses by id, progress by token, listen-stream
notifications by subscriptionId. Whatever matches nothing is still recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from app.mcp import descendants
from app.mcp.errors import ConnectFailed, ProcessExited, ProtocolViolation, StreamTooLarge
from app.mcp.fair import FairShare
from app.mcp.jsonrpc import Frame, encode, notification, parse_frame, parse_line
from app.mcp.lines import Line, LineSplitter
from app.mcp.secret import Secret, reveal
from app.mcp.stderr import STDERR_LINE_KEEP_BYTES, ShownLine, TerminalLines, stderr_text
from app.mcp.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_STREAM_BYTES,
    SESSION_MESSAGE_NOTE,
    ServerMessageSink,
    replaced,
    replaced_note,
    stream_bound_note,
)
from app.mcp.wire import Recorder, WireEvent

SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"
# The console's own settings (MCP_CONSOLE_TOKEN, the store's and Redis's URLs with their passwords): never inherited
# by a server it starts. The README says to pass the owner token this way, and a server that prints its
# environment on stderr (a debug mode) showed it to every link holder in the stderr panel.
CONSOLE_ENV_PREFIX = "MCP_CONSOLE_"


def is_assignment(arg: str) -> bool:
    """`NAME=value` as a shell takes it before a command: a name of letters, digits and _, not starting with a
    digit."""
    name, sep, _ = arg.partition("=")
    return bool(sep) and name.replace("_", "a").isalnum() and name.isascii() and not name[:1].isdigit()


def leading_assignments(argv: Sequence[str]) -> int:
    """How many of a command line's first arguments are `NAME=value` assignments."""
    n = 0
    while n < len(argv) and is_assignment(argv[n]):
        n += 1
    return n


def inherited_env() -> dict[str, str]:
    """This process's environment as a started server gets it: without the console's own settings."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith(CONSOLE_ENV_PREFIX)}
_EXITED = object()
_BOUNDED = object()  # the request's frames passed max_stream_bytes: its reader stops here
_UNREADABLE = object()  # the request's answer came but cannot be read (too long, refused by the parser): it
# ends, bound_note says why
# The start of an answer as SDKs write it: `{"jsonrpc": "2.0", "id": 7, "result"` (or "error"), the id a number or a
# short string. Read off the start of a line too long to parse; an id written after the result is not found.
_ANSWER_HEAD = re.compile(rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"[^"]{0,16}"\s*,\s*)?"id"\s*:\s*'
                          rb'(-?\d{1,30}|"(?:[^"\\]|\\.){0,200}")\s*,\s*"(?:result|error)"')
STDIO_LINES_PER_YIELD = 32  # a line is one frame: yield to the loop every so many
PIPE_READ_BYTES = 64 * 1024  # one read of stdout or stderr: what a reader holds at a time, besides a line's start
PIPE_BUFFER_BYTES = 64 * 1024  # read ahead of a reader: asyncio stops reading the pipe at twice this
UNFINISHED_LINE_S = 2.0  # a stdout line begun and not ended for this long is pointed out, once
MUTED_KEPT = 32  # requests past the bound whose late frames we still recognise (and drop)
EXIT_DRAIN_S = 1.0  # after the process exits, how long its stdout may still deliver before its requests end
# On close, once the process is gone: how long its stderr may still be read to EOF before the reader is cancelled.
# A killed server's pipe holds at most what the kernel and asyncio buffered (some 200 KB: milliseconds to read); only
# something it left behind holding the pipe open keeps it from ending, and that must not hold the close.
STDERR_DRAIN_S = 0.5
EXIT_POLL_S = 0.2  # how often the exit watcher looks at the process's return code
MARKED_ROUNDS = 12  # scans for what still carries the mark after close (each stops and kills what it finds)
EMPTY_SCANS = 3  # scans in a row that find nothing before the close takes it that nothing carries the mark
DEFAULT_WRITE_TIMEOUT_S = 30.0  # a server that reads none of its stdin for this long fails the write


def _key(value: Any) -> Any:
    """An id, token or subscription id as a lookup key: a list or object (no id the console sends) is none."""
    try:
        hash(value)
    except TypeError:
        return None
    return value


class StdioExchange:
    def __init__(self, transport: StdioTransport, request_id: Any, key: str, is_listen: bool = False) -> None:
        self._t = transport
        self.is_listen = is_listen
        self.request_id = request_id
        self.key = key
        self.queue: asyncio.Queue[Frame | object] = asyncio.Queue()
        self.bytes_in = 0
        # Past max_stream_bytes the request is muted: its frames are counted and dropped, not routed
        # or recorded, until its final response (or the server's cancel) says it is over.
        self.muted = False
        # Its final response has been routed to it: it asks nothing more of the server, so a server request that
        # comes after (often in the same read) is not its own (see _target_for).
        self.answered = False
        self.dropped_frames = 0
        self.dropped_bytes = 0
        self.bound_note = ""

    async def frames(self) -> AsyncIterator[Frame]:
        try:
            while True:
                item = await self.queue.get()
                if item is _EXITED:
                    raise ProcessExited(self._t.exit_reason())
                if item is _UNREADABLE:
                    raise ProtocolViolation(self.bound_note)
                if item is _BOUNDED:
                    with contextlib.suppress(ProcessExited, ProtocolViolation):  # a dead server needs no cancel
                        await self.cancel("the response stream passed the console's max_stream_bytes")
                    raise StreamTooLarge(self.bound_note)
                assert isinstance(item, Frame)
                yield item
                if item.kind in ("response", "error") and item.id == self.request_id:
                    return
                if item.method == "notifications/cancelled":
                    return  # the server ended this request's stream; nothing more will come
        finally:
            self._t.forget(self)

    async def cancel(self, reason: str, notify: bool = False) -> None:
        if self.request_id in self._t.cancelled_ids:
            return  # said once already (a bounded stream cancels itself before the client hears of it)
        self._t.cancelled_ids.add(self.request_id)
        message = notification("notifications/cancelled", {"requestId": self.request_id, "reason": reason})
        await self._t.notify(message, {}, self.key)

    async def answer(self, message: dict[str, Any]) -> None:
        await self._t.notify(message, {}, self.key)  # one more line on stdin, like any message

    async def aclose(self) -> None:
        self._t.forget(self)


class StdioTransport:
    kind = "stdio"

    def __init__(
        self,
        argv: Sequence[str | Secret],
        record: Recorder,
        env: dict[str, str] | None = None,
        cwd: str | Secret | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        shutdown_grace_s: float = 2.0,
        max_stream_bytes: int = DEFAULT_MAX_STREAM_BYTES,
        write_timeout_s: float = DEFAULT_WRITE_TIMEOUT_S,
        max_stderr_line_bytes: int = STDERR_LINE_KEEP_BYTES,
    ) -> None:
        plain = [reveal(a) for a in argv]
        # `NAME=value prog …` as a shell reads it: the leading assignments are the server's environment (no
        # program is named `NAME=value`); `env NAME=value prog` is left to env(1) as typed.
        lead = leading_assignments(plain)
        if 0 < lead < len(plain):
            env = {**(env or {}), **dict(a.split("=", 1) for a in plain[:lead])}
        self.argv = plain[lead:] if lead < len(plain) else plain
        # How the notes name the command: pasteable back into a shell, a secret argument as its mask.
        self.target = " ".join(str(a) if isinstance(a, Secret) else shlex.quote(a) for a in argv)
        self.record = record
        self._env = env
        self._cwd = None if cwd is None else reveal(cwd)
        self._max = max_message_bytes
        self._max_stream = max_stream_bytes
        self._muted: list[StdioExchange] = []
        self._grace = shutdown_grace_s
        self._write_timeout = write_timeout_s
        self._max_stderr_line = max_stderr_line_bytes
        self._last_line_at = 0.0  # loop time of the last stdout line read
        self._ended = False  # the process exited or its stdout closed: its requests were told, nothing more comes
        self._end_reason = ""
        self._proc: asyncio.subprocess.Process | None = None
        self._started_at: int | None = None
        self._mark = ""  # the value of descendants.MARK_ENV this start of the server was given
        self._pending: dict[Any, StdioExchange] = {}
        self._by_token: dict[Any, StdioExchange] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._stderr_reader: asyncio.Task[None] | None = None  # one of _tasks: close() lets it read to EOF first
        self.returncode: int | None = None
        self.cancelled_ids: set[Any] = set()  # to flag frames that still arrive after a cancel
        self.on_server_message: ServerMessageSink | None = None

    async def start(self) -> None:
        # What the owner set for this target is kept; the mark is how close() finds what the server left behind.
        self._mark = descendants.new_mark()
        env = {**inherited_env(), **(self._env or {}), descendants.MARK_ENV: self._mark}
        try:
            # The limit is the read-ahead only (the readers split lines themselves): asyncio reads up to twice it
            # ahead of a reader. At a message's size (16 MB) a flood kept 32 MB buffered, copied whole each time
            # the buffer was resized, tens of ms of the loop each.
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=env, cwd=self._cwd, limit=PIPE_BUFFER_BYTES,
                start_new_session=True,
            )
        except OSError as exc:
            note = f"could not start {self.target!r}: {exc.strerror or exc}"
            self.record(WireEvent(direction="transport", raw="", note=note))
            raise ConnectFailed(note) from exc
        self._started_at = descendants.start_time(self._proc.pid)  # which process the pid is (see close)
        self.record(WireEvent(direction="transport", raw="", note=f"started pid {self._proc.pid}: {self.target}",
                              signal="process_started"))
        loop = asyncio.get_running_loop()
        stdout_reader = loop.create_task(self._read_stdout(), name=f"stdio-stdout-{self._proc.pid}")
        self._stderr_reader = loop.create_task(self._read_stderr(), name=f"stdio-stderr-{self._proc.pid}")
        watcher = loop.create_task(self._watch_exit(stdout_reader), name=f"stdio-exit-{self._proc.pid}")
        self._tasks = [stdout_reader, self._stderr_reader, watcher]

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None and not self._ended

    def exit_reason(self) -> str:
        if self._end_reason:
            return self._end_reason
        code = self._proc.returncode if self._proc else None
        if code is None:
            return "the server process is gone"
        if code < 0:  # asyncio's way of saying a signal ended it: the name is what a person looks for
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = "an unknown signal"
            return f"the server process was killed by signal {name} ({-code})"
        return f"the server process exited (code {code})"

    async def _read_stdout(self) -> None:
        """Route each stdout line. Read in chunks and split here (app/mcp/lines.py), giving way to the loop once per
        slice: a flood neither keeps the loop nor makes asyncio buffer (and copy) tens of MB ahead."""
        assert self._proc and self._proc.stdout
        stream = self._proc.stdout
        lines = LineSplitter(self._max)
        fair = FairShare(STDIO_LINES_PER_YIELD)
        loop = asyncio.get_running_loop()
        told = False  # the unfinished line was pointed out (once per line)
        while True:
            if fair.due():
                await fair.give_way()
            if lines.pending and not told:
                try:  # a cancelled read loses nothing: what came stays in the stream's buffer
                    chunk = await asyncio.wait_for(stream.read(PIPE_READ_BYTES), UNFINISHED_LINE_S)
                except TimeoutError:
                    told = True
                    self._unfinished_line(lines)
                    continue
            else:
                chunk = await stream.read(PIPE_READ_BYTES)
            if not chunk:
                last = lines.end()
                if last is not None:
                    self._stdout_line(last)  # the last line before EOF, without its newline
                break
            self._last_line_at = loop.time()  # still reading (a long line too): the exit watcher waits
            for line in lines.feed(chunk):
                told = False  # a line ended: the one pending now is another
                self._stdout_line(line)
                if fair.due():
                    await fair.give_way()
        if self._ended:
            return
        if not await self._exits_within(self._grace):
            # Its stdout is closed, so no answer can come; the process itself is ended on close.
            self._end(f"the server closed its stdout but is still running (pid {self._proc.pid}); "
                      "nothing it answers can arrive")
            return
        self._end()

    async def _watch_exit(self, reader: asyncio.Task[None]) -> None:
        """The process exited: its requests end, even while something it left behind holds stdout open."""
        while not await self._exits_within(3600.0):
            pass
        # What it wrote before it exited is still read: until stdout ends, or no line came for EXIT_DRAIN_S (a big
        # last answer takes as long as it takes; a child holding the pipe and writing nothing does not).
        loop = asyncio.get_running_loop()
        # The quiet counts from the exit at the earliest: a line read before it says nothing of what comes after.
        # Counted from the last line alone, a writer it left behind whose first line came after the exit was seen
        # (its interpreter slow to start, under load) had been "quiet" since the session began: its request ended
        # at once, with ProcessExited, and the answer came to no one.
        exited_at = loop.time()
        while not reader.done():
            quiet = loop.time() - max(self._last_line_at, exited_at)
            if quiet >= EXIT_DRAIN_S:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), EXIT_DRAIN_S - quiet)
        if not self._ended:
            self._end()
            self.record(WireEvent(direction="transport", raw="",
                                  note="its stdout is still held open by a process it left behind"))

    async def _exits_within(self, timeout: float) -> bool:
        """Whether the process exits within `timeout` s. Its return code, not `wait()`: asyncio's wait() returns
        only once every pipe is closed too, and a child the server left behind may hold them for good."""
        assert self._proc
        deadline = asyncio.get_running_loop().time() + timeout
        while self._proc.returncode is None:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return False
            await asyncio.sleep(min(EXIT_POLL_S, left))
        return True

    def _end(self, reason: str | None = None, record: bool = True) -> None:
        """Tell every request in flight, once, that nothing more will come from the server."""
        if self._ended:
            return
        assert self._proc
        self.returncode = self._proc.returncode
        if reason:
            self._end_reason = reason
        self._ended = True
        if record:
            self.record(WireEvent(direction="transport", raw="", note=self.exit_reason(), signal="process_exited"))
        for exchange in list(self._pending.values()):
            exchange.queue.put_nowait(_EXITED)

    def _unfinished_line(self, lines: LineSplitter) -> None:
        """A line without its newline for a while: a server that leaves off the newline after a message (or does
        not flush it) looked to the console like one that never answered. Said on the request it would answer."""
        target = self._answered_by(lines.head(512))
        note = (f"stdout has {lines.pending} bytes with no newline after them for {UNFINISHED_LINE_S:g} s: a stdio "
                "message ends with a newline, and nothing is read until it comes (has the server flushed it?)")
        self.record(WireEvent(direction="transport", raw="", exchange=target.key if target else None, note=note))

    def _stdout_line(self, line: Line) -> None:
        if line.cut:
            self._drop_long_line(line)
            return
        text = line.data.decode("utf-8", errors="replace").rstrip("\r")
        if text.strip():
            try:
                self._route(text, replaced_note("utf-8") if replaced(line.data, text, "utf-8") else None)
            except Exception as exc:  # one line must never end the reader: every request would hang
                self.record(WireEvent(direction="transport", raw="",
                                      note=f"a stdout line could not be routed ({type(exc).__name__}: {exc})"))

    def _drop_long_line(self, line: Line) -> None:
        """Drop a line over max_message_bytes. When its start shows it answers a request in flight, that request
        fails now, as an over-long HTTP body does: left waiting, it waited out its idle deadline with nothing on
        its entry to say why."""
        note = f"stdout line of {line.size} bytes is over the {self._max}-byte limit; dropped"
        target = self._answered_by(line.data[:512])
        if target is None:
            self.record(WireEvent(direction="transport", raw="", note=note))
            return
        target.bound_note = f"its answer, a {note} (setting max_message_bytes)"
        self.record(WireEvent(direction="transport", raw="", exchange=target.key, note=target.bound_note))
        target.answered = True  # a second answer after this one is flagged as such
        target.queue.put_nowait(_UNREADABLE)

    def _answered_by(self, head: bytes) -> StdioExchange | None:
        """The request in flight a line starting with `head` answers, when its start says so."""
        match = _ANSWER_HEAD.match(head)
        if match is None:
            return None
        try:
            request_id = json.loads(match.group(1))
        except ValueError:
            return None
        target = self._pending.get(_key(request_id))
        return target if target is not None and not target.is_listen and not target.answered else None

    def _route(self, text: str, replacing: str | None = None) -> None:
        """File one stdout line; `replacing` says the line's bytes were not all UTF-8 (shown as U+FFFD)."""
        frame = parse_line(text)
        if frame.kind == "invalid":
            self._route_invalid(text, frame)
            return
        target = self._target_for(frame)
        if target is not None and target.answered and frame.kind in ("response", "error") \
                and frame.id == target.request_id:
            # Its answer came already (often in the same read, before the request was let go): this one is no part
            # of it, and filed under it no one was told. Recorded with no exchange, it is the session's warning.
            self.record(WireEvent(direction="in", raw=text, frame=frame,
                                  note="answers a request that was already answered"))
            return
        if target is not None and self._bounded(target, frame, len(text.encode("utf-8", errors="replace"))):
            return
        if target is None and frame.kind in ("notification", "request") and self.on_server_message is not None:
            # list_changed, resources/updated, a log line or a ping outside any request: the session's, not a stray.
            self.record(WireEvent(direction="in", raw=text, frame=frame, signal="session_message",
                                  note=f"{SESSION_MESSAGE_NOTE}; {replacing}" if replacing else SESSION_MESSAGE_NOTE))
            self.on_server_message(frame)
            return
        late = target is None and frame.kind in ("response", "error") and _key(frame.id) in self.cancelled_ids
        note = None if target else (
            "arrived after its request was cancelled" if late else "matches no request in flight")
        if replacing is not None:
            note = f"{note}; {replacing}" if note else replacing
        self.record(WireEvent(direction="in", raw=text, frame=frame, exchange=target.key if target else None,
                              note=note))
        if target is not None:
            if frame.kind in ("response", "error") and frame.id == target.request_id:
                target.answered = True
            target.queue.put_nowait(frame)

    def _bounded(self, target: StdioExchange, frame: Frame, size: int) -> bool:
        """Count a frame against its request's bound; True when it must be dropped (not routed, not recorded)."""
        target.bytes_in += size
        if target.muted:
            target.dropped_frames += 1
            target.dropped_bytes += size
            if (frame.kind in ("response", "error") and frame.id == target.request_id) \
                    or frame.method == "notifications/cancelled":
                self.record(WireEvent(direction="transport", raw="", exchange=target.key,
                                      note=f"{target.dropped_frames} frames ({target.dropped_bytes} bytes) arrived "
                                           "after the stream bound and were not kept"))
                self._unmute(target)
            return True
        if target.bytes_in <= self._max_stream:
            return False
        target.muted = True
        target.dropped_frames, target.dropped_bytes = 1, size
        target.bound_note = stream_bound_note(self._max_stream, target.bytes_in)
        self.record(WireEvent(direction="transport", raw="", exchange=target.key, note=target.bound_note))
        target.queue.put_nowait(_BOUNDED)
        return True

    def _unmute(self, exchange: StdioExchange) -> None:
        exchange.muted = False
        if exchange in self._muted:
            self._muted.remove(exchange)
        self.forget(exchange)
    def _route_invalid(self, text: str, frame: Frame) -> None:
        """A line that is no message carries no id: every ordinary request waiting may be the one it
        broke (or the one whose server is printing instead of answering), so each gets the warning."""
        target = self._answered_by(text[:512].encode("utf-8", errors="replace"))
        if target is not None:
            # Its start says it answers this request (a result the parser refuses: nested too deep, a number of
            # too many digits): the request ends now with the reason, rather than wait out its idle deadline.
            self.record(WireEvent(direction="in", raw=text, frame=frame, exchange=target.key))
            target.bound_note = f"its answer could not be read: {frame.problem}"
            target.answered = True
            target.queue.put_nowait(_UNREADABLE)
            return
        waiting = [x for x in self._pending.values() if not x.is_listen]
        # Recorded once for the session (it belongs to no single request), then told to each waiting one.
        self.record(WireEvent(direction="in", raw=text, frame=frame))
        for exchange in waiting:
            exchange.queue.put_nowait(frame)

    def _target_for(self, frame: Frame) -> StdioExchange | None:
        if frame.kind in ("response", "error"):
            return self._pending.get(_key(frame.id))
        params = frame.params
        if frame.method == "notifications/cancelled":
            # A server ends a listen stream this way on stdio; it belongs to that request.
            return self._pending.get(_key(params.get("requestId")))
        token = _key(params.get("progressToken"))
        if token is not None and token in self._by_token:
            return self._by_token[token]
        meta = params.get("_meta")
        if isinstance(meta, dict) and SUBSCRIPTION_KEY in meta:
            return self._pending.get(_key(meta[SUBSCRIPTION_KEY]))
        if frame.kind == "request":
            # A 2025-11-25 server asks (elicitation, sampling, roots) while handling one of ours, but stdio says
            # not which: the newest ordinary request in flight is the likeliest (and, with one, the only) owner.
            # One already answered is no owner: server-everything, told the roots changed, asks roots/list right
            # after answering a call; put in that call's finished stream, the question was never answered.
            asking = [x for x in self._pending.values() if not x.is_listen and not x.muted and not x.answered]
            return asking[-1] if asking else None
        if frame.method == "notifications/message":
            # Log lines carry no id; they ride only on a request's own stream, never on a listen.
            # With one ordinary request in flight there is no doubt whose they are.
            ordinary = [x for x in self._pending.values() if not x.is_listen]
            muted = [x for x in ordinary if x.muted]
            if muted:
                # A request we stopped reading is still flooding: its tail is the likeliest owner, and
                # must not spill into (and past the bound of) whatever request came next.
                return muted[-1]
            if len(ordinary) == 1:
                return ordinary[0]
        return None

    async def _read_stderr(self) -> None:
        """Record each stderr line, its start only when it is long. Gives way to the loop once per slice, as the
        stdout reader does: a flood of buffered short lines stalled every timer for hundreds of ms."""
        assert self._proc and self._proc.stderr
        stream = self._proc.stderr
        lines = TerminalLines(self._max_stderr_line)
        fair = FairShare(STDIO_LINES_PER_YIELD)
        shown: bytes | None = None  # the unfinished line's view last told, to tell only a change
        batch: Iterator[Line] = iter(())  # the lines of the chunk being recorded
        try:
            while True:
                if fair.due():
                    await fair.give_way()
                chunk = await stream.read(PIPE_READ_BYTES)
                if not chunk:
                    break
                batch = lines.feed(chunk)
                for line in batch:
                    shown = None  # a line ended: the console shows no unfinished one until told again
                    self._record_stderr(line)
                    if fair.due():
                        await fair.give_way()
                # At most once a read, and only when it changed: what a terminal shows now of the line not yet ended.
                view = lines.shown()
                if view is not None and view.data != shown:
                    shown = view.data
                    text, dropped = stderr_text(view.data, view.size)
                    self.record(WireEvent(direction="stderr", raw=text, signal="stderr_unfinished",
                                          note=f"{dropped} more bytes of this line not kept" if dropped else None))
        except asyncio.CancelledError:
            # Cancelled by close() before EOF (something left behind holds the pipe, or the drain ran out): what
            # was read is still the server's, its last words most of all ("fatal: …" written without a newline
            # just before it died). The rest of the chunk and the line left unfinished are kept, as at EOF.
            for line in batch:
                self._record_stderr(line)
            self._end_stderr(lines)
            raise
        self._end_stderr(lines)

    def _end_stderr(self, lines: TerminalLines) -> None:
        last = lines.end()
        if last is not None:
            self._record_stderr(last)  # the last line, without its newline

    def _record_stderr(self, line: Line) -> None:
        text, dropped = stderr_text(line.data, line.size)
        notes = [f"{dropped} more bytes of this line not kept"] if dropped else []
        if isinstance(line, ShownLine) and line.redrawn:
            # Redrawn with \r (a progress bar): a terminal shows the last segment, and so does the console.
            notes.append(f"{line.redrawn} bytes drawn over before this")
        if replaced(line.data, text, "utf-8"):  # as a stdout line says it (not for a character the cut split)
            notes.append(replaced_note("utf-8"))
        self.record(WireEvent(direction="stderr", raw=text, note="; ".join(notes) or None))

    async def _write(self, message: dict[str, Any], key: str) -> None:
        if not self.alive or self._proc is None or self._proc.stdin is None:
            raise ProcessExited(self.exit_reason())
        try:
            text = encode(message)
            line = text.encode("utf-8") + b"\n"  # a lone surrogate has no UTF-8 form: refused before it is recorded
        except ValueError as exc:  # UnicodeEncodeError is one
            note = f"the request cannot be sent as JSON: {exc}"
            self.record(WireEvent(direction="transport", raw="", exchange=key, note=note))  # as HTTP says it
            raise ProtocolViolation(note) from exc
        self.record(WireEvent(direction="out", raw=text, frame=parse_frame(text), exchange=key))
        # No lock: write() puts the whole line in the pipe's buffer at once (lines never interleave), and a
        # server that reads nothing must not hold every later message, a cancel too, behind one stuck drain.
        try:
            self._proc.stdin.write(line)
            await asyncio.wait_for(self._proc.stdin.drain(), self._write_timeout)
        except (BrokenPipeError, ConnectionResetError) as exc:
            # The pipe broke as the process ended, before its exit was seen: wait a moment, so the message (the
            # session's status) names its exit code, not only "the server process is gone".
            await self._exits_within(EXIT_DRAIN_S)
            raise ProcessExited(self.exit_reason()) from exc
        except TimeoutError as exc:
            note = (f"the server is not reading its stdin: {len(line)} bytes still unsent after "
                    f"{self._write_timeout:g} s (they go out if it reads again)")
            self.record(WireEvent(direction="transport", raw="", exchange=key, note=note))
            raise ProtocolViolation(note) from exc

    async def open(self, message: dict[str, Any], headers: dict[str, str], key: str) -> StdioExchange:
        exchange = StdioExchange(self, message.get("id"), key, message.get("method") == "subscriptions/listen")
        self._pending[exchange.request_id] = exchange
        meta = message.get("params", {}).get("_meta", {})
        if isinstance(meta, dict) and meta.get("progressToken") is not None:
            self._by_token[meta["progressToken"]] = exchange
        try:
            await self._write(message, key)
        except (ProcessExited, ProtocolViolation):
            self.forget(exchange)
            raise
        return exchange

    def forget(self, exchange: StdioExchange) -> None:
        if exchange.muted:
            # Still registered, so its late frames are recognised and dropped; only the newest few.
            if exchange not in self._muted:
                self._muted.append(exchange)
                while len(self._muted) > MUTED_KEPT:
                    self._unmute(self._muted[0])
            return
        if self._pending.get(exchange.request_id) is exchange:
            del self._pending[exchange.request_id]
        for token, owner in list(self._by_token.items()):
            if owner is exchange:
                del self._by_token[token]

    async def _descendants(self) -> descendants.Found:
        """The server's descendants: those under it while it runs, and those carrying its mark, which are still found
        once it has exited (its pid, maybe reused, is then not walked). Read off the loop: a walk of /proc reads
        every process's stat, tens of ms on a busy host."""
        proc = self._proc
        if proc is None:
            return {}
        return await asyncio.to_thread(self._find_descendants, proc.pid, proc.returncode is None)

    def _find_descendants(self, pid: int, running: bool) -> descendants.Found:
        found = descendants.descendants(pid, self._started_at) if running else {}
        if self._mark:
            found.update(descendants.marked(self._mark, exclude=pid))
        return found

    async def _end_descendants(self, found: descendants.Found) -> None:
        """SIGTERM the descendants still running, then SIGKILL what is left after the grace period."""
        if not descendants.living(found):
            return
        descendants.send(found, signal.SIGTERM)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._grace
        while descendants.living(found) and loop.time() < deadline:
            await asyncio.sleep(min(EXIT_POLL_S, max(0.0, deadline - loop.time())))
        descendants.send(found, signal.SIGKILL)

    async def _end_marked(self, pid: int) -> None:
        """Whatever still carries the server's mark once the rest has ended. A daemon that forks anew and exits
        (a new pid every few ms) was never among those found: by the time a signal went out, that pid was gone and
        its child went on. Each round kills the sessions such processes made for themselves (their whole group at
        once, whatever pid it is on now), stops what else a scan finds (a stopped process forks no more), scans
        again for the children made in between, and kills them all; until EMPTY_SCANS scans in a row find nothing."""
        empty = 0
        for _ in range(MARKED_ROUNDS):
            sessions: set[int] = set()
            found = await asyncio.to_thread(descendants.marked, self._mark, pid, sessions)
            if not found:
                # A scan can miss such a daemon: it lists the pids, the one listed exits before it is read, and its
                # child came after the listing. Only a few empty scans in a row say nothing is left.
                empty += 1
                if empty == EMPTY_SCANS:
                    return
                continue
            empty = 0
            descendants.kill_groups(sessions)
            descendants.send(found, signal.SIGSTOP)
            sessions.clear()
            found.update(await asyncio.to_thread(descendants.marked, self._mark, pid, sessions))
            descendants.kill_groups(sessions)
            descendants.send(found, signal.SIGKILL)

    async def notify(self, message: dict[str, Any], headers: dict[str, str], key: str) -> None:
        await self._write(message, key)

    async def close(self) -> None:
        """Close stdin, wait; then SIGTERM, wait; then SIGKILL. Every wait is bounded. Its descendants outside its
        process group (a setsid() daemon) are found first and ended too (app/mcp/descendants.py)."""
        proc = self._proc
        if proc is None:
            return
        found: descendants.Found = {}
        if proc.returncode is None:
            # Before its stdin closes: a server that exits then leaves its children re-parented, found by nothing.
            found = await self._descendants()
            if proc.stdin:
                with contextlib.suppress(Exception):
                    proc.stdin.close()
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    found.update(await self._descendants())  # any it started while it was asked to stop
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, sig)
                    descendants.send(found, sig)
                if await self._exits_within(self._grace):
                    break
        else:
            # It exited by itself: what it left behind outside its process group is found by its mark alone.
            found = await self._descendants()
        # What the server left behind in its process group (a child holding its pipes) ends with it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        await self._end_descendants(found)
        if self._mark:
            await self._end_marked(proc.pid)
        if proc.returncode is not None and self._stderr_reader is not None:
            # What it wrote last may still be in the pipe, unread: cancelled at once, its last words were lost.
            await asyncio.wait({self._stderr_reader}, timeout=STDERR_DRAIN_S)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        # Our ends of its pipes: a child that left the process group (a daemon's double fork) holds the other ends
        # and no EOF ever closes them; kept, each such session leaked its file descriptors.
        pipes = getattr(proc, "_transport", None)  # asyncio's subprocess transport (no public handle)
        if pipes is not None:
            with contextlib.suppress(Exception):
                pipes.close()
        # A request still waiting hears it from the close: the readers that would have told it are cancelled.
        # Not recorded: the console stopped it (a delete, a reconnect), which is no news on the timeline.
        self._end(record=False)
