"""Every field a tool, resource, template and prompt declares is on the page, escaped, against real target
processes (the hostile target's `details` module, the bundled demo); and a result that breaks its outputSchema
is a lint finding on its entry and shown with the result."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.hostile.tools_details import PNG
from tests.integration.conftest import eventually

if TYPE_CHECKING:
    from tests.integration.conftest import Console

HTML = {"Accept": "text/html"}


def _text(html: str) -> str:
    """The markup without the <bdi> every server string is wrapped in (app/web/render.py `visible`)."""
    return html.replace('<bdi class="sv">', "").replace("</bdi>", "")


async def _session(console: Console, url: str) -> str:
    s = await console.connect(kind="http", url=url)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


def _row(page: str, attr: str) -> str:
    found = re.search(rf'<details class="item"[^>]*{attr}.*?</summary>', page, re.DOTALL)
    assert found, attr
    return found.group(0)


async def test_a_tools_row_shows_its_title_declared_hints_and_the_first_line_of_its_description(
        console: Console, hostile_http: Callable[..., str]) -> None:
    sid = await _session(console, hostile_http("details"))
    page = (await console.http.get(f"/sessions/{sid}", headers=HTML)).text
    row = _row(page, 'data-tool="every_field"')
    assert "Every field &lt;b&gt;bold&lt;/b&gt;&lt;script&gt;" in row
    assert "First line of the description &lt;b&gt;" in row and "A second line" not in row
    for label in ("may modify", "additive", "idempotent", "closed world"):
        assert f">{label}</span>" in row, label
    assert 'title="destructiveHint: The tool&#39;s updates are only additive' in row
    odd = _row(page, 'data-tool="odd_hints"')
    # read-only declared; destructive does not apply to a read-only tool; "yes" is not a boolean: not a badge
    assert ">read-only</span>" in odd and "destructive" not in odd and "open world" not in odd
    assert "<script>" not in page.split('id="group-tools"')[1].split('id="group-resources"')[0]


async def test_a_tools_body_shows_every_hint_with_defaults_marked_its_schema_meta_icons_and_task_support(
        console: Console, hostile_http: Callable[..., str]) -> None:
    sid = await _session(console, hostile_http("details"))
    body = (await console.http.get(f"/sessions/{sid}/tools/form", params={"name": "every_field"})).text
    assert "<script>" not in body and "<img src=x" not in body
    assert "A second line &lt;img src=x" in body  # the whole description
    assert "annotated title &lt;b&gt;" in body
    assert body.count(">declared</span>") == 4
    assert re.search(r"task-optional[^>]*>task <bdi class=\"sv\">optional</bdi>", body)
    assert "MCP App UI" in body and "ui://every/&lt;b&gt;bold" in body and 'href="ui://' not in body
    assert "vendor/note" in body  # the whole _meta, as JSON
    assert "<code>outputSchema</code>" in body and "a count &lt;b&gt;" in body
    # Icons: the PNG data: URI is drawn; SVG, https and javascript: are named, never loaded
    assert f'<img class="icon" src="data:image/png;base64,{PNG}"' in body
    assert body.count('<img class="icon"') == 1
    assert "not a raster type the console draws" in body and "not loaded" in body
    assert "not an https: or data: URI" in body and 'src="javascript:' not in body
    odd = (await console.http.get(f"/sessions/{sid}/tools/form", params={"name": "odd_hints"})).text
    assert odd.count(">default</span>") == 1  # idempotentHint
    assert "Does not apply: the tool is read-only." in odd
    assert "not a boolean: the default applies" in odd and "&#34;yes &lt;b&gt;" in odd
    assert "task-unknown" in odd and "sometimes &lt;b&gt;" in odd


async def test_a_resource_template_and_prompt_show_every_declared_field_escaped(
        console: Console, hostile_http: Callable[..., str]) -> None:
    sid = await _session(console, hostile_http("details"))
    page = _text((await console.http.get(f"/sessions/{sid}", headers=HTML)).text)
    resources = page.split('id="group-resources"')[1].split('id="group-templates"')[0]
    assert "Declared: size, annotations, icons, _meta" in resources
    assert "123456 bytes (120.6 KB)" in resources
    assert "assistant&lt;b&gt;bold" in resources and "0.25" in resources and "2026-07-28&lt;b&gt;" in resources
    templates = page.split('id="group-templates"')[1].split('id="group-prompts"')[0]
    assert "details://items/{id}&lt;b&gt;" in templates and "Declared: mimeType, annotations, icons, _meta" \
        in templates
    assert "Not a number from 0 to 1" in templates  # priority 3
    prompts = page.split('id="group-prompts"')[1]
    row = _row(prompts, 'data-prompt="every_prompt"')
    assert "First prompt line &lt;b&gt;" in row and "more &lt;img" not in row
    assert "Declared: icons, _meta" in prompts
    assert ">required</span>" in prompts and ">optional</span>" in prompts and "what to write about &lt;img" in prompts
    for part in (resources, templates, prompts):
        assert "<script>" not in part and "<b>" not in part and "<img src=x" not in part
        assert "ui://every/&lt;b&gt;" in part


async def test_the_demo_tools_show_their_hints_in_the_list(console: Console, demo_url: str) -> None:
    sid = await _session(console, demo_url)
    page = (await console.http.get(f"/sessions/{sid}", headers=HTML)).text
    echo = _row(page, 'data-tool="echo"')
    assert ">read-only</span>" in echo and ">closed world</span>" in echo
    assert 'class="first-line sv" dir="auto"' in echo  # isolated as a <bdi> is, one element less a row


async def _entry_findings(console: Console, sid: str, op_id: str) -> list[dict[str, Any]]:
    async def found() -> list[dict[str, Any]] | None:
        entry = next(e for e in (await console.session(sid))["timeline"] if e.get("op") == op_id)
        return entry["findings"] if entry.get("finding_count") else None

    return list(await eventually(found, what="the outputSchema finding on the call's entry"))


async def test_a_result_without_structured_content_is_a_finding_on_its_entry_and_said_with_the_result(
        console: Console, hostile_http: Callable[..., str]) -> None:
    sid = await _session(console, hostile_http("details"))
    reply = await console.call_tool(sid, "no_structured")
    assert reply["output_validation"] == {
        "valid": False, "message": "The tool declares an outputSchema but sent no structuredContent."}
    findings = await _entry_findings(console, sid, reply["operation"]["op"])
    assert [f["rule"] for f in findings] == ["tools.structured-content"]
    card = await console.http.post(f"/sessions/{sid}/tools/call", data={"tool": "no_structured"})
    assert "tools.structured-content" in card.text
    assert "The tool declares an outputSchema but sent no structuredContent." in card.text


async def test_structured_content_that_breaks_the_schema_is_a_finding_and_a_match_is_none(
        console: Console, hostile_http: Callable[..., str]) -> None:
    sid = await _session(console, hostile_http("details"))
    good = await console.call_tool(sid, "every_field")
    assert good["output_validation"]["valid"] is True
    bad = await console.call_tool(sid, "wrong_structured")
    findings = await _entry_findings(console, sid, bad["operation"]["op"])
    assert [f["rule"] for f in findings] == ["tools.structured-content"]
    assert "at n: 'seven' is not of type 'integer'" in findings[0]["message"]
    good_entry = next(e for e in (await console.session(sid))["timeline"] if e.get("op") == good["operation"]["op"])
    assert not good_entry.get("finding_count")
