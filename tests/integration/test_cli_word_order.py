"""The command line as people type it: options between the kind and the URL, and a mistyped --json said in words."""

from __future__ import annotations

import json

from tests.integration.conftest import mcp_console


def test_list_takes_its_options_between_the_kind_and_the_url(demo_url: str) -> None:
    done = mcp_console("list", "tools", "--json", demo_url)
    assert done.returncode == 0, done.stderr
    assert "echo" in {t["name"] for t in json.loads(done.stdout)["tools"]}


def test_a_json_argument_that_is_not_json_is_a_sentence_not_a_traceback(demo_url: str) -> None:
    done = mcp_console("call", demo_url, "echo", "--json", "{bad")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "--json is not JSON" in done.stderr
    both = mcp_console("call", demo_url, "echo", "--json", "{}", "--arg", "text=hi")
    assert both.returncode != 0 and "not both" in both.stderr
