"""What `call`, `check` and `list` share: the target and its secrets from the command line, one session made from
them, the notes on stderr, the HAR, and how a refusal (401/403) is said."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from app.console.secrecy import CREDENTIAL_WORDS, credential_name
from app.headless.answers import elicitor, root_entries
from app.headless.configured import add_config_options, configured
from app.headless.masking import Masking
from app.headless.oauth import add_oauth_options, oauth_from_config, oauth_of
from app.headless.report import MAX_NOTES, har, notes_text, terminal_text
from app.headless.runner import DEFAULT_MAX_S, AuthRefused, Headless
from app.mcp.headers import typed_header

EXIT_CLEAN, EXIT_FINDINGS, EXIT_UNREACHABLE = 0, 1, 2


def target_of(args: argparse.Namespace) -> tuple[str, bool]:
    if args.stdio:
        return args.stdio, True
    if not args.url:
        raise SystemExit("give a URL, --stdio CMD or --config FILE")
    return args.url, False


def headers_of(pairs: list[str] | None) -> dict[str, str]:
    """`--header` values as HTTP reads them (app/mcp/headers.py typed_header): a bad one stops the run with exit 2
    and a message that never quotes the value."""
    headers: dict[str, str] = {}
    for line in pairs or []:
        try:
            name, value = typed_header(line)
        except ValueError as exc:
            print(f"--header: {exc}", file=sys.stderr)
            raise SystemExit(EXIT_UNREACHABLE) from None
        headers[name] = value
    return headers


def session_of(args: argparse.Namespace, era: str, era_named: bool) -> Headless:
    """The session a command drives: its secrets held as the console holds them (unless --reveal), and the
    server's questions (elicitation, roots/list) answered as --elicit and --root say, each answer said."""
    from_config = configured(args)
    if from_config is not None:
        target, stdio = from_config.target.describe(), from_config.target.kind == "stdio"
        era = from_config.target.era if era == "auto" else era  # --era given wins over the file's
    else:
        target, stdio = target_of(args)
    if stdio and era == "sse-2024":
        raise SystemExit("--era sse-2024 is an HTTP transport: give the server's SSE URL, not --stdio")
    headers = headers_of(args.header)
    if stdio and headers:
        print("--header is for an HTTP server: a --stdio server gets none", file=sys.stderr)
    made = None
    if from_config is not None:
        made = from_config.target
        if headers and not stdio:  # --header adds to (or replaces) the file's headers
            chosen = set(made.secret or ()) | {f"header:{k}" for k in headers if credential_name(k)}
            made.headers = {**made.headers, **headers}
            made.seal(chosen)
    try:
        masking = Masking(target, stdio, headers, reveal=args.reveal, made=made)
    except ValueError as exc:  # shlex: an unclosed quote in --stdio (the line is not quoted back: it may hold a key)
        print(f"--stdio: the command line cannot be split as a shell would ({exc})", file=sys.stderr)
        raise SystemExit(EXIT_UNREACHABLE) from None
    oauth = oauth_of(args) if not stdio else None  # a stdio server takes its credentials from the environment
    if oauth is not None and from_config is not None:
        oauth_from_config(oauth, from_config.oauth)
    session = Headless(target, stdio, args.timeout, headers, era=era, max_s=args.max_time, era_named=era_named,
                       masking=masking, oauth=oauth)
    roots = root_entries(args.root or [])
    session.answer_with(elicitor(args.elicit, roots, say=session.say))
    session.roots_offered = bool(roots)
    return session


def shown_target(session: Headless) -> str:
    return session.masking.shown()


def say_notes(session: Headless) -> None:
    """The notes for people, on stderr: stdout is what a CI step reads, and stays only that."""
    left = session.said[session.said_printed:]  # what an interactive authorization printed already is not again
    if left or session.said_more:
        print(notes_text(left, session.said_more), file=sys.stderr)


def with_notes(out: dict[str, Any], session: Headless) -> dict[str, Any]:
    """The JSON of a command with the same notes added under a key of their own (no field it had before
    changes)."""
    out["transport_notes"] = [item.to_dict() for item in session.said[:MAX_NOTES]]
    if (more := session.said_more + max(0, len(session.said) - MAX_NOTES)):
        out["transport_notes_not_shown"] = more
    return out


def write_har(path: str | None, session: Headless) -> None:
    """The exchanges as HAR 1.2, secrets masked as the console's exports mask them (unless --reveal)."""
    if path:
        log = har(session.masking.events(session.events), shown_target(session) if not session.stdio else "")
        if session.stdio:  # an empty HAR with no word why read as a broken export
            log["log"]["comment"] = ("A stdio server: its frames went over stdin and stdout, not HTTP, so this HAR "
                                     "has no entries (--json prints every exchange).")
            print(f"· mcp-console: {path}: a stdio server's HAR has no entries (its frames are not HTTP)",
                  file=sys.stderr)
        Path(path).write_text(json.dumps(log, indent=2), encoding="utf-8")


def say_refused(exc: AuthRefused) -> int:
    """A 401 or 403: the status and the server's challenge on stderr, exit 2 (nothing else was sent). Without
    --oauth, how to authorize is said too."""
    print(terminal_text(str(exc)), file=sys.stderr)
    if "OAuth" not in str(exc) and exc.challenge is not None and "bearer" in exc.challenge.lower():
        print("· mcp-console: the server asks for an OAuth token: run with --oauth interactive (a browser signs in) "
              "or --oauth follow (no person, e.g. CI); docs/oauth.md has the options", file=sys.stderr)
    return EXIT_UNREACHABLE


def seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse says what is wrong with anything else, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


ERA_HELP = ("Which protocol revision to speak: auto sends server/discover (2026-07-28) and falls back to the "
            "2025-11-25 initialize handshake when the server does not know it; modern and legacy speak one revision "
            "only.")


def add_common_options(common: argparse.ArgumentParser) -> None:
    """The options every headless command takes, with their help (the CLI reference is generated from it)."""
    common.add_argument("url", nargs="?", help="The server's Streamable HTTP URL (or give --stdio CMD instead).")
    common.add_argument("--stdio", metavar="CMD", help="Start the server with this command line and speak to it "
                        "over stdin/stdout instead of HTTP.")
    add_config_options(common)
    common.add_argument("--header", action="append", metavar="'NAME: VALUE'",
                        help="An extra HTTP header for every request (repeatable). The value is trimmed as HTTP "
                             "trims a field ('Authorization: Bearer X' works), and it is never echoed in an error. "
                             "Credential-named headers (Authorization, Proxy-Authorization, Cookie, and any name "
                             f"with {', '.join(CREDENTIAL_WORDS[:-1])} or {CREDENTIAL_WORDS[-1]} in it) are masked "
                             "in the output and the HAR.")
    common.add_argument("--reveal", action="store_true",
                        help="Show secret values as typed in the output and the HAR (credential-named headers, a "
                             "URL's user and password, credential-named query values, a --stdio command line's "
                             "credentials); by default they are masked as the console's exports mask them.")
    common.add_argument("--root", action="append", metavar="URI",
                        help="A root to offer the server when it asks for roots (roots/list; repeatable): a file:// "
                             "URI with an optional name after a space, as the console's --root takes it, or a "
                             "directory path made into one. Without --root the answer is an empty list; each answer "
                             "is said on stderr.")
    common.add_argument("--har", default=None, metavar="FILE",
                        help="Write the HTTP exchanges to FILE as HAR 1.2, secrets masked unless --reveal.")
    common.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                        help="Idle seconds a request may go without a frame before it fails (default 30).")
    common.add_argument("--max-time", type=seconds, default=DEFAULT_MAX_S, metavar="SECONDS",
                        help=f"Seconds a request may take in all, frames or not (default {DEFAULT_MAX_S:g}).")
    common.add_argument("--elicit", default="defaults", metavar="defaults|decline|FILE",
                        help="How to answer the server's elicitations: accept a form with its schema's defaults "
                             "(declined when a required field has none), decline every one, or answer from a JSON "
                             "file keyed like the server's inputRequests (a 2025-11-25 request: key "
                             "\"server-request\"), each value a whole answer: {\"profile\": {\"action\": "
                             "\"accept\", \"content\": {\"name\": \"Ada\"}}}. Each answer is said on stderr.")
    add_oauth_options(common)
