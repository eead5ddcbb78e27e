"""A tiny 2025-11-25-only MCP server for the era tests: it refuses server/discover as server-everything does.

    python -m tests.legacy.server --port 8123   # Streamable HTTP on 127.0.0.1:8123/mcp (prints "listening on URL")
    python -m tests.legacy.server --port 0 --standalone   # the same, with a standalone GET stream per session
    python -m tests.legacy.server --port 0 --sse-2024     # the 2024-11-05 HTTP+SSE transport on 127.0.0.1:…/sse
    python -m tests.legacy.server --stdio
    --refuse-initialized B64: (HTTP, either) notifications/initialized is answered HTTP 400 with those bytes

Tools: `echo` (text), `headers` (the HTTP headers of that very call), and tools that send a request on the
call's own stream and return, as JSON text, the response they got ({"id": …, "result": …} or {"id": …, "error": …}):
`ask` (form-mode `elicitation/create` without `mode`), `ask_form` (with `"mode": "form"`), `ask_url` (URL mode),
`sample` (`sampling/createMessage`) and `roots` (`roots/list`); `wait` (one progress report, then waits until a
`notifications/cancelled` names its request, and then sends no answer), `id_once` (an SSE id on the priming
event only, then a log line and the answer without ids of their own) and `cancellations` (the
`notifications/cancelled` params it has received, as JSON text, with the session id each came on); `flood`
(about 5 MB of progress notifications, stopping early once cancelled); `push` (the bytes `data`, base64, written
as they are on the server-to-client stream: the session's standalone GET stream with --standalone, the one stream
with --sse-2024; `@@ID@@` in them becomes the call's id, and then they are its answer, else it answers "pushed").
Only ever binds 127.0.0.1.
"""

from __future__ import annotations

import argparse
import base64
import json
import queue
import sys
import threading
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

VERSION = "2025-11-25"
ANSWER_WAIT_S = 60.0
TOOLS = [{"name": name, "inputSchema": {"type": "object", "properties": props}} for name, props in (
    ("echo", {"text": {"type": "string"}}), ("headers", {}), ("ask", {}), ("ask_form", {}), ("ask_url", {}),
    ("sample", {}), ("roots", {}), ("wait", {}), ("cancellations", {}), ("flood", {}), ("id_once", {}),
    ("push", {"data": {"type": "string"}}))]
FLOOD_FRAMES = 5000  # progress notifications of ~1 KB each that `flood` sends unless cancelled first
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "minLength": 2}}, "required": ["name"]}
# What each asking tool sends: the method and its params.
ASKS: dict[str, tuple[str, dict[str, Any]]] = {
    "ask": ("elicitation/create", {"message": "Your name?", "requestedSchema": NAME_SCHEMA}),
    "ask_form": ("elicitation/create", {"mode": "form", "message": "Your name, please?",
                                        "requestedSchema": NAME_SCHEMA}),
    "ask_url": ("elicitation/create", {"mode": "url", "message": "Sign in to continue",
                                       "url": "https://auth.example.com/login?session=1",
                                       "elicitationId": "login-1"}),
    "sample": ("sampling/createMessage", {"messages": [{"role": "user", "content": {"type": "text",
                                                                                  "text": "Say hi"}}],
                                          "maxTokens": 20}),
    "roots": ("roots/list", {}),
}
Emit = Callable[[dict[str, Any]], None]
Push = Callable[[bytes], None]  # raw bytes onto the session's server-to-client stream
NO_ANSWER: dict[str, Any] = {}  # what `handle` returns for a request that gets no answer (cancelled, or pushed)


def answered(outcome: dict[str, Any]) -> bool:
    return "result" in outcome or "error" in outcome


class Server:
    def __init__(self) -> None:
        self.sessions: set[str] = set()
        self.answers: dict[Any, dict[str, Any]] = {}
        self.arrived = threading.Condition()
        self.cancellations: list[dict[str, Any]] = []  # params of each notifications/cancelled, with its session

    def take_notification(self, message: dict[str, Any], session: str | None) -> None:
        if message.get("method") == "notifications/cancelled":
            with self.arrived:
                self.cancellations.append({**(message.get("params") or {}), "session": session})
                self.arrived.notify_all()

    def was_cancelled(self, request_id: Any) -> bool:
        with self.arrived:
            return any(c.get("requestId") == request_id for c in self.cancellations)

    def wait_cancelled(self, request_id: Any) -> bool:
        with self.arrived:
            return self.arrived.wait_for(
                lambda: any(c.get("requestId") == request_id for c in self.cancellations), ANSWER_WAIT_S)

    def take_answer(self, message: dict[str, Any]) -> None:
        with self.arrived:
            self.answers[message.get("id")] = message
            self.arrived.notify_all()

    def wait_answer(self, request_id: str) -> dict[str, Any] | None:
        with self.arrived:
            self.arrived.wait_for(lambda: request_id in self.answers, ANSWER_WAIT_S)
            return self.answers.pop(request_id, None)

    def handle(self, message: dict[str, Any], headers: dict[str, str], emit: Emit,
               push: Push | None = None) -> dict[str, Any]:
        """The result (or error) object of one request; `emit` sends a frame on the request's own stream, `push`
        bytes on the session's server-to-client stream (None: it has none)."""
        method, params = message.get("method"), message.get("params") or {}
        if method == "initialize":
            return {"result": {"protocolVersion": VERSION, "capabilities": {"tools": {}, "logging": {}},
                               "serverInfo": {"name": "legacy-only", "version": "1"}}}
        if method == "ping":
            return {"result": {}}
        if method == "tools/list":
            return {"result": {"tools": TOOLS}}
        if method == "tools/call":
            name, args = params.get("name"), params.get("arguments") or {}
            if name == "echo":
                return _text(str(args.get("text", "")))
            if name == "headers":
                return _text(json.dumps(headers, sort_keys=True))
            if name == "id_once":  # ids on the priming event only: every later event keeps it, as SSE says
                emit({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "logger": "legacy", "data": "after the primed id"}})
                return _text("answered without an id of its own")
            if name == "push":
                if push is None:
                    return _text("no server-to-client stream to push on")
                data = base64.b64decode(str(args.get("data", "")))
                push(data.replace(b"@@ID@@", json.dumps(message.get("id")).encode()))
                return NO_ANSWER if b"@@ID@@" in data else _text("pushed")
            if name == "cancellations":
                with self.arrived:
                    return _text(json.dumps(self.cancellations))
            if name == "flood":
                for n in range(FLOOD_FRAMES):
                    if self.was_cancelled(message.get("id")):
                        return NO_ANSWER
                    emit({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": "flood", "progress": n, "message": "x" * 1000}})
                return _text("flooded")
            if name == "wait":
                token = (params.get("_meta") or {}).get("progressToken")
                if token is not None:  # proof for the test that the call is under way on the server
                    emit({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": token, "progress": 1, "total": 2}})
                if self.wait_cancelled(message.get("id")):
                    return NO_ANSWER  # a cancelled request gets no answer (2025-11-25)
                return _text("never cancelled")
            if name in ASKS:
                asked = f"{name}-{uuid.uuid4().hex[:8]}"
                ask_method, ask_params = ASKS[name]
                emit({"jsonrpc": "2.0", "id": asked, "method": ask_method, "params": ask_params})
                answer = self.wait_answer(asked)
                if answer is None:
                    return _text(json.dumps("no answer"))
                return _text(json.dumps({k: answer[k] for k in ("id", "result", "error") if k in answer}))
        return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


def _text(text: str) -> dict[str, Any]:
    return {"result": {"content": [{"type": "text", "text": text}]}}


def serve_http(port: int, standalone: bool = False, refusal: bytes | None = None) -> None:
    server = Server()
    streams: dict[str, queue.Queue[bytes]] = {}  # --standalone: what each session's GET stream is to carry

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        ids = True  # whether each event carries an SSE id of its own (`id_once`: the priming event only)

        def do_DELETE(self) -> None:
            server.sessions.discard(self.headers.get("Mcp-Session-Id", ""))
            self._reply(200, b"", "text/plain")

        def do_GET(self) -> None:
            session = self.headers.get("Mcp-Session-Id", "")
            if not standalone or session not in streams:
                self._reply(405, b"", "text/plain")  # no standalone stream
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            try:
                while True:  # until the console closes it (or the process ends)
                    chunk = streams[session].get()
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
            except OSError:
                return

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            if "method" not in body:  # a response to one of our requests
                server.take_answer(body)
                self._reply(202, b"", "text/plain")
                return
            session = self.headers.get("Mcp-Session-Id")
            if body.get("method") != "initialize" and session not in server.sessions:
                error = {"jsonrpc": "2.0", "id": body.get("id"),
                         "error": {"code": -32000, "message": "Bad Request: Server not initialized"}}
                self._reply(400, json.dumps(error).encode(), "application/json")
                return
            if "id" not in body:
                server.take_notification(body, session)
                if refusal is not None and body.get("method") == "notifications/initialized":
                    self._reply(400, refusal, "application/json")
                    return
                self._reply(202, b"", "text/plain")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            if body["method"] == "initialize":
                session = uuid.uuid4().hex
                server.sessions.add(session)
                streams[session] = queue.Queue()
                self.send_header("Mcp-Session-Id", session)
            self.end_headers()
            self.ids = (body.get("params") or {}).get("name") != "id_once"
            self._event({})  # a priming event with empty data, as the TypeScript servers send
            try:
                pushed = streams[session].put if standalone and session in streams else None
                outcome = server.handle(body, {k.lower(): v for k, v in self.headers.items()}, self._event, pushed)
                if answered(outcome):
                    self._event({"jsonrpc": "2.0", "id": body["id"], **outcome})
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                return  # the client closed the stream (as it does after a cancel)

        def _event(self, message: dict[str, Any]) -> None:
            data = json.dumps(message) if message else ""
            field = f"id: {uuid.uuid4().hex}\n" if self.ids or not message else ""
            chunk = f"{field}data: {data}\n\n".encode()
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()

        def _reply(self, status: int, payload: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening on http://127.0.0.1:{httpd.server_address[1]}/mcp", flush=True)
    httpd.serve_forever()


def serve_sse_2024(port: int, refusal: bytes | None = None) -> None:
    """The 2024-11-05 HTTP+SSE transport: GET /sse is the one stream (its first event names /messages?sessionId=…
    to POST to); every POST is answered 202 and what it asks for is answered on that stream."""
    server = Server()
    streams: dict[str, queue.Queue[bytes]] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            session = uuid.uuid4().hex
            streams[session] = out = queue.Queue()
            self.close_connection = True
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                             + f"event: endpoint\ndata: /messages?sessionId={session}\n\n".encode())
            self.wfile.flush()
            try:
                while True:  # until the console closes it (or the process ends)
                    self.wfile.write(out.get())
                    self.wfile.flush()
            except OSError:
                return

        def do_POST(self) -> None:
            session = parse_qs(urlsplit(self.path).query).get("sessionId", [""])[0]
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            if session not in streams:
                self.wfile.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            if refusal is not None and body.get("method") == "notifications/initialized":
                self.wfile.write(b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
                                 + f"Content-Length: {len(refusal)}\r\n\r\n".encode() + refusal)
                return
            self.wfile.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            self.wfile.flush()
            out = streams[session]
            if "method" not in body:
                server.take_answer(body)
            elif "id" not in body:
                server.take_notification(body, session)
            else:  # a thread per request: `ask` waits for an answer that comes as a later POST
                threading.Thread(target=self._run, args=(body, out), daemon=True).start()

        def _run(self, message: dict[str, Any], out: queue.Queue[bytes]) -> None:
            def emit(frame: dict[str, Any]) -> None:
                out.put(f"data: {json.dumps(frame)}\n\n".encode())

            outcome = server.handle(message, {k.lower(): v for k, v in self.headers.items()}, emit, out.put)
            if message.get("method") == "initialize" and "result" in outcome:
                outcome["result"]["protocolVersion"] = "2024-11-05"
            if answered(outcome):
                emit({"jsonrpc": "2.0", "id": message["id"], **outcome})

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    httpd.daemon_threads = True
    print(f"listening on http://127.0.0.1:{httpd.server_address[1]}/sse", flush=True)
    httpd.serve_forever()


def serve_stdio() -> None:
    server = Server()
    lock = threading.Lock()

    def emit(message: dict[str, Any]) -> None:
        with lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    def run(message: dict[str, Any]) -> None:
        outcome = server.handle(message, {}, emit)
        if answered(outcome):
            emit({"jsonrpc": "2.0", "id": message["id"], **outcome})

    for line in sys.stdin:
        message = json.loads(line)
        if "method" not in message:
            server.take_answer(message)
        elif message.get("method") == "server/discover":
            emit({"jsonrpc": "2.0", "id": message["id"],
                  "error": {"code": -32601, "message": "Method not found: server/discover"}})
        elif "id" not in message:
            server.take_notification(message, None)
        else:  # a thread per request: `ask` waits for an answer that comes on this same stdin
            threading.Thread(target=run, args=(message,), daemon=True).start()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--standalone", action="store_true", help="offer a standalone GET stream per session")
    parser.add_argument("--sse-2024", action="store_true", help="the 2024-11-05 HTTP+SSE transport instead")
    parser.add_argument("--refuse-initialized", metavar="B64", help="answer notifications/initialized HTTP 400 "
                                                                    "with these bytes (base64)")
    args = parser.parse_args()
    refusal = base64.b64decode(args.refuse_initialized) if args.refuse_initialized is not None else None
    if args.stdio:
        serve_stdio()
    elif args.sse_2024:
        serve_sse_2024(args.port, refusal)
    else:
        serve_http(args.port, args.standalone, refusal)


if __name__ == "__main__":
    main()
