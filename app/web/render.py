"""Templating: one Jinja environment with autoescape on, filters, and the hub's event renderer.

Every string from a target server is hostile: nothing here marks server text safe.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import time
import unicodedata
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from jinja2 import Environment, FileSystemLoader, Template, select_autoescape
from markupsafe import Markup, escape

from app.console.events import ENTRY_KINDS, TimelineEvent
from app.console.export import needs_live_session
from app.console.live import LOG_LEVELS
from app.console.live_events import SR_KINDS, SUB_KINDS
from app.console.manager import SessionManager
from app.console.operations import Operation
from app.console.own_host import REFUSED, leads_to_host
from app.console.session import ConsoleSession
from app.console.state import TAKEOVER_ERROR, host_key
from app.console.task_push import push_listen
from app.mcp.errors import ERROR_NAMES
from app.mcp.headers import decode_value
from app.mcp.jsonrpc import clipped, indented, pretty, without_lone_surrogates
from app.mcp.lint import RULES as LINT_RULES
from app.mcp.mrtr import kind_of
from app.mcp.secret import MASK, reveal
from app.web.answers import form_fields
from app.web.form_tree import path_name
from app.web.form_view import big_request, dialog_window, tool_form_json, tool_form_view
from app.web.forms import fields_for
from app.web.item_details import DETAIL_GLOBALS
from app.web.result_shape import result_shaped
from app.web.session_view import SessionView
from app.web.uri_template import template_form
from app.web.urls import url_facts

ROOT = Path(__file__).resolve().parents[2]


def utf8_safe(text: str) -> str:
    """`text`, with any lone surrogate (a target's JSON escape such as \\ud800, which has no UTF-8 form) written as a
    character reference: a websocket text frame must be UTF-8, and one such fragment closed the tab's feed.
    An ASCII fragment is told at once (`isascii` reads a flag); others are encoded once to check (about 3 µs for
    4 KB, where a regex scan for surrogates took 17 µs)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "xmlcharrefreplace").decode("utf-8")
    return text


TEMPLATES = ROOT / "templates"
STATIC = ROOT / "static"
# The kinds that change the session's own state (status, lists, client settings): they re-render its head.
SESSION_KINDS = ("status", "restored", "discovered", "lists_refreshed", "capabilities_changed", "roots_changed",
                 "request_settings_changed", "era_negotiated", "doctor", "surface")
GROUPS = {"tools": "tools", "prompts": "prompts", "resources": "resources", "resourceTemplates": "templates"}
SAFE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
SAFE_AUDIO_TYPES = frozenset({"audio/wav", "audio/x-wav", "audio/wave", "audio/mpeg", "audio/ogg", "audio/webm",
                              "audio/mp3", "audio/flac"})


def fmt_ms(value: Any) -> str:
    if not isinstance(value, int | float):
        return "—"
    return f"{value:.1f} ms" if value < 1000 else f"{value / 1000:.2f} s"


def fmt_bytes(value: Any) -> str:
    if not isinstance(value, int) or not value:
        return "0 B"
    if value < 1024:
        return f"{value} B"
    return f"{value / 1024:.1f} KB" if value < 1024 * 1024 else f"{value / 1024 / 1024:.1f} MB"


# An event's time fields (a link's expiry, a dialog's deadline) are any float an imported file says: one no
# clock shows (1e300, NaN) is shown as the number it is, not raised out of the page.
_NO_CLOCK = (OverflowError, OSError, ValueError)


def fmt_time(value: Any) -> str:
    if not isinstance(value, int | float):
        return ""
    try:
        return time.strftime("%H:%M:%S", time.localtime(value)) + f".{int(value * 1000) % 1000:03d}"
    except _NO_CLOCK:
        return repr(value)


def fmt_datetime(value: Any) -> str:
    if not isinstance(value, int | float):
        return ""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(value))
    except _NO_CLOCK:
        return repr(value)


def data_uri(mime: Any, data: Any, allowed: frozenset[str]) -> str | None:
    """A data: URI only for media types a browser renders inertly, and only for valid base64."""
    if not isinstance(mime, str) or mime.lower() not in allowed or not isinstance(data, str):
        return None
    try:
        base64.b64decode(data, validate=True)
    except ValueError:
        return None
    return f"data:{mime.lower()};base64,{data}"


def http_url(value: Any) -> str | None:
    """The URL if it is http(s), else None: only those become links."""
    if not isinstance(value, str):
        return None
    return value if urlsplit(value).scheme in ("http", "https") else None


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name)


def _log_pct(ms: float, top: float) -> float:
    """Width on a log scale: 20 ms next to 16 s stays readable (a linear bar would be one pixel)."""
    if ms <= 0 or top <= 0:
        return 0.0
    return round(max(4.0, min(100.0, math.log10(1 + ms) / math.log10(1 + top) * 100)), 2)


def round_bars(op: Operation | dict[str, Any]) -> list[dict[str, Any]]:
    """Per round: server and human time as log-scaled bars with their numbers (none for a one-round call)."""
    rounds = [r if isinstance(r, dict) else {"n": r.n, "server_ms": r.server_ms, "human_ms": r.human_ms}
              for r in _get(op, "rounds")]
    if len(rounds) < 2:
        return []
    top = max([float(r.get("server_ms") or 0) for r in rounds] + [float(r.get("human_ms") or 0) for r in rounds])
    return [{"n": r["n"], "server_ms": r.get("server_ms"), "human_ms": r.get("human_ms"),
             "server_pct": _log_pct(float(r.get("server_ms") or 0), top),
             "human_pct": _log_pct(float(r.get("human_ms") or 0), top)} for r in rounds]


def op_facts(entry: dict[str, Any], round_snapshots: Any = None) -> dict[str, Any]:
    """An operation's totals for its one-line summary: rounds, questions, your time, server time, size."""
    rounds = entry.get("rounds") or []
    server = sum(float(r.get("server_ms") or 0) for r in rounds)
    human = sum(float(r.get("human_ms") or 0) for r in rounds)
    questions = sum(len(r.get("input_keys") or []) for r in rounds)
    ends = [r.get("received") or r.get("answered") for r in rounds if r.get("received") or r.get("answered")]
    started = entry.get("started")
    total = (max(ends) - float(started)) * 1000 if ends and isinstance(started, int | float) else None
    size = 0
    if isinstance(round_snapshots, dict):
        size = sum(int((round_snapshots.get(r.get("key")) or {}).get("bytes_in") or 0) for r in rounds)
    parts = [f"{len(rounds)} round{'' if len(rounds) == 1 else 's'}"]
    if questions:
        parts.append(f"{questions} question{'' if questions == 1 else 's'}")
    if human:
        parts.append(f"you {fmt_ms(human)}")
    # A round in flight has no server time yet: "server 0.0 ms" read as an instant answer.
    waiting = any(r.get("server_ms") is None and r.get("status") in (None, "pending", "running") for r in rounds)
    if server or not waiting:
        parts.append(f"server {fmt_ms(server)}" + (" so far" if waiting else ""))
    else:
        parts.append("waiting for the server")
    return {"summary": " · ".join(parts), "total_ms": total, "server_ms": server, "human_ms": human,
            "questions": questions, "bytes_in": size}


def dom_id(value: Any) -> str:
    """A stable, safe element id fragment for any string (URIs are not valid ids as they are). surrogatepass: a
    server's key may hold a lone surrogate escape (\\ud800), and hashing it as UTF-8 made the session page a 500."""
    try:
        text = str(value)
    except RecursionError:  # a target's schema nested nearly as deep as the decoder takes (see jsonrpc.clipped)
        text = str(clipped(value))
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def query(params: dict[str, Any]) -> str:
    """A query string for a link to the console itself. Jinja's `urlencode` encodes strictly, and a server's name
    holding a lone surrogate escape made the whole session page a 500: such a name goes as a browser's form sends
    it (`without_lone_surrogates`), and the route finds the item by that."""
    return urlencode({k: without_lone_surrogates(str(v)) for k, v in params.items()})


def listed_as(items: list[Any], key: str, value: str) -> dict[str, Any] | None:
    """The listed item (a tool, a prompt) whose `key` is `value`, else the first that a browser would have sent as
    `value` (see `query`): the console then sends the item's own name, as the server listed it."""
    found = next((i for i in items if isinstance(i, dict) and i.get(key) == value), None)
    if found is None and "\ufffd" in value:
        found = next((i for i in items if isinstance(i, dict) and isinstance(i.get(key), str)
                      and without_lone_surrogates(i[key]) == value), None)
    return found


def first_of_each(items: Any, key: str) -> tuple[list[Any], int]:
    """The items whose `key` was not seen before (in order), and how many were left out.

    Rows take their element ids from the name (or URI), and the console calls a tool, gets a prompt and reads a
    resource by it, so a name listed twice is one thing to the console: shown twice, both rows had one id, and the
    second's form and result landed in the first's (or, merged live, the typed input went into a row then dropped).
    """
    if not isinstance(items, list):
        return [], 0
    seen: set[str] = set()
    kept: list[Any] = []
    for item in items:
        name = str(item.get(key)) if isinstance(item, dict) else str(item)
        if name not in seen:
            seen.add(name)
            kept.append(item)
    return kept, len(items) - len(kept)


def from_json(raw: Any) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def without_meta(params: Any) -> Any:
    return {k: v for k, v in params.items() if k != "_meta"} if isinstance(params, dict) else params


def to_json(value: Any, indent: int | None = 2) -> str:
    if indent != 2:
        try:
            return json.dumps(value, indent=indent, ensure_ascii=False, default=str)
        except RecursionError:
            return json.dumps(clipped(value), indent=indent, ensure_ascii=False, default=str)
    # Bounded: a target's value nested hundreds deep is shown compact, not indented into megabytes.
    try:
        return indented(value, lambda: json.dumps(value, ensure_ascii=False, default=str))
    except RecursionError:  # deeper than the encoder recurses from here (see jsonrpc.clipped)
        return json.dumps(clipped(value), ensure_ascii=False, default=str)


# Characters that reorder or hide text: bidi embeddings, overrides, isolates and marks, and zero-width ones.
# A server could use them to make `invoice\u202eexe.pdf` read as `invoicefdp.exe`, or two names look alike.
# And the C0 and C1 controls but tab and line ends, and DEL: a browser draws none of them, so a terminal escape
# on a stdio server's stderr (ESC, a C1 CSI, BEL) vanished and left its "[31m" looking like the server's text.
INVISIBLE = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u200b-\u200d\u2060\ufeff"
                       "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _shown_char(match: re.Match[str]) -> str:
    char = match.group(0)
    code = f"U+{ord(char):04X}"
    name = unicodedata.name(char, code)
    return f'<span class="invisible-char" title="{name}">⟨{code}⟩</span>'


def visible(value: Any) -> Markup:
    """Server text for display: escaped first, then bidi and zero-width characters shown as ⟨U+XXXX⟩.

    The whole value sits in a <bdi>, so even ordinary right-to-left letters in it cannot reorder the
    text around it. Only escaped text and our own fixed tags go into the Markup. Text content only:
    never use it inside an attribute.
    """
    if value is None:
        return Markup("")
    escaped = str(escape(str(value)))
    return Markup('<bdi class="sv">' + INVISIBLE.sub(_shown_char, escaped) + "</bdi>")


def visible_inner(value: Any) -> Markup:
    """`visible` without its <bdi>, for an element that isolates itself (class "sv" and dir="auto": what a <bdi> is):
    the rows of a server's lists, where one element less per string is some 75 nodes a page."""
    if value is None:
        return Markup("")
    return Markup(INVISIBLE.sub(_shown_char, str(escape(str(value)))))


def visible_text(value: Any) -> str:
    """`visible` for where no markup may go (a page title, an attribute): the same ⟨U+XXXX⟩ for each bidi,
    zero-width or control character, as plain text that the template then escapes."""
    return "" if value is None else INVISIBLE.sub(lambda m: f"⟨U+{ord(m.group(0)):04X}⟩", str(value))


# Whitespace with a line break next to a block-level tag renders as nothing, yet each run of it is a DOM text node:
# about half the nodes of a page (the template's indentation). It is dropped from every rendered page and
# fragment; <pre> and <textarea> keep theirs, and a break between inline elements stays (it shows as a space).
_BLOCK = ("address|article|aside|blockquote|body|button|dd|details|dialog|div|dl|dt|fieldset|figure|footer|form|"
          "h[1-6]|head|header|hr|html|label|legend|li|link|main|meta|nav|ol|option|p|progress|script|section|select|"
          "style|summary|table|tbody|td|template|tfoot|th|thead|title|tr|ul|input|textarea|pre|table")
_KEEP = re.compile(r"(<(pre|textarea)\b.*?</\2\s*>)", re.DOTALL | re.IGNORECASE)
_AFTER_BLOCK = re.compile(rf"(</?(?:{_BLOCK})\b[^<>]*>)[ \t\r]*\n\s*(?=<)", re.IGNORECASE)
_HELD = re.compile(r"<pre\0(\d+)></pre>")
_BEFORE_BLOCK = re.compile(rf"(?<=>)[ \t\r]*\n\s*(?=</?(?:{_BLOCK})\b)", re.IGNORECASE)


def compact_html(html: str) -> str:
    kept: list[str] = []

    def hold(match: re.Match[str]) -> str:
        kept.append(match.group(1))
        return f"<pre\0{len(kept) - 1}></pre>"  # a stand-in the block rules see as a tag; put back below

    text = _BEFORE_BLOCK.sub("", _AFTER_BLOCK.sub(r"\1", _KEEP.sub(hold, html)))
    return _HELD.sub(lambda m: kept[int(m.group(1))], text) if kept else text


def ascii_json(value: Any) -> str:
    """A value as JSON text in ASCII alone, for a form to post back exactly: a page cannot carry a NUL (the HTML
    parser reads U+FFFD), a CR (read as LF), a line break (posted as CRLF) or a lone surrogate as they are."""
    return json.dumps(value)


class CompactTemplate(Template):
    def render(self, *args: Any, **kwargs: Any) -> str:
        return compact_html(super().render(*args, **kwargs))


def holds_mask(value: Any) -> bool:
    """Whether a recorded value shows a secret's mask somewhere (a result card then says what it stands for)."""
    return MASK in json.dumps(value, ensure_ascii=False, default=str)


def make_env(public_host: str = "") -> Environment:
    """The templates' environment; `public_host` is the console's own host name, to which no link a target offers
    is ever made (app/console/own_host.py)."""
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.template_class = CompactTemplate
    env.filters.update(datetime=fmt_datetime, ms=fmt_ms, bytes=fmt_bytes, clock=fmt_time, tojson_pretty=to_json,
                       pretty=pretty,
                       header_decoded=decode_value, dom_id=dom_id, from_json=from_json, query=query,
                       without_meta=without_meta, visible=visible, visible_inner=visible_inner,
                       visible_text=visible_text, ascii_json=ascii_json)
    env.globals.update(lint_rules=LINT_RULES, error_names=ERROR_NAMES, data_uri=data_uri, http_url=http_url,
                       image_types=SAFE_IMAGE_TYPES, audio_types=SAFE_AUDIO_TYPES,
                       fields_for=fields_for, round_bars=round_bars, op_facts=op_facts, url_facts=url_facts,
                       form_fields=form_fields, kind_of=kind_of, first_of_each=first_of_each, levels=LOG_LEVELS,
                       needs_live_session=needs_live_session,
                       result_shaped=result_shaped, secret_value=reveal,
                       holds_mask=holds_mask, tool_form_view=tool_form_view, tool_form_json=tool_form_json,
                       path_name=path_name, template_form=template_form, dialog_window=dialog_window,
                       big_request=big_request, task_push_listen=push_listen, **DETAIL_GLOBALS)
    # A link from the target that leads to the console's own host name is shown as text, with why.
    env.globals.update(to_console=lambda url: isinstance(url, str) and leads_to_host(url, public_host),
                       to_console_note=REFUSED.format(host=public_host),
                       url_facts=lambda url: url_facts(url, public_host))
    return env


def compile_all(env: Environment) -> int:
    """Compile every template into the environment's cache now; how many there are.

    Jinja compiles a template on its first use, and that use can fall in the middle of a flood: the first
    progress fragment, the first finished operation. The 58 templates take ~0.4 s together (one of them
    tens of milliseconds), each a stall of the event loop where it lands. A serving console pays that
    once at start-up instead (app/cli.py); tests and scripts keep compiling on demand."""
    names = env.list_templates()
    for name in names:
        env.get_template(name)
    return len(names)


# The marks around the inbox's part of a pushed fragment (templates/_push_entry.html, _push_server_request.html).
# Every string in a fragment is escaped, so no server's or person's text can spell them.
DIALOGS_START, DIALOGS_END = "<!--dialogs-->", "<!--/dialogs-->"


def without_dialogs(fragment: str) -> str:
    """The fragment as a viewer's socket gets it: without the inbox's dialogs. A viewer's page has no inbox to put
    them in, so they were dropped there, but the markup still arrived: a server's questions, and what the owner
    or an operator had typed into an answer that the server refused, none of it a viewer's to see."""
    start = fragment.find(DIALOGS_START)
    if start < 0:
        return fragment
    kept, end = [], 0
    while start >= 0:
        kept.append(fragment[end:start])
        stop = fragment.find(DIALOGS_END, start)
        end = stop + len(DIALOGS_END) if stop >= 0 else len(fragment)
        start = fragment.find(DIALOGS_START, end)
    kept.append(fragment[end:])
    return "".join(kept)


class EventRenderer:
    """Turns a timeline event into the HTML fragment pushed to every tab (out-of-band swaps)."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.manager: SessionManager | None = None

    def __call__(self, event: TimelineEvent) -> str | None:
        """The fragment for the owner's tabs."""
        payload = self._render(event, reveal=True)
        return utf8_safe(payload) if payload is not None else None

    def masked(self, event: TimelineEvent) -> str | None:
        """The fragment for link holders and presenter tabs: rendered without what only the owner sees (the values
        typed into the target's edit form, refused answers' text). The target's secret values are masks in the
        event already (app/console/scrub.py): nothing is searched for here."""
        payload = self._render(event, reveal=False)
        return utf8_safe(payload) if payload is not None else None

    def _taken_over(self, session: ConsoleSession, ctx: dict[str, Any]) -> str:
        """A dead process's session became this one's: its head (status, who holds it) and every entry of the
        window that the takeover ended at once, so open tabs show them failed without reloading."""
        parts = [self.env.get_template("_push_session.html").render(
            {**ctx, "with_lists": False, "group": None, "status_changed": True, "client_changed": False,
             "client_saved": False})]
        template = self.env.get_template("_push_entry.html")
        for entry in session.timeline.recent():
            op = session.state.operations.get(str(entry.get("op"))) if entry.get("kind") == "operation" else None
            if entry.get("error") == TAKEOVER_ERROR or (op is not None and op.message == TAKEOVER_ERROR):
                parts.append(template.render({**ctx, "entry": entry, "fresh": False, "op": op}))
        return "".join(parts)

    def _render(self, event: TimelineEvent, reveal: bool) -> str | None:
        if event.kind == "wire":
            return None
        session = self.manager.get(event.session_id) if self.manager else None
        if session is None:
            return None
        # Templates see a view of the session for this audience (app/web/session_view.py), never the session.
        ctx: dict[str, Any] = {"s": SessionView(session, owner=reveal), "seq": event.seq, "reveal": reveal}
        if event.kind == "taken_over":
            return self._taken_over(session, ctx)
        data = event.data
        if event.kind in ENTRY_KINDS:
            key = data.get("key") or f"n{event.seq}"
            entry = session.timeline.entries.get(key)
            if entry is None:
                return None  # e.g. a round of an operation: its operation event renders it
            op = session.state.operations.get(entry["op"]) if entry.get("kind") == "operation" else None
            ctx.update(entry=entry, fresh=entry["seq0"] == event.seq, op=op)
            return self.env.get_template("_push_entry.html").render(ctx)
        if event.kind == "finding":  # the lint found something on an entry's frame: show it on that entry
            entry = session.timeline.entries.get(session.timeline.anchor(str(data.get("exchange") or "")))
            if entry is None:
                return None
            ctx.update(entry=entry, fresh=False, op=None)
            return self.env.get_template("_push_finding.html").render(ctx)
        if event.kind in SR_KINDS:
            if event.kind == "sr_asked" and data.get("due") is None:
                return None  # nobody is asked (roots: the console answers at once); its end shows it
            sr = session.state.server_requests.get(str(data.get("id")))
            if sr is None:
                return None
            ctx.update(sr=sr, entry=session.timeline.entries.get(host_key(session.state, str(data.get("key")))),
                       op=None)
            return self.env.get_template("_push_server_request.html").render(ctx)
        if event.kind == "stderr":
            ctx.update(lines=data["lines"], dropped=data["dropped"], current=data.get("current", ""))
            return self.env.get_template("_push_stderr.html").render(ctx)
        if event.kind in SESSION_KINDS:
            only = data.get("only")
            ctx.update(with_lists=event.kind == "lists_refreshed", group=GROUPS.get(only) if only else None,
                       surface_changed=event.kind in ("lists_refreshed", "surface"),
                       status_changed=event.kind in ("status", "restored"),
                       client_changed=event.kind in ("capabilities_changed", "roots_changed"),
                       client_saved=bool(data.get("saved")))
            return self.env.get_template("_push_session.html").render(ctx)
        if event.kind in ("progress", "log"):
            ctx.update(target=data.get("target"), p=data, l=data)
            return self.env.get_template(f"_push_{event.kind}.html").render(ctx)
        if event.kind in SUB_KINDS:
            sub = session.state.subscriptions.get(str(data.get("sub")))
            if sub is None:
                return None
            # A new subscription's card goes on top of the list; every later change replaces its card by id.
            ctx.update(sub=sub, fresh=event.kind == "sub_started" and not data.get("reconnects"))
            return self.env.get_template("_push_subscription.html").render(ctx)
        if event.kind == "app_changed":
            app = session.state.apps.get(str(data.get("app")))
            if app is None:
                return None
            ctx.update(app=app, fresh=data.get("n") == 1)
            return self.env.get_template("_push_app.html").render(ctx)
        if event.kind == "auth_changed":
            ctx.update(oob=True)
            return self.env.get_template("_auth.html").render(ctx)
        if event.kind == "reread":
            ctx.update(uri=data.get("uri"), op=session.state.operations.get(str(data.get("op"))))
            return self.env.get_template("_push_reread.html").render(ctx)
        return None
