"""Real failing targets for the connection doctor's tests, each started by its test on 127.0.0.1 and stopped by it:
a port that refuses, HTTP(S) servers that answer one way to everything (an HTML page, a 404, a 401 with a Bearer
challenge, a self-signed certificate), and a stdio command that exits at once."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import socket
import ssl
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Answer = tuple[int, list[tuple[str, str]], bytes]
PAGE = b"<!doctype html><html><head><title>Welcome</title></head><body>Our product</body></html>"
EXITS_AT_ONCE = [sys.executable, "-c", "import sys; print('fatal: API_KEY is not set', file=sys.stderr); sys.exit(3)"]
DEMO_STDIO = [sys.executable, "-m", "app.demo", "--stdio"]


def html_page(_method: str) -> Answer:
    return 200, [("Content-Type", "text/html; charset=utf-8")], PAGE


def not_found(_method: str) -> Answer:
    return 404, [("Content-Type", "text/plain")], b"Not Found"


def locked(metadata: str) -> Callable[[str], Answer]:
    challenge = f'Bearer realm="mcp", resource_metadata="{metadata}", scope="files:read"'
    return lambda _method: (401, [("Content-Type", "application/json"), ("WWW-Authenticate", challenge)],
                            b'{"error":"unauthorized"}')


class Served:
    """A real HTTP server (HTTPS with `tls`) on 127.0.0.1, on a thread, answering every request with `answer`."""

    def __init__(self, answer: Callable[[str], Answer], tls: ssl.SSLContext | None = None) -> None:
        self.methods: list[str] = []
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                outer.methods.append(self.command)
                status, headers, body = answer(self.command)
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = do_OPTIONS = _answer

            def log_message(self, format: str, *args: Any) -> None:
                return

        class _Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                return  # a client refusing the certificate ends the handshake: expected here

        self.server = _Server(("127.0.0.1", 0), _Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = int(self.server.server_address[1])
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/mcp"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       name=f"doctor-target-{self.port}", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@contextlib.contextmanager
def serving(answer: Callable[[str], Answer], tls: ssl.SSLContext | None = None) -> Iterator[Served]:
    served = Served(answer, tls)
    try:
        yield served
    finally:
        served.stop()


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A port bound but not listening, held for the test: a connect to it is refused, and nothing else takes it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def self_signed_tls(tmp_path: Path) -> ssl.SSLContext:
    """A server context with a certificate for 127.0.0.1 signed by itself, made with the cryptography package."""
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
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context
