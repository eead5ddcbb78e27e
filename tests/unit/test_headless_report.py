"""What `mcp-console check` writes is readable whatever the server's strings hold."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from app.headless.report import MAX_NOTES, Said, junit, notes_text, terminal_json, terminal_text
from app.mcp.lint import RULES, Finding

HOSTILE = ["\x1b]0;pwned\x07", "\x00\x01\x1b[2J", "\r\n0 errors", "\u009b31m", "\u202egnp.exe", "lone \ud800", "\ufffe"]


def _finding(message: str) -> Finding:
    return Finding(rule=next(iter(RULES)), severity="error", message=message, exchange="x1\x1b", seq=1,
                   frame_index=None, spec_url="https://example.invalid/")


@pytest.mark.parametrize("text", HOSTILE)
def test_a_junit_file_with_a_servers_control_characters_in_a_finding_still_parses_as_xml(text: str) -> None:
    # Written raw, one such character made the whole file unreadable to a CI's JUnit parser (or, a lone
    # surrogate, made writing it raise).
    suite = ET.fromstring(junit("t\x1b", [_finding(f"bad {text}")], set(RULES), "error"))
    failure = next(f for f in suite.iter("failure"))
    assert "bad " in (failure.text or "")


@pytest.mark.parametrize("text", HOSTILE)
def test_terminal_text_leaves_no_control_character_and_terminal_json_reads_back_the_same_value(text: str) -> None:
    shown = terminal_text(text)
    assert shown.isprintable() and shown.encode("utf-8")
    written = terminal_json(json.dumps({"v": text}, ensure_ascii=False))
    assert written.isprintable() and written.encode("utf-8")
    assert json.loads(written) == {"v": text}


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_call_note_is_one_line_with_no_character_a_terminal_acts_on(hostile: str) -> None:
    line = Said("in", f"sse id={hostile}", exchange="x2", method=f"tools/{hostile}").line()
    assert line == terminal_text(line) and "\n" not in line and line.startswith("← received [x2 tools/")


def test_call_notes_past_the_cap_end_with_how_many_more_there_were() -> None:
    lines = notes_text([Said("transport", f"HTTP 200 OK {n}") for n in range(MAX_NOTES + 5)]).splitlines()
    assert len(lines) == MAX_NOTES + 1 and lines[0] == "· transport: HTTP 200 OK 0" and "5 more notes" in lines[-1]


def test_a_note_past_its_length_bound_keeps_its_start_and_says_how_much_more_there_was() -> None:
    from app.headless.report import MAX_NOTE_CHARS, cut_note

    assert cut_note("short") == "short"
    cut = cut_note("i" * (MAX_NOTE_CHARS + 7))
    assert cut.startswith("i" * MAX_NOTE_CHARS) and "(7 more characters" in cut and len(cut) < MAX_NOTE_CHARS + 100


def test_notes_counted_past_the_bound_are_said_as_more_notes() -> None:
    assert notes_text([Said("transport", "HTTP 200 OK")], more=4).splitlines()[-1].startswith("… and 4 more notes")
