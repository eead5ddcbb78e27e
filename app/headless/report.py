"""What `call` and `check` write: a HAR of the exchanges, a readable report, JSON, and JUnit XML (stdlib)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from app import __version__
from app.mcp import har as har_file
from app.mcp.http import request_url
from app.mcp.lint import RULES, SEVERITY_RANK, Finding, Rule
from app.mcp.wire import WireEvent

MAX_NOTES = 1000  # notes `call` prints and puts in its JSON; a flood of stream frames each with an id says the rest
MAX_NOTE_CHARS = 2000  # of one note: a server's SSE id of 200 KB was a 200 KB line on the terminal


def cut_note(note: str) -> str:
    """A note as `call` keeps it: its start, and how much of a longer one was left out."""
    if len(note) <= MAX_NOTE_CHARS:
        return note
    return f"{note[:MAX_NOTE_CHARS]}… ({len(note) - MAX_NOTE_CHARS} more characters; the HAR of --har keeps the frame)"
ARROWS = {"out": "→ sent", "in": "← received", "transport": "· transport", "era": "· era",
          "client": "· mcp-console"}


@dataclass(slots=True)
class Said:
    """A note the web timeline shows (a transport happening, a frame's note, the era probe's outcome), as `call`
    says it: `direction` is a wire event's, "era" for what the console decided about the handshake, or "operation"
    for how an MRTR operation ended when that is no reply of the server's (it hit the round cap), "client" for what
    mcp-console did on its own (an answer it gave the server's input request, an MRTR round it sent)."""

    direction: str
    note: str
    exchange: str | None = None
    method: str | None = None  # the exchange's, so a reader need not map keys to requests
    http_status: int | None = None

    def line(self) -> str:
        """One plain line; every string in it may be the server's, so none reaches the terminal raw."""
        where = " ".join(filter(None, (self.exchange, self.method)))
        return terminal_text(f"{ARROWS.get(self.direction, self.direction)}{f' [{where}]' if where else ''}: "
                             f"{self.note}")

    def to_dict(self) -> dict[str, Any]:
        return {"direction": self.direction, "exchange": self.exchange, "method": self.method,
                "http_status": self.http_status, "note": self.note}


def notes_text(said: list[Said], more: int = 0) -> str:
    """The notes, one line each in the order they happened; past MAX_NOTES, how many more there were."""
    lines = [item.line() for item in said[:MAX_NOTES]]
    more += max(0, len(said) - MAX_NOTES)
    if more:
        lines.append(f"… and {more} more notes (the HAR of --har keeps every frame)")
    return "\n".join(lines)


STDIO_HAR = ("a HAR holds HTTP exchanges: this server was reached over stdio, whose frames --json and the notes "
             "show")


def har(events: list[WireEvent], url: str) -> dict[str, Any]:
    """HAR 1.2: one entry per HTTP exchange that sent a frame, made by the console's own writer (app/mcp/har.py)."""
    groups: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
    sent: dict[str, Any] = {}  # exchange → the frame its request sent
    for event in events:
        if event.exchange is not None:
            groups.setdefault(event.exchange, []).append(event.to_dict())
            if event.direction == "out" and event.frame is not None:
                sent.setdefault(event.exchange, event.frame)
    log = har_file.log_head("mcp-console", __version__)
    if not url.startswith(("http://", "https://")):
        log["log"]["comment"] = STDIO_HAR
        return log
    shown = request_url(url)
    for key, wire in groups.items():
        out, _, _ = har_file.parts(wire)
        posted = out.get("url") if out is not None else None  # a 2024-11-05 POST went to its stream's endpoint
        frame = sent.get(key)
        made = har_file.entry(key, wire, request_url(posted) if posted else shown,
                              mcp={"method": frame.method if frame else None, "jsonrpcId": frame.id if frame else None})
        if made is not None:
            log["log"]["entries"].append(made)
    return log


NOT_JSON_NUMBERS = "the server sent NaN or Infinity, bare words that are not JSON: printed as null"


def json_text(value: Any) -> str:
    """`value` as indented JSON for a terminal. A server's bare NaN or Infinity (which Python's parser takes) was
    printed as it is, and `call`'s output was no JSON a CI step could read: here it is null, and said to be."""
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError:  # the C encoder and decoder, not a recursion of ours: as deep as the answer was parsed
        value = json.loads(json.dumps(value), parse_constant=lambda _word: None)
        if isinstance(value, dict):
            value["warnings"] = [*value.get("warnings", []), NOT_JSON_NUMBERS]
        text = json.dumps(value, indent=2, ensure_ascii=False)
    return terminal_json(text)


def _reason(head: WireEvent | None) -> str:
    """The reason phrase: the head's note is the whole status line ("HTTP 200 OK"), HAR's statusText only "OK"."""
    note = (head.note or "") if head else ""
    return note.split(" ", 2)[2] if note.startswith("HTTP ") and note.count(" ") >= 2 else ""


def at_or_above(findings: list[Finding], fail_on: str) -> list[Finding]:
    return [f for f in findings if SEVERITY_RANK[f.severity] >= SEVERITY_RANK[fail_on]]


def terminal_text(text: str) -> str:
    """A line for a terminal with every control and format character a server may have put in it (ESC, BEL, CR,
    a newline, a C1 CSI, a bidi override) written as its escape: nothing in it moves the cursor, retitles the
    window or starts a line of its own, so what a hostile server says cannot paint over the report."""
    return _UNSAFE.sub(_escaped, text)


def terminal_json(text: str) -> str:
    """JSON text for a terminal: json.dumps escapes C0 controls but writes C1 controls, DEL and format
    characters (bidi overrides) as they are when ensure_ascii is off; here they go as \\u escapes (still JSON,
    the same value read back)."""
    return _UNSAFE_IN_JSON.sub(lambda m: json.dumps(m.group())[1:-1], text)


def _escaped(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # \x1b, \n, \x9b, \u202e


# C0 controls (json.dumps escapes these itself), then DEL, C1 and the format characters that reorder or hide
# text (bidi marks, overrides and isolates, zero-width ones, the byte-order mark), the line separators, and
# what no UTF-8 stream or XML file can carry (a lone surrogate from a JSON "\\ud800", U+FFFE and U+FFFF).
# Then the rest of Unicode's format characters (category Cf), which a terminal shows as nothing: the soft
# hyphen, the Arabic number signs, the deprecated format controls and the tag characters (U+E0020-E007F), in
# which a server could spell whole hidden sentences beside the text a reader sees.
_C0 = "\x00-\x1f"
_OTHERS = ("\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ud800-\udfff\ufeff\ufff9-\ufffb\ufffe\uffff"
           "\u00ad\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u180e\u206a-\u206f\U000110bd\U000110cd"
           "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
_UNSAFE = re.compile(f"[{_C0}{_OTHERS}]")
_UNSAFE_IN_JSON = re.compile(f"[{_OTHERS}]")


def text_report(target: str, findings: list[Finding], checked: set[str], steps: list[str],
                rules: dict[str, Rule] | None = None) -> str:
    """The report for people; `rules` are those of the revision the server spoke (all of them by default)."""
    rules = RULES if rules is None else rules
    lines = [f"mcp-console check {terminal_text(target)}", *(f"  · {terminal_text(step)}" for step in steps), ""]
    for finding in findings:
        where = f" [{terminal_text(finding.exchange)}]" if finding.exchange else ""
        lines.append(f"{finding.severity.upper():7} {finding.rule}{where}: {terminal_text(finding.message)}")
        lines.append(f"        see {finding.spec_url}")
    counts = {sev: sum(f.severity == sev for f in findings) for sev in ("error", "warning", "note")}
    lines.append(f"{len(checked & set(rules))} of {len(rules)} rules checked; {counts['error']} errors, "
                 f"{counts['warning']} warnings, {counts['note']} notes")
    return "\n".join(lines)


def json_report(target: str, findings: list[Finding], checked: set[str], steps: list[str],
                exit_code: int, notes: dict[str, Any] | None = None, rules: dict[str, Rule] | None = None) -> str:
    rules = RULES if rules is None else rules
    return terminal_json(json.dumps({"target": target, "exit": exit_code, "steps": steps,
                                     "rules_checked": sorted(checked & set(rules)),
                                     "rules_not_checked": sorted(set(rules) - checked),
                                     "findings": [f.to_dict() for f in findings],
                                     **(notes or {})},
                                    indent=2, ensure_ascii=False))


def junit(target: str, findings: list[Finding], checked: set[str], fail_on: str,
          rules: dict[str, Rule] | None = None) -> bytes:
    """One test case per rule (of the revision the server spoke: `rules`, all by default): failed when a finding at
    or above `fail_on` names it, skipped when nothing gave the rule anything to look at."""
    rules = RULES if rules is None else rules
    target = terminal_text(target)
    suite = ET.Element("testsuite", name="mcp-console check", tests=str(len(rules)))
    failures = skipped = 0
    for rule in rules.values():
        case = ET.SubElement(suite, "testcase", classname=f"mcp.lint.{target}"[:200], name=rule.id)
        mine = [f for f in findings if f.rule == rule.id]
        failing = at_or_above(mine, fail_on)
        if failing:
            failures += 1
            # A server's text in a message (a notification's method, an error's code) may hold control
            # characters XML 1.0 cannot carry: written raw, they made the whole file unreadable to a CI's parser.
            failure = ET.SubElement(case, "failure", type=failing[0].severity,
                                    message=f"{len(mine)} finding(s): {terminal_text(failing[0].message)}"[:500])
            failure.text = "\n".join(f"{f.severity} [{terminal_text(str(f.exchange))}] {terminal_text(f.message)}"
                                     for f in mine) + f"\nsee {rule.spec_url}"
        elif rule.id not in checked:
            skipped += 1
            ET.SubElement(case, "skipped", message="nothing in this run gave the rule anything to check")
        elif mine:
            ET.SubElement(case, "system-out").text = "\n".join(f"{f.severity}: {terminal_text(f.message)}"
                                                                for f in mine)
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("errors", "0")
    xml: bytes = ET.tostring(suite, encoding="utf-8", xml_declaration=True)
    return xml
