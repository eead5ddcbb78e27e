"""The command line against servers nobody here wrote: `check` of a 2025-11-25 server (server-everything,
server-filesystem, server-memory) under that revision's rules, `list` of what a server offers (fastmcp speaks
2026-07-28), and `--root` reaching server-filesystem, which replaces its allowed directories with the roots."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from app.mcp.lint.rules import RULES, rules_for
from tests.everything.fixtures import everything_argv, everything_url, needs_everything
from tests.integration.conftest import mcp_console
from tests.realservers.fixtures import (
    fastmcp_url,
    filesystem_argv,
    memory_argv,
    needs_fastmcp,
    needs_filesystem,
    needs_memory,
)

__all__ = ["everything_url", "fastmcp_url"]
pytestmark = pytest.mark.slow


@needs_everything
def test_check_in_auto_holds_server_everything_over_stdio_to_the_2025_11_25_rules() -> None:
    done = mcp_console("check", "--stdio", shlex.join(everything_argv()), "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert report["protocol_version"] == "2025-11-25"
    assert report["findings"] == []
    assert report["steps"][0].startswith("initialize: answered (2025-11-25)")
    assert any(step.startswith("tools/list: ") for step in report["steps"])
    assert "result.type-missing" not in report["rules_checked"] + report["rules_not_checked"]


@needs_everything
def test_check_of_server_everything_over_http_passes_in_auto_and_legacy_and_modern_says_to_try_auto(
        everything_url: str) -> None:
    for era in ("auto", "legacy"):
        done = mcp_console("check", everything_url, "--era", era)
        assert done.returncode == 0, (era, done.stdout, done.stderr)
        assert "initialize: answered (2025-11-25)" in done.stdout
        # the rules both revisions share, not all of them
        shared, every = len(rules_for("2025-11-25")), len(RULES)
        assert shared < every and f"of {shared} rules checked; 0 errors" in done.stdout
    modern = mcp_console("check", everything_url, "--era", "modern")
    assert modern.returncode == 2
    assert "try --era auto" in modern.stdout


@needs_memory
def test_check_calls_server_memorys_read_only_tools_and_finds_nothing() -> None:
    done = mcp_console("check", "--stdio", shlex.join(memory_argv()), "--call-tools", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert report["findings"] == []
    assert "tools/call 'read_graph': ok" in report["steps"]


@needs_filesystem
def test_call_with_root_makes_server_filesystem_serve_that_directory(tmp_path: Path) -> None:
    started_on, offered = tmp_path / "started-on", tmp_path / "offered"
    started_on.mkdir()
    offered.mkdir()
    argv = shlex.join(filesystem_argv(started_on))
    done = mcp_console("call", "--stdio", argv, "list_allowed_directories", "--root", str(offered))
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)["result"]["content"][0]["text"]
    assert str(offered) in said and str(started_on) not in said
    assert f"answered the server's roots/list (a 2025-11-25 server request) with 1 root(s): {offered.as_uri()}" \
        in done.stderr


@needs_filesystem
def test_call_without_root_answers_no_roots_and_server_filesystem_keeps_its_own(tmp_path: Path) -> None:
    done = mcp_console("call", "--stdio", shlex.join(filesystem_argv(tmp_path)), "list_allowed_directories")
    assert done.returncode == 0, done.stderr
    assert str(tmp_path) in json.loads(done.stdout)["result"]["content"][0]["text"]
    assert "with no roots (give --root URI to offer some)" in done.stderr


@needs_everything
def test_call_gives_server_everything_exactly_the_roots_named(everything_url: str) -> None:
    done = mcp_console("call", everything_url, "get-roots-list", "--root", "file:///srv/a", "--root", "file:///srv/b")
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)["result"]["content"][0]["text"]
    assert "2 total" in said and "file:///srv/a" in said and "file:///srv/b" in said


@needs_everything
def test_calls_default_elicitation_policy_is_said_on_stderr(everything_url: str) -> None:
    done = mcp_console("call", everything_url, "trigger-elicitation-request")
    assert "declined the server's elicitation" in done.stderr
    assert "required with no default (--elicit defaults; use --elicit FILE to answer)" in done.stderr
    declined = mcp_console("call", everything_url, "trigger-elicitation-request", "--elicit", "decline")
    assert "(--elicit decline; use --elicit defaults or --elicit FILE to answer)" in declined.stderr


@needs_everything
def test_list_of_server_everything_tools_resources_and_prompts(everything_url: str) -> None:
    tools = mcp_console("list", "tools", everything_url)
    assert tools.returncode == 0, tools.stderr
    head, *rows = tools.stdout.splitlines()
    assert head.split() == ["NAME", "TITLE", "DESCRIPTION"]
    echo = next(row for row in rows if row.startswith("echo "))
    assert "Echo Tool" in echo and "Echoes back the input string" in echo
    resources = json.loads(mcp_console("list", "resources", everything_url, "--json").stdout)
    assert resources["resources"] and resources["resourceTemplates"]
    assert all("uri" in r for r in resources["resources"])
    prompts = json.loads(mcp_console("list", "prompts", "--stdio", shlex.join(everything_argv()), "--json").stdout)
    assert {p["name"] for p in prompts["prompts"]} >= {"simple-prompt"}


@needs_fastmcp
def test_list_of_a_fastmcp_server_speaking_2026_07_28(fastmcp_url: str) -> None:
    tools = mcp_console("list", "tools", fastmcp_url, "--json")
    assert tools.returncode == 0, tools.stderr
    assert "2026-07-28: server/discover answered" in tools.stderr
    names = [t["name"] for t in json.loads(tools.stdout)["tools"]]
    assert "add" in names and "tag_note" in names
    table = mcp_console("list", "tools", fastmcp_url).stdout
    assert any(line.startswith("add ") and "Adds two numbers." in line for line in table.splitlines())
    resources = mcp_console("list", "resources", fastmcp_url)
    assert resources.returncode == 0
    assert "(no resources)" in resources.stdout and "notes://{name}" in resources.stdout
    prompts = mcp_console("list", "prompts", fastmcp_url)
    assert "summarize" in prompts.stdout and "Asks for a summary of a topic." in prompts.stdout


@needs_filesystem
def test_list_of_server_filesystem_tools_and_of_prompts_it_does_not_offer(tmp_path: Path) -> None:
    argv = shlex.join(filesystem_argv(tmp_path))
    tools = mcp_console("list", "tools", "--stdio", argv)
    assert tools.returncode == 0, tools.stderr
    assert any(line.startswith("list_allowed_directories ") for line in tools.stdout.splitlines())
    prompts = mcp_console("list", "prompts", "--stdio", argv, "--json")
    assert prompts.returncode == 0, prompts.stderr
    assert json.loads(prompts.stdout) == {"prompts": []}
    assert "the server declares no prompts capability" in prompts.stderr
