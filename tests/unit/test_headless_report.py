"""What `mcp-console check` writes is readable whatever the server's strings hold."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from app.headless.report import junit, terminal_json, terminal_text
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
