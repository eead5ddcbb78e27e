"""A TCP gate in front of a real server (PostgreSQL in the tests): it forwards bytes both ways until it is shut,
then holds them until it opens again, so the client behind it waits as it would on a database that went silent.

Threads, not the event loop: the console under test shares the test's loop, and a console that (wrongly) waited
on its store there would also stop a gate run on that loop, and the test would hang instead of failing. `shut`
takes a deadline after which the gate opens by itself and says so (`gave_up`): a test can then tell "the
console's loop waited for the store" from "the store was waited for off the loop".
"""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpGate:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._open = threading.Event()
        self._open.set()
        self._timer: threading.Timer | None = None
        self.gave_up = False  # the last shut ended at its deadline, not by `open()`
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, name="tcp-gate-accept", daemon=True).start()

    def shut(self, deadline_s: float) -> None:
        """Hold every byte from now on; open again by itself after `deadline_s` (and set `gave_up`)."""
        self.gave_up = False
        self._open.clear()
        self._timer = threading.Timer(deadline_s, self._give_up)
        self._timer.daemon = True
        self._timer.start()

    def open(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._open.set()

    @property
    def is_shut(self) -> bool:
        return not self._open.is_set()

    def close(self) -> None:
        self.open()
        for sock in [self._listener, *self._sockets]:
            with contextlib.suppress(OSError):
                sock.close()

    def _give_up(self) -> None:
        self.gave_up = True
        self._open.set()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self._upstream)
            except OSError:
                client.close()
                continue
            self._sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), name="tcp-gate-pump", daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if not data:
                with contextlib.suppress(OSError):
                    sink.shutdown(socket.SHUT_WR)
                return
            self._open.wait()
            try:
                sink.sendall(data)
            except OSError:
                return
