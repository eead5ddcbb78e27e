"""One typed settings object, read once. Every field has a default and a help line.

Environment variables are MCP_CONSOLE_<FIELD> (upper case); command-line flags override them.
A test checks that the generated settings reference (docs, scripts/gen_docs.py) documents every field.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


def _help(text: str, **kw: Any) -> Any:
    return field(metadata={"help": text}, **kw)


@dataclass(slots=True)
class Settings:
    host: str = _help("Interface to bind. Wildcards (0.0.0.0, ::) are refused without allow_all_interfaces.",
                      default="127.0.0.1")
    port: int = _help("Port of the console's web server.", default=8765)
    token: str | None = _help("Owner token (16 characters or more). A random one is made per run when unset.",
                              default=None)
    data_dir: str = _help("Directory for the SQLite database and other state.",
                          default=str(Path.home() / ".mcp-console"))
    database_url: str = _help("PostgreSQL URL (postgresql://user:password@host:5432/db; sslmode=… for TLS) of a store "
                              "several console processes share; migrated on start. A team refuses one without a "
                              "password. Empty: SQLite in data_dir.", default="")
    allow_all_interfaces: bool = _help("Permit a wildcard bind (dangerous: exposes a process-spawning console).",
                                       default=False)
    allowed_hosts: str = _help("Extra comma-separated Host header values to accept besides 127.0.0.1/localhost.",
                               default="")
    request_idle_timeout_s: float = _help(
        "Seconds a request may go without any frame (progress, log, response) before the console stops waiting; "
        "every frame restarts it. Per session in the request settings.", default=60.0)
    request_max_s: float = _help("Overall maximum seconds for one request, however chatty. Per session in the "
                                 "request settings.", default=3600.0)
    server_request_timeout_s: float = _help(
        "Seconds a request from a 2025-11-25 server (elicitation, sampling) waits for someone to answer its dialog; "
        "then the console answers with a JSON-RPC error and marks the dialog timed out.", default=300.0)
    max_message_bytes: int = _help("Largest single message accepted from a target server.",
                                   default=16 * 1024 * 1024)
    mrtr_max_rounds: int = _help("Most input_required rounds one operation may take before the console stops it.",
                                 default=10)
    timeline_window: int = _help("Timeline entries a session keeps in memory (the JSON twin's window); older ones "
                                 "load from the store on demand.", default=200)
    page_entries: int = _help("Timeline entries a session page renders (at most timeline_window); live entries push "
                              "the oldest out and “Load older entries” brings them back from the server.", default=25)
    ws_queue_size: int = _help("Messages buffered per websocket before a slow tab is told to reload.",
                               default=2000)
    max_session_store_bytes: int = _help(
        "Bytes of events one session may store; past it the console stops keeping raw frames (and says so once).",
        default=256 * 1024 * 1024)
    demo_url: str = _help("URL of a demo server to offer as a one-click target (set by `mcp-console demo`).",
                          default="")
    stdio_shutdown_grace_s: float = _help("Seconds to wait after closing stdin and after SIGTERM before escalating.",
                                          default=2.0)
    public_host: str = _help("Host name the console is opened under; the owner and link cookies are honoured only "
                             "there. Default: a random mcp-….localhost name kept in data_dir (loopback or wildcard "
                             "bind), else the bind host. A team has no default: every process needs the same name, "
                             "of the deployment's own.", default="")

    sandbox_origin: str = _help("Origin of the MCP Apps sandbox proxy: another host name routed to this console "
                                "(e.g. https://apps-sandbox.example.com), never the console's own. Default: a "
                                "sibling name of a *.localhost public host (mcp-x.localhost → "
                                "mcp-x-sandbox.localhost), "
                                "or 127.0.0.1 and localhost for each other; none for other hosts (apps are then "
                                "not rendered, and the app panel says so).", default="")

    max_stream_bytes: int = _help("Most bytes read from one response stream (HTTP body or SSE, or the stdio frames of "
                                  "one request); past it the console stops reading that stream and says so.",
                                  default=64 * 1024 * 1024)
    max_entry_notification_bytes: int = _help("Most bytes of log lines kept per timeline entry; beyond it they are "
                                              "counted, not stored or pushed.", default=1024 * 1024)
    max_stderr_lines: int = _help("Most stderr lines of a stdio server stored per session; later ones are counted "
                                  "as dropped.", default=5000)
    max_websockets_per_credential: int = _help("Most open websockets for one credential (the owner token or one "
                                               "share link).", default=20)
    max_websockets: int = _help("Most open websockets in total.", default=200)
    max_request_body_bytes: int = _help("Largest request body the console accepts (checked before parsing, "
                                        "multipart and chunked included).", default=1024 * 1024)
    max_import_bytes: int = _help("Largest session file /sessions/import accepts (it is spooled to a temporary "
                                  "file and parsed as a stream, so memory does not grow with it).",
                                  default=512 * 1024 * 1024)

    default_roots: str = _help("Roots every new session starts with, sent to a server that asks (roots/list): "
                               "file://URI and an optional name, one root per line or ';' between roots. Empty: "
                               "none, so a server such as server-filesystem keeps the directories it was started "
                               "on. Each session's roots are changed under its Client settings.", default="")

    redis_url: str = _help("Redis shared by the console processes of a team (redis://:password@host:port/db, or "
                           "rediss:// for TLS). A team refuses to start without its password. Empty: one process, "
                           "the in-process hub, as ever.", default="")
    team_secret: str = _help("Secret the console processes of a team share and nothing else holds (32+ random "
                             "characters, the same on every process; required with redis_url): it signs process "
                             "registrations, bus messages and forwarded actions, so a client of Redis cannot forge "
                             "them. Never stored in Redis or PostgreSQL, never passed to a started server.",
                             default="")
    redis_prefix: str = _help("Prefix of every Redis key the console uses, so deployments can share one Redis.",
                              default="mcp-console:")
    advertise_url: str = _help("Internal base URL other console processes reach this one at (the process "
                               "directory). Its host is accepted here only for a request signed with team_secret. "
                               "Empty: http://127.0.0.1:{port}.", default="")
    lease_ttl_s: float = _help("Seconds a process's registration lives without a heartbeat; when it lapses, the "
                               "sessions it owned may be claimed by another process.", default=5.0)
    heartbeat_s: float = _help("Seconds between heartbeats renewing this process's registration.", default=1.0)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> Settings:
        env = dict(os.environ if env is None else env)
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(f"MCP_CONSOLE_{f.name.upper()}")
            if raw is not None:
                values[f.name] = _coerce(f.type, raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @property
    def advertised_url(self) -> str:
        return self.advertise_url or f"http://127.0.0.1:{self.port}"

    @property
    def db_path(self) -> Path:
        return Path(self.data_dir).expanduser() / "console.sqlite3"


def _coerce(kind: Any, raw: str) -> Any:
    kind = str(kind)
    if kind.startswith("bool"):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if kind.startswith("int"):
        return int(raw)
    if kind.startswith("float"):
        return float(raw)
    return raw


def documented_fields() -> list[tuple[str, str]]:
    return [(f.name, str(f.metadata.get("help", ""))) for f in fields(Settings)]
