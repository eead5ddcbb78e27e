"""What a generated form sends is what it holds, against real server processes (issue 34, item 5): path-named
inputs of nested objects and arrays arrive as the arguments the JSON box shows for the same form; a resource
template's variables arrive as the RFC 6570 expansion; completions carry the other fields as context.arguments."""

from __future__ import annotations

import json
import shlex
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from app.web.form_tree import path_name
from tests.realservers.fixtures import memory_argv, needs_memory

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.integration.conftest import Console

JSON = {"Accept": "application/json"}
FORM_BODY = {"Content-Type": "application/x-www-form-urlencoded"}


def at(*path: str | int) -> str:
    return path_name(path)


FORM = [("tool", "nested_args"), (at("note", "title"), "Shopping ✓"), (at("note", "priority"), "5"),
        (at("note", "flags", "pinned"), "true"), (at("tags", 0), "item"), (at("tags", 0, "name"), "x"),
        (at("tags", 0, "weight"), "-0.25"), (at("tags", 1), "item"), (at("tags", 1, "name"), " "),
        (at("ids", 0), "9007199254740993"), ("arg.mode", "slow"), ("arg.a.b", "flat"), (at("a", "b"), "deep"),
        ("arg.empty_is_left_out", "")]
SENT = {"note": {"title": "Shopping ✓", "priority": 5, "flags": {"pinned": True}},
        "tags": [{"name": "x", "weight": -0.25}, {"name": " "}], "ids": [9007199254740993], "mode": "slow",
        "a.b": "flat", "a": {"b": "deep"}}


async def test_a_nested_form_arrives_as_the_arguments_its_json_box_shows(
        console: Console, hostile_http: Callable[..., str]) -> None:
    sid = await console.connected_http(hostile_http("forms"))
    assert await box_json(console, sid, FORM) == SENT
    reply = await console.http.post(f"/sessions/{sid}/tools/call", content=urlencode(FORM),
                                    headers={**JSON, **FORM_BODY})
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer["ok"], answer
    # The target's own reading of what arrived, and the frame that went out on the wire.
    assert json.loads(answer["result"]["content"][0]["text"]) == SENT
    assert (await sent_params(console, sid, answer["key"]))["arguments"] == SENT


async def box_json(console: Console, sid: str, form: list[tuple[str, str]]) -> Any:
    """The arguments the JSON box shows for this form (what parse_form reads, as a call in form mode does)."""
    shown = await console.http.post(f"/sessions/{sid}/tools/arguments", content=urlencode(form), headers=FORM_BODY)
    assert shown.status_code == 200, shown.text
    box = shown.json()
    assert box["ok"] and box["errors"] == {}, box
    return json.loads(box["json"])


async def sent_params(console: Console, sid: str, key: str) -> Any:
    """The params of the request frame that exchange `key` wrote to the wire."""
    for frame in (await console.entry(sid, key))["wire"]:
        if frame.get("kind") == "request":
            return json.loads(frame["raw"])["params"]
    raise AssertionError(f"no request frame for {key}")


class Inputs(HTMLParser):
    """What a browser would submit from a fragment: named inputs with their values, chosen options, textareas."""

    def __init__(self) -> None:
        super().__init__()
        self.pairs: list[tuple[str, str]] = []
        self._select: str | None = None
        self._textarea: str | None = None
        self._templates = 0  # an Add button's item is not part of the form until added

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "template":
            self._templates += 1
        if self._templates:
            return
        if tag == "input" and "name" in a and (a.get("type") not in ("checkbox", "radio") or "checked" in a):
            self.pairs.append((a["name"], a.get("value", "")))
        elif tag == "select":
            self._select = a.get("name")
        elif tag == "option" and self._select is not None and "selected" in a:
            self.pairs.append((self._select, a.get("value", "")))
        elif tag == "textarea" and "name" in a:
            self._textarea = a["name"]
            self.pairs.append((a["name"], ""))

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self.pairs[-1] = (self._textarea, self.pairs[-1][1] + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "template":
            self._templates -= 1
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


async def test_json_put_into_the_form_comes_back_as_the_same_inputs_and_json_that_does_not_fit_says_why(
        console: Console, hostile_http: Callable[..., str]) -> None:
    sid = await console.connected_http(hostile_http("forms"))
    fits = await console.http.post(f"/sessions/{sid}/tools/fields",
                                   data={"tool": "nested_args", "source": "json", "json": json.dumps(SENT)})
    assert fits.status_code == 200, fits.text
    # The form rendered from that JSON, submitted as a browser would, reads back as the same JSON.
    inputs = Inputs()
    inputs.feed(fits.text)
    assert await box_json(console, sid, [("tool", "nested_args"), *inputs.pairs]) == SENT
    refused = await console.http.post(f"/sessions/{sid}/tools/fields", data={
        "tool": "nested_args", "source": "json", "json": json.dumps({**SENT, "ids": [1.5]})})
    assert refused.status_code == 422
    assert "ids[0]: Enter a whole number." in refused.json()["why"]


async def test_a_template_read_sends_the_rfc_6570_expansion_of_its_fields(console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    preview = await console.http.get(f"/sessions/{sid}/templates/expand",
                                     params={"template": "demo://items/{item_id}{?v}", "var.item_id": "a b/c",
                                             "var.v": "é"})
    assert preview.json() == {"uri": "demo://items/a%20b%2Fc?v=%C3%A9", "problem": None}
    reply = await console.http.post(f"/sessions/{sid}/templates/read", headers=JSON,
                                    data={"template": "demo://items/{item_id}", "var.item_id": "beta"})
    answer = reply.json()
    assert (await sent_params(console, sid, answer["key"]))["uri"] == "demo://items/beta"
    assert "Mostly works" in json.dumps(answer["result"])
    bad = await console.http.post(f"/sessions/{sid}/templates/read", headers=JSON, data={"template": "x{oops"})
    assert bad.json()["sent"] is False


async def test_a_completion_carries_the_other_fields_as_context_and_is_on_the_timeline(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    got = await console.http.post(f"/sessions/{sid}/complete/suggest", data={
        "ref_type": "ref/prompt", "ref": "greet", "argument": "style", "value": "p",
        "ctx.style": "ignored: the field being completed", "ctx.name": "Ada", "ctx.empty": ""})
    assert got.status_code == 200, got.text
    assert got.json()["values"] == ["pirate"]
    entries = [e for e in (await console.session(sid))["timeline"] if e.get("method") == "completion/complete"]
    assert len(entries) == 1
    params = await sent_params(console, sid, entries[0]["key"])
    assert params["context"] == {"arguments": {"name": "Ada"}}
    assert params["argument"] == {"name": "style", "value": "p"}


@needs_memory
async def test_server_memorys_entities_with_lists_inside_items_go_through_the_form_as_they_were_given(
        console: Console, tmp_path: Path) -> None:
    # create_entities takes an array of objects that each hold an array of strings: JSON put into the form, the
    # form submitted as a browser submits it, and what the real server stored comes back.
    memory = tmp_path / "memory.jsonl"
    command = "env MEMORY_FILE_PATH=" + shlex.quote(str(memory)) + " " + shlex.join(memory_argv())
    s = await console.connect(kind="stdio", command=command)
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    given = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote notes", "liked engines"]},
                          {"name": "Engine", "entityType": "machine", "observations": []}]}
    fields = await console.http.post(f"/sessions/{sid}/tools/fields",
                                     data={"tool": "create_entities", "source": "json", "json": json.dumps(given)})
    assert fields.status_code == 200, fields.text
    inputs = Inputs()
    inputs.feed(fields.text)
    form = [("tool", "create_entities"), *inputs.pairs]
    assert await box_json(console, sid, form) == given
    reply = await console.http.post(f"/sessions/{sid}/tools/call", content=urlencode(form),
                                    headers={**JSON, **FORM_BODY})
    answer = reply.json()
    assert answer["ok"], answer
    assert (await sent_params(console, sid, answer["key"]))["arguments"] == given
    stored = [json.loads(line) for line in memory.read_text().splitlines()]
    assert [(e["name"], e["observations"]) for e in stored] == [("Ada", ["wrote notes", "liked engines"]),
                                                                ("Engine", [])]
