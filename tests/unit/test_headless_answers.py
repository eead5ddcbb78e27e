"""The headless commands' small parts without a server: how a typed header is read, which roots `--root` offers,
what each `--elicit` policy answers and says, and what the CLI masks of what was typed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.headless.answers import elicitor, root_entries
from app.headless.masking import Masking
from app.mcp.headers import typed_header
from app.mcp.secret import MASK, Secret

FORM = {"method": "elicitation/create", "params": {"mode": "form", "message": "Who?", "requestedSchema": {
    "type": "object", "properties": {"name": {"type": "string"}, "team": {"type": "string", "default": "core"}},
    "required": ["name"]}}}
DEFAULTED = {"method": "elicitation/create", "params": {"mode": "form", "message": "Team?", "requestedSchema": {
    "type": "object", "properties": {"team": {"type": "string", "default": "core"}}, "required": ["team"]}}}


@pytest.mark.parametrize(("typed", "name", "value"), [
    ("Authorization: Bearer X", "Authorization", "Bearer X"),
    ("Authorization:Bearer X", "Authorization", "Bearer X"),
    ("  X-Api-Key :\t k1 \t", "X-Api-Key", "k1"),
    ("X-Empty:", "X-Empty", ""),
])
def test_a_typed_header_is_read_as_http_reads_a_field_line(typed: str, name: str, value: str) -> None:
    assert typed_header(typed) == (name, value)


@pytest.mark.parametrize("typed", ["Authorization Bearer sk-123456", "Bad Name: sk-123456", "X: sk-123456\r\nY: 1",
                                   "X: sk-123456\x00", "X: sk-123456é"])
def test_a_header_that_cannot_be_sent_is_refused_without_quoting_its_value(typed: str) -> None:
    with pytest.raises(ValueError) as refused:
        typed_header(typed)
    assert "sk-123456" not in str(refused.value)


def test_roots_are_file_uris_as_given_or_made_from_paths(tmp_path: Path) -> None:
    assert root_entries(["file:///srv/x", str(tmp_path)]) == [{"uri": "file:///srv/x"}, {"uri": tmp_path.as_uri()}]
    assert root_entries([]) == []


def test_a_root_takes_a_name_after_a_space_as_the_consoles_does(tmp_path: Path) -> None:
    assert root_entries(["file:///srv/x  Project X"]) == [{"uri": "file:///srv/x", "name": "Project X"}]
    spaced = tmp_path / "my docs"
    assert root_entries([str(spaced)]) == [{"uri": spaced.as_uri()}]  # a path is whole: it may hold spaces


def test_a_root_of_another_scheme_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        root_entries(["https://example.com/"])
    assert stopped.value.code == 2
    assert "file:// URI" in capsys.readouterr().err


def _answers(mode: str, roots: list[dict[str, Any]] | None = None) -> tuple[Any, list[str]]:
    said: list[str] = []
    return elicitor(mode, roots or [], say=said.append), said


def test_decline_declines_a_form_and_says_which_policy_did() -> None:
    answer, said = _answers("decline")
    assert answer("who", FORM) == {"action": "decline"}
    assert said == ["declined the server's elicitation 'who' (--elicit decline; use --elicit defaults or --elicit "
                    "FILE to answer)"]


def test_defaults_accepts_with_the_defaults_or_declines_naming_the_field_without_one() -> None:
    answer, said = _answers("defaults")
    assert answer("team", DEFAULTED) == {"action": "accept", "content": {"team": "core"}}
    assert answer("who", FORM) == {"action": "decline"}
    assert said[0].startswith("accepted the server's elicitation 'team' with its schema's defaults")
    assert said[1] == ("declined the server's elicitation 'who': name required with no default (--elicit defaults; "
                       "use --elicit FILE to answer)")


def test_a_legacy_request_is_named_by_its_message() -> None:
    answer, said = _answers("decline")
    answer("server-request", FORM)
    assert said[0].startswith("declined the server's elicitation ('Who?')")


def test_url_mode_and_sampling_are_declined_and_said() -> None:
    answer, said = _answers("defaults")
    url = {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x"}}
    sampling = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
    assert answer("u", url) == {"action": "decline"}
    assert answer("s", sampling) == {"action": "decline"}
    assert "URL elicitation 'u'" in said[0] and "sampling/createMessage request 's'" in said[1]


def test_roots_are_answered_with_exactly_those_given_and_said() -> None:
    answer, said = _answers("defaults", [{"uri": "file:///a"}, {"uri": "file:///b"}])
    assert answer("r", {"method": "roots/list"}) == {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}
    assert said == ["answered the server's roots/list 'r' with 2 root(s): file:///a, file:///b (--root)"]
    none, said_none = _answers("defaults")
    assert none("r", {"method": "roots/list"}) == {"roots": []}
    assert "with no roots" in said_none[0]


def test_an_answers_file_answers_first_and_is_said(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text('{"who": {"action": "accept", "content": {"name": "Ada"}}}')
    answer, said = _answers(str(path))
    assert answer("who", FORM) == {"action": "accept", "content": {"name": "Ada"}}
    assert said == ["answered the server's elicitation/create 'who' from the --elicit file: accept"]


def test_masking_holds_credential_shaped_values_as_the_console_does() -> None:
    masking = Masking("https://me:pw-123456@h.example/mcp?api_key=qk-123456&page=2", False,
                      {"Authorization": "Bearer tk-123456", "X-Api-Key": "ak-123456", "X-Trace": "t1"})
    assert masking.shown() == f"https://{MASK}@h.example/mcp?api_key={MASK}&page=2"
    headers = masking.headers
    assert isinstance(headers["Authorization"], Secret) and str(headers["Authorization"]) == f"Bearer {MASK}"
    assert isinstance(headers["X-Api-Key"], Secret) and headers["X-Trace"] == "t1"
    echoed = "got Bearer tk-123456, ak-123456, qk-123456 and pw-123456 on page 2"
    assert masking.text(echoed) == f"got {MASK}, {MASK}, {MASK} and {MASK} on page 2"  # the header value whole


def test_reveal_holds_nothing_secret() -> None:
    masking = Masking("https://h.example/mcp?token=qk-123456", False, {"Authorization": "Bearer tk-123456"},
                      reveal=True)
    assert masking.shown() == "https://h.example/mcp?token=qk-123456"
    assert masking.headers == {"Authorization": "Bearer tk-123456"}
    assert masking.text("tk-123456") == "tk-123456"


def test_a_stdio_command_lines_credentials_are_secret() -> None:
    masking = Masking("env API_TOKEN=tk-123456 node server.js --password pw-123456 --dir /tmp", True, {})
    assert masking.shown() == f"env API_TOKEN={MASK} node server.js --password {MASK} --dir /tmp"
    assert masking.text("pw-123456 and tk-123456") == f"{MASK} and {MASK}"
