"""`mcp-console` (also `python -m app`): serve the console, run it with the demo server, the demo alone, or
use a server headless (`call` one tool, `check` it against the lint, `list` what it offers, `doctor` a connection)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

from app import data_dir
from app.console.roots import parse_roots
from app.console.team_checks import service_problems, serving_problems, team_problems
from app.hardening import die_with_parent
from app.headless.commands import add_parsers as add_headless_parsers
from app.headless.commands import run as run_headless
from app.mcp.stdio import inherited_env
from app.settings import Settings
from app.web.public_host import validated
from app.web.security import WILDCARDS, token_problem

if TYPE_CHECKING:
    from app.demo.oauth_provider import ProviderProcess

ROOT = Path(__file__).resolve().parents[1]
DEMO_READY = re.compile(r"demo server listening on (http://\S+)")


def _add_serve_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=None, help="The interface to bind (default 127.0.0.1).")
    p.add_argument("--port", type=int, default=None, help="The console's port (default 8765; 0 picks any free port).")
    p.add_argument("--token", default=None, help="The owner token, 16 or more characters (default: $MCP_CONSOLE_TOKEN, "
                   "else a random one). Prefer the variable: a flag is visible to every local user in `ps`.")
    p.add_argument("--data-dir", default=None, help="Where the SQLite database lives (default ~/.mcp-console).")
    p.add_argument("--dangerously-bind-all-interfaces", action="store_true",
                   help="Allow --host 0.0.0.0 or :: (this exposes a console that can start processes to the "
                   "network).")
    p.add_argument("--root", action="append", metavar="URI", default=None,
                   help="A root every new session starts with (a file:// URI, then an optional name after a space); "
                        "repeat for more. Default: none (MCP_CONSOLE_DEFAULT_ROOTS).")
    p.add_argument("--allowed-hosts", default=None, help="Extra Host names to accept, comma-separated.")
    p.add_argument("--public-host", default=None, help="The host name the console is opened under and its cookies "
                   "are bound to (default: a random mcp-….localhost name kept in the data directory).")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="mcp-console", description="A web debugging console for MCP servers of the "
                                  "2026-07-28 revision (and of 2025-11-25, which most servers still speak), and "
                                  "headless commands to call, check and list a server from a script or CI.")
    sub = top.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="Run the console.")
    _add_serve_options(serve)
    demo = sub.add_parser("demo", help="Run the console and the bundled demo server, with a session open on "
                          "it.")
    _add_serve_options(demo)
    demo.add_argument("--demo-port", type=int, default=0,
                      help="The demo server's HTTP port (default: the one it had last time in this data "
                           "directory, else any free one).")
    demo.add_argument("--oauth", action="store_true",
                      help="Protect the demo server with OAuth: run a real OpenID provider (the npm package "
                           "oidc-provider, installed into the data directory the first time; needs Node.js) beside "
                           "it. Any login and password signs in.")
    demo.add_argument("--oauth-token-ttl", type=int, default=300, metavar="SECONDS",
                      help="With --oauth: how long an access token lives (default 300), so a refresh shows.")
    server = sub.add_parser("demo-server", help="Run the bundled demo server alone.")
    mode = server.add_mutually_exclusive_group()
    mode.add_argument("--port", type=int, default=8766, help="The HTTP port (default 8766).")
    mode.add_argument("--stdio", action="store_true", help="Serve on stdin/stdout instead of HTTP.")
    server.add_argument("--state-key-file", help="A file holding the hex key that seals requestState (64 hex "
                        "digits), so an operation waiting for input outlives a restart of the demo server.")
    server.add_argument("--oauth-issuer", metavar="URL", help="Protect /mcp: accept only JWT access tokens from "
                        "this issuer for this server, and serve its protected resource metadata (HTTP only).")
    server.add_argument("--oauth-scope", default=None, help="With --oauth-issuer: the scope every request needs "
                        "(default mcp:read); write_note needs mcp:write too.")
    add_headless_parsers(sub)
    return top


def settings_from(args: argparse.Namespace) -> Settings:
    settings = Settings.from_env(host=args.host, port=args.port, token=args.token, data_dir=args.data_dir,
                                 allowed_hosts=args.allowed_hosts, public_host=args.public_host,
                                 allow_all_interfaces=True if args.dangerously_bind_all_interfaces else None,
                                 default_roots="\n".join(args.root) if args.root else None)
    if binds_everywhere(settings.host) and not settings.allow_all_interfaces:
        raise SystemExit(f"Refusing to bind {settings.host!r}: that exposes the console to the network. "
                         "Pass --dangerously-bind-all-interfaces if you really mean it.")
    problem = token_problem(settings.token)
    if problem:
        raise SystemExit(problem)
    _, bad_roots = parse_roots(settings.default_roots, semicolons=True)
    if bad_roots:
        raise SystemExit("Refusing to start: default roots (--root, MCP_CONSOLE_DEFAULT_ROOTS): "
                         + "; ".join(bad_roots))
    if settings.public_host.strip():
        try:
            validated(settings.public_host)
        except ValueError as exc:
            raise SystemExit(str(exc)) from exc
    refused = team_problems(settings) + serving_problems(settings)
    if refused:
        raise SystemExit("Refusing to start this team console process:\n- " + "\n- ".join(refused))
    refused = service_problems(settings)
    if refused:
        raise SystemExit("Refusing to start:\n- " + "\n- ".join(mask_url_in(line, settings) for line in refused))
    return settings


def mask_url_in(text: str, settings: Settings) -> str:
    """A service's own words may quote the URL it was given: never its password."""
    for url in (settings.redis_url, settings.database_url):
        password = urlsplit(url).password if url else None
        if password:
            text = text.replace(password, "***")
    return text


def binds_everywhere(host: str) -> bool:
    """Whether binding `host` listens on every interface: any spelling of 0.0.0.0 or :: counts
    ("0", "0.0.0.0", "::0", "[::]", "0:0::0"), so no spelling slips past the refusal."""
    host = host.strip().strip("[]")
    if host in WILDCARDS:
        return True
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False  # uvicorn will fail to bind it and say why
    return any(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_unspecified for info in infos)


def start_demo_server(port: int, state_key_file: Path | None = None,
                      extra: list[str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start the demo server as its own process (as any target would be) and wait for its ready line."""
    keyed = ["--state-key-file", str(state_key_file)] if state_key_file is not None else []
    # It dies with the console, a `kill -9` included (Linux): an orphan kept the port and the next start moved away.
    proc = subprocess.Popen([sys.executable, "-m", "app.demo", "--port", str(port), *keyed, *(extra or [])],
                            cwd=str(ROOT),
                            stderr=subprocess.PIPE, text=True, start_new_session=True, env=inherited_env(),
                            preexec_fn=die_with_parent)
    assert proc.stderr is not None
    for line in proc.stderr:
        match = DEMO_READY.search(line)
        if match:
            # Keep draining its stderr so the pipe never fills and blocks it.
            asyncio_free_drain(proc)
            return proc, match.group(1)
        sys.stderr.write(line)
    raise SystemExit(f"The demo server exited before it was ready (code {proc.wait()})")


DEMO_KEY_FILE = "demo-state.key"
DEMO_PORT_FILE = "demo-port"


def demo_continuity(data_dir: Path, port: int) -> tuple[Path, int]:
    """What lets an operation of the demo survive a restart of `mcp-console demo`: the demo server seals its
    requestState with a key kept in the data directory (made once, owner-only), and listens on the port it had
    last time when that is free, so the restored session's target is the same server."""
    data_dir.mkdir(parents=True, exist_ok=True)
    key_file = data_dir / DEMO_KEY_FILE
    try:
        kept = key_file.read_text(encoding="ascii").strip()
    except (OSError, UnicodeError):
        kept = ""
    if not _is_key(kept):
        # None yet, or one that cannot seal anything (empty: a start cut off while writing it; not hex): nothing
        # it sealed can be waiting, so a new one loses nothing.
        if key_file.exists():
            print(f"The demo server's requestState key in {key_file} was not a key: a new one is made.",
                  file=sys.stderr, flush=True)
        tmp = key_file.with_name(DEMO_KEY_FILE + ".new")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(os.urandom(32).hex())
        os.replace(tmp, key_file)  # whole or not at all
    os.chmod(key_file, 0o600)  # the owner's alone, however it came to be
    if port == 0:
        try:
            last = int((data_dir / DEMO_PORT_FILE).read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            last = 0
        if 0 < last < 65536 and not _port_free(last):
            print(f"The demo server's port of last time, {last}, is taken by another program: it listens on another "
                  "one, and the sessions of last time cannot reach it (stop that program, or pass --demo-port).",
                  file=sys.stderr, flush=True)
        port = last if 0 < last < 65536 and _port_free(last) else 0
    return key_file, port


def _is_key(text: str) -> bool:
    try:
        return len(bytes.fromhex(text)) == 32
    except ValueError:
        return False


def _port_free(port: int) -> bool:
    """Whether a server could listen on it now: as uvicorn binds (SO_REUSEADDR), so the connections of the last run
    that the kernel still keeps (TIME-WAIT, about a minute) do not count as taken."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def remember_demo_port(data_dir: Path, url: str) -> None:
    port = urlsplit(url).port
    if port:
        (data_dir / DEMO_PORT_FILE).write_text(str(port), encoding="ascii")


class DemoProvider(NamedTuple):
    process: ProviderProcess
    demo_port: int  # the provider issues tokens for this port's /mcp only, so the demo must listen there


def start_demo_provider(data_dir: Path, demo_port: int, token_ttl: int) -> DemoProvider:
    """`demo --oauth`: oidc-provider (installed under the data directory the first time) on a free 127.0.0.1 port,
    issuing tokens for the demo server's MCP URL, which is why the demo's port is chosen here, before either starts."""
    from app.demo.oauth_provider import ProviderUnavailable, ensure_installed, start_provider

    if demo_port == 0:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            demo_port = int(sock.getsockname()[1])
    try:
        node_modules = ensure_installed(data_dir / "oidc-provider")
        process = start_provider(0, [f"http://127.0.0.1:{demo_port}/mcp"], token_ttl, node_modules,
                                 echo=lambda line: sys.stderr.write(f"[oidc] {line}"), preexec_fn=die_with_parent)
    except ProviderUnavailable as exc:
        raise SystemExit(f"Cannot run the OAuth demo: {exc}") from None
    return DemoProvider(process, demo_port)


def asyncio_free_drain(proc: subprocess.Popen[str]) -> None:
    import threading

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            sys.stderr.write(f"[demo] {line}")

    threading.Thread(target=drain, name="demo-stderr", daemon=True).start()


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def main(argv: list[str] | None = None) -> None:
    cli = parser()
    args, extra = cli.parse_known_args(argv)
    # `list tools --json URL`: an optional target (`?`, as --stdio may replace it) is taken as empty by the first run
    # of positionals, so a URL after an option came back unrecognized. One such word is the target.
    if extra and getattr(args, "url", "") is None and len(extra) == 1 and not extra[0].startswith("-"):
        args.url, extra = extra[0], []
    if extra:
        cli.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "demo-server":
        from app.demo.run import main as demo_main  # the demo is its own program; imported only to run it

        keyed = ["--state-key-file", args.state_key_file] if args.state_key_file else []
        keyed += ["--oauth-issuer", args.oauth_issuer] if args.oauth_issuer else []
        keyed += ["--oauth-scope", args.oauth_scope] if args.oauth_scope else []
        demo_main([*(["--stdio"] if args.stdio else ["--port", str(args.port)]), *keyed])
        return
    if args.command in ("call", "check", "list", "doctor", "snapshot", "diff"):
        sys.exit(run_headless(args))
    settings = settings_from(args)
    # The web stack (uvicorn, FastAPI, the console's app) only for the commands that serve: imported up front, it
    # cost every `call`, `check` and refused `serve` about a second before its first line of work.
    from app.console.session import Target
    from app.serving import serve

    if not settings.database_url:  # the embedded store is one process's (app/data_dir.py)
        data_dir.hold(Path(settings.data_dir).expanduser())
    if args.command == "serve":
        try:
            serve(settings)
        except ValueError as exc:  # create_app's refusals (a team's database without its Redis, …): said, not a trace
            raise SystemExit(f"Refusing to start: {exc}") from None
        return
    # uvicorn re-raises SIGTERM once it has shut down; make that an exit that runs `finally`,
    # so the demo server is stopped however the console is.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    key_file, port = demo_continuity(Path(settings.data_dir).expanduser(), args.demo_port)
    provider = start_demo_provider(Path(settings.data_dir).expanduser(), port, args.oauth_token_ttl) \
        if args.oauth else None
    try:
        proc, url = start_demo_server(provider.demo_port if provider else port, key_file,
                                      ["--oauth-issuer", provider.process.issuer] if provider else None)
    except BaseException:
        if provider:
            provider.process.stop()
        raise
    remember_demo_port(Path(settings.data_dir).expanduser(), url)
    print(f"Demo server: {url}", flush=True)
    if provider:
        print(f"Its OAuth authorization server: {provider.process.issuer} (any login and password signs in)",
              flush=True)
    settings.demo_url = url
    try:
        serve(settings, [Target(kind="http", url=url)])
    finally:
        stop(proc)
        if provider:
            provider.process.stop()


if __name__ == "__main__":
    main()
