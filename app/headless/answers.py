"""How a headless run answers what a server asks (`--elicit`, `--root`), and what it says about each answer.

A server may ask in two ways: a 2026-07-28 MRTR round's `inputRequests` (keyed by the server), or a 2025-11-25
server request on a stream (`elicitation/create`, `roots/list`, `sampling/createMessage`). Both reach one
`Elicitor`; every answer it gives is said on stderr (through `say`), so a CI log shows that the default declined
a form, or which roots the server was given, rather than a tool result that makes no sense without it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from app.console.roots import parse_roots
from app.mcp.mrtr import kind_of

Elicitor = Callable[[str, dict[str, Any]], dict[str, Any]]
Say = Callable[[str], None]
LEGACY_KEY = "server-request"  # the key a 2025-11-25 server request is answered under (an answers file uses it)

ANSWERS_FILE = ('An answers file holds a JSON object keyed like the server\'s inputRequests, each value a whole '
                'answer: {"KEY": {"action": "accept", "content": {...}}}.')


def _usage(message: str) -> NoReturn:
    """A command line that cannot run: said in one line on stderr, exit 2 (as for a server that cannot be reached)."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


def schema_defaults(schema: Any) -> dict[str, Any] | None:
    """The content a form answers with from its schema's defaults; None when a required field has none."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return {}
    content = {name: prop["default"] for name, prop in props.items() if isinstance(prop, dict) and "default" in prop}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    if not all(isinstance(name, str) for name in required):  # no field could meet it (a list there crashed call)
        return None
    return None if any(name not in content for name in required) else content


def _missing_defaults(schema: Any) -> list[str]:
    """The required fields a form's defaults leave empty, named for the note that says why it was declined."""
    if not isinstance(schema, dict):
        return []
    props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    required: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
    missing = []
    for name in required:
        prop = props.get(name) if isinstance(name, str) else None
        if not isinstance(prop, dict) or "default" not in prop:
            missing.append(str(name)[:60])
    return missing


def root_entries(typed: Sequence[str]) -> list[dict[str, Any]]:
    """The roots a run offers, from `--root`: as the console reads its roots (app/console/roots.py), a file:// URI
    with an optional name after a space; or a directory path, made into the file:// URI of its absolute form (the
    whole value: a path may hold spaces). Anything else is a usage error, said before any server is started."""
    roots: list[dict[str, Any]] = []
    for value in typed:
        value = value.strip()
        scheme = urlsplit(value).scheme if "://" in value else ""
        if scheme == "file":
            parsed, problems = parse_roots(value.replace(";", "%3B"))  # one root per --root, a ";" in it kept
            if problems or len(parsed) != 1:
                _usage(f"--root {value}: {'; '.join(problems) or 'not one root'}")
            roots.append(dict(parsed[0]))
        elif scheme:
            _usage(f"--root {value}: a root is a file:// URI (then an optional name after a space) or a directory "
                   "path: the protocol allows only file:// roots")
        else:
            roots.append({"uri": Path(value).expanduser().absolute().as_uri()})
    return roots


def _named(key: str, request: dict[str, Any]) -> str:
    """How a request is named in a note: the server's MRTR key, or for a 2025-11-25 request its message."""
    if key != LEGACY_KEY:
        return repr(key)
    params = request.get("params") if isinstance(request.get("params"), dict) else {}
    message = (params or {}).get("message")
    return f"({message[:60]!r})" if isinstance(message, str) and message else "(a 2025-11-25 server request)"


def _no_action(mode: str, key: str, request: dict[str, Any], given: dict[str, Any]) -> str:
    """What a file answer without an action says (a person's first guess is the content alone): the shape, with
    this request's key and, for a form, its fields, so the fix can be copied."""
    params = request.get("params") if isinstance(request.get("params"), dict) else {}
    schema = (params or {}).get("requestedSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    fields = list(props)[:4] if isinstance(props, dict) else []
    content = given if given and set(given) <= set(fields or given) else {f: "..." for f in fields}
    example = json.dumps({key: {"action": "accept", "content": content}}, ensure_ascii=False)[:300]
    return (f"--elicit {mode}: the answer for {key!r} has no \"action\" (accept, decline or cancel), so it was not "
            f"sent. Each value is a whole answer, the form's fields under \"content\": {example}")


def elicitor(mode: str, roots: Sequence[dict[str, Any]] = (), say: Say | None = None) -> Elicitor:
    """How input requests are answered: `defaults`, `decline`, or a JSON file of answers keyed as the server keys
    its inputRequests (a key the file lacks is answered with the defaults). `roots/list` is answered with `roots`
    (none unless --root gave some). Each answer is said through `say`."""
    answers: dict[str, Any] = {}
    if mode not in ("defaults", "decline"):
        try:
            loaded = json.loads(Path(mode).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # a typo of defaults, a missing file, a file that is not JSON
            _usage(f"--elicit {mode}: not defaults, not decline, and not a readable JSON file of answers "
                   f"({type(exc).__name__}: {exc}). {ANSWERS_FILE}")
        if not isinstance(loaded, dict):
            _usage(f"--elicit {mode}: the file must hold a JSON object. {ANSWERS_FILE}")
        answers = loaded
    policy = "--elicit decline" if mode == "decline" else "--elicit defaults" if mode == "defaults" else \
        "--elicit FILE"
    tell: Say = say or (lambda _note: None)
    offered = [dict(root) for root in roots]

    def answer(key: str, request: dict[str, Any]) -> dict[str, Any]:
        kind = kind_of(request)
        name = _named(key, request)
        if key in answers:
            given = dict(answers[key]) if isinstance(answers[key], dict) else {"action": "decline"}
            if kind in ("form", "url") and given.get("action") not in ("accept", "decline", "cancel"):
                _usage(_no_action(mode, key, request, given))
            shown = given.get("action", "an answer") if kind != "roots" else f"{len(given.get('roots') or [])} root(s)"
            tell(f"answered the server's {request.get('method')} {name} from the --elicit file: {shown}")
            return given
        if kind == "roots":
            uris = ", ".join(str(r["uri"]) for r in offered)
            tell(f"answered the server's roots/list {name} with {len(offered)} root(s): {uris} (--root)" if offered
                 else f"answered the server's roots/list {name} with no roots (give --root URI to offer some)")
            return {"roots": [dict(r) for r in offered]}
        params = request.get("params") if isinstance(request.get("params"), dict) else {}
        if kind == "url":
            tell(f"declined the server's URL elicitation {name}: a headless run opens no page ({policy}; use "
                 "--elicit FILE to answer it)")
            return {"action": "decline"}
        if kind != "form":
            tell(f"declined the server's {request.get('method')} request {name}: mcp-console answers only forms and "
                 f"roots headless ({policy}; use --elicit FILE to answer it)")
            return {"action": "decline"}
        if mode == "decline":
            tell(f"declined the server's elicitation {name} (--elicit decline; use --elicit defaults or --elicit "
                 "FILE to answer)")
            return {"action": "decline"}
        schema = (params or {}).get("requestedSchema")
        content = schema_defaults(schema)
        if content is None:
            missing = ", ".join(_missing_defaults(schema)) or "a required field"
            tell(f"declined the server's elicitation {name}: {missing} required with no default ({policy}; use "
                 "--elicit FILE to answer)")
            return {"action": "decline"}
        tell(f"accepted the server's elicitation {name} with its schema's defaults ({policy}; use --elicit decline "
             "or --elicit FILE to answer otherwise)")
        return {"action": "accept", "content": content}

    return answer
