"""What a CI job's `mcp-console call`, `check` and `list` say and exit with when a server refuses the credentials,
answers a malformed result, asks for input or roots, or says a secret back: against the demo server and the
hostile target (tests/hostile/tools_cli.py, tools_locked.py)."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from tests.hostile.fixtures import HostileUrl, hostile_argv, hostile_http
from tests.hostile.tools_cli import CHALLENGE as FORBIDDEN_CHALLENGE
from tests.hostile.tools_locked import CHALLENGE as LOCKED_CHALLENGE
from tests.integration.conftest import mcp_console

__all__ = ["hostile_http"]
Start = Callable[..., HostileUrl]
TOKEN = "sk-live-5f7e9a1b3c"
API_KEY = "ak-2b4d6f8h0j"
QUERY_KEY = "qk-9z8y7x6w5v"


def _har(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_401_exits_2_with_the_challenge_and_sends_nothing_after_it(hostile_http: Start, tmp_path: Path) -> None:
    url = hostile_http("locked")
    har = tmp_path / "run.har"
    done = mcp_console("call", url, "anything", "--har", str(har))
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"HTTP 401 Error; WWW-Authenticate: {LOCKED_CHALLENGE}" in done.stderr
    assert "ProtocolViolation" not in done.stderr
    sent = [entry["_mcp"]["method"] for entry in _har(har)["log"]["entries"]]
    assert sent == ["server/discover"]  # no initialize fallback, no tools/list, no tools/call


def test_check_and_list_stop_at_a_401_too(hostile_http: Start) -> None:
    url = hostile_http("locked")
    checked = mcp_console("check", url, "--json")
    assert checked.returncode == 2
    report = json.loads(checked.stdout)
    assert report["findings"] == []  # the refusal's body is the server's words to a stranger, not a lint matter
    assert LOCKED_CHALLENGE in checked.stderr
    listed = mcp_console("list", "tools", url)
    assert listed.returncode == 2 and listed.stdout == ""
    assert LOCKED_CHALLENGE in listed.stderr


def test_a_403_on_the_call_exits_2_with_its_challenge(hostile_http: Start) -> None:
    done = mcp_console("call", hostile_http("cli"), "forbidden")
    assert done.returncode == 2
    assert f"HTTP 403 Error; WWW-Authenticate: {FORBIDDEN_CHALLENGE}" in done.stderr


def test_a_string_is_error_is_a_finding_and_a_failed_call(hostile_http: Start) -> None:
    done = mcp_console("call", hostile_http("cli"), "is_error_string")
    assert done.returncode == 1
    out = json.loads(done.stdout)
    assert [f["rule"] for f in out["findings"]] == ["result.is-error"]
    assert "lint error: result.is-error: isError is str 'true', not a boolean" in done.stderr


def test_a_result_on_http_500_is_a_finding_and_a_failed_call(hostile_http: Start) -> None:
    done = mcp_console("call", hostile_http("cli"), "result_on_500")
    assert done.returncode == 1
    assert [f["rule"] for f in json.loads(done.stdout)["findings"]] == ["http.result-status"]
    assert "came with HTTP 500" in done.stderr


def test_a_clean_call_has_no_findings_and_exits_0(hostile_http: Start) -> None:
    done = mcp_console("call", hostile_http("cli"), "ask_roots")
    assert done.returncode == 0, done.stderr
    assert "findings" not in json.loads(done.stdout)


def test_mrtr_roots_are_answered_with_exactly_the_roots_given_and_each_round_is_said(hostile_http: Start,
                                                                                      tmp_path: Path) -> None:
    url = hostile_http("cli")
    done = mcp_console("call", url, "ask_roots", "--root", str(tmp_path), "--root", "file:///srv/data")
    assert done.returncode == 0, done.stderr
    said = json.loads(json.loads(done.stdout)["result"]["content"][0]["text"])
    assert said == {"roots": [{"uri": tmp_path.as_uri()}, {"uri": "file:///srv/data"}]}
    notes = [line for line in done.stderr.splitlines() if line.startswith("· mcp-console")]
    assert notes == [
        "· mcp-console [tools/call]: round 1: the server asked for input (roots 'where')",
        f"· mcp-console: answered the server's roots/list 'where' with 2 root(s): {tmp_path.as_uri()}, "
        "file:///srv/data (--root)",
        "· mcp-console [tools/call]: round 2: sent with 1 answer(s)",
        "· mcp-console [tools/call]: ended after 2 rounds: complete",
    ]
    none = mcp_console("call", url, "ask_roots")
    assert json.loads(json.loads(none.stdout)["result"]["content"][0]["text"]) == {"roots": []}
    assert "with no roots (give --root URI to offer some)" in none.stderr


def test_a_root_that_is_no_file_uri_is_a_usage_error(hostile_http: Start) -> None:
    done = mcp_console("call", hostile_http("cli"), "ask_roots", "--root", "https://example.com/x")
    assert done.returncode == 2
    assert "a root is a file:// URI (then an optional name after a space) or a directory path" in done.stderr


def test_the_demos_form_declined_by_policy_is_said(demo_url: str) -> None:
    done = mcp_console("call", demo_url, "profile_form", "--elicit", "decline")
    assert done.returncode == 0, done.stderr
    assert "declined the server's elicitation 'profile' (--elicit decline; use --elicit defaults or --elicit FILE " \
           "to answer)" in done.stderr
    roots = mcp_console("call", demo_url, "list_roots", "--root", "/tmp/project")
    assert json.loads(roots.stdout)["result"]["content"][0]["text"].count("file:///tmp/project") == 1


def test_a_header_typed_with_a_space_after_the_colon_is_sent_trimmed(hostile_http: Start) -> None:
    done = mcp_console("call", hostile_http("cli"), "say_head", "--header", "X-Trace:   abc 1  ", "--reveal")
    assert done.returncode == 0, done.stderr
    head = json.loads(done.stdout)["result"]["content"][0]["text"]
    assert "\r\nX-Trace: abc 1\r\n" in head


def test_a_header_value_is_never_echoed_in_an_error(demo_url: str) -> None:
    for typed in (f"Authorization: Bearer {TOKEN}\x01", f"Authorization Bearer {TOKEN}", f"Auth orization: {TOKEN}"):
        done = mcp_console("call", demo_url, "echo", "--header", typed)
        assert done.returncode == 2
        assert TOKEN not in done.stderr + done.stdout
        assert done.stderr.startswith("--header: ")


def test_the_demo_takes_a_bearer_typed_with_a_space(demo_url: str) -> None:
    done = mcp_console("call", demo_url, "echo", "--arg", "text=hi", "--header", f"Authorization: Bearer {TOKEN}")
    assert done.returncode == 0, done.stderr
    assert TOKEN not in done.stderr + done.stdout


def test_secrets_sent_and_said_back_are_masked_in_the_output_and_the_har(hostile_http: Start, tmp_path: Path) -> None:
    url = f"{hostile_http('cli')}?api_key={QUERY_KEY}&page=2"
    har = tmp_path / "masked.har"
    done = mcp_console("call", url, "say_head", "--header", f"Authorization:  Bearer {TOKEN}",
                       "--header", f"X-Api-Key: {API_KEY}", "--har", str(har))
    assert done.returncode == 0, done.stderr
    written = done.stdout + done.stderr + har.read_text(encoding="utf-8")
    for secret in (TOKEN, API_KEY, QUERY_KEY):
        assert secret not in written
    head = json.loads(done.stdout)["result"]["content"][0]["text"]
    assert "page=2" in head and "X-Api-Key: ••••••" in head  # what is not secret stays as it was
    sent = _har(har)["log"]["entries"][-1]["request"]
    headers = {h["name"].lower(): h["value"] for h in sent["headers"]}
    assert headers["authorization"] == "Bearer ••••••" and headers["x-api-key"] == "••••••"
    assert "page=2" in sent["url"]


def test_reveal_writes_the_secrets_as_typed(hostile_http: Start, tmp_path: Path) -> None:
    har = tmp_path / "revealed.har"
    done = mcp_console("call", hostile_http("cli"), "say_head", "--header", f"Authorization: Bearer {TOKEN}",
                       "--har", str(har), "--reveal")
    assert done.returncode == 0, done.stderr
    assert TOKEN in done.stdout
    sent = _har(har)["log"]["entries"][-1]["request"]
    assert {"name": "Authorization", "value": f"Bearer {TOKEN}"} in sent["headers"]


def test_a_stdio_command_lines_credentials_are_masked_in_the_notes() -> None:
    argv = ["env", f"API_TOKEN={TOKEN}", sys.executable, *hostile_argv("cli")[1:]]
    done = mcp_console("call", "--stdio", shlex.join(argv), "ask_roots")
    assert done.returncode == 0, done.stderr
    assert "started pid" in done.stderr and "API_TOKEN=••••••" in done.stderr
    assert TOKEN not in done.stderr + done.stdout


def test_an_authorization_header_typed_wins_over_a_urls_user_and_password(hostile_http: Start) -> None:
    url = hostile_http("cli").replace("http://", "http://alice:pw@", 1)
    done = mcp_console("call", url, "say_head", "--header", f"Authorization: Bearer {TOKEN}", "--reveal")
    assert done.returncode == 0, done.stderr
    head = json.loads(done.stdout)["result"]["content"][0]["text"]
    assert f"\r\nAuthorization: Bearer {TOKEN}\r\n" in head and "Basic" not in head
