"""An input request whose params lack the shape its dialog reads is answered as raw JSON, never a page that fails:
a hostile server's `input_required` made the session page fail (500) for as long as the operation waited."""

from __future__ import annotations

from typing import Any

import pytest

from app.mcp.mrtr import form_schema_problem, kind_of

ODD = [
    {"method": "elicitation/create", "params": 7},
    {"method": "elicitation/create", "params": [1]},
    {"method": "sampling/createMessage", "params": {"messages": 5}},
    {"method": "sampling/createMessage", "params": {"messages": [5]}},
    {"method": "sampling/createMessage", "params": {"messages": [{"role": "user", "content": 5}]}},
]


@pytest.mark.parametrize("request_", ODD)
def test_an_input_request_of_another_shape_gets_the_raw_answer_dialog(request_: dict[str, Any]) -> None:
    assert kind_of(request_) == "unknown"


def test_input_requests_of_the_usual_shapes_keep_their_dialogs() -> None:
    assert kind_of({"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {}}}) == "form"
    assert kind_of({"method": "elicitation/create", "params": {"mode": "url", "url": "https://x"}}) == "url"
    assert kind_of({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}}) == "sampling"
    assert kind_of({"method": "roots/list"}) == "roots"


@pytest.mark.parametrize("enum", [5, "abc", {"a": 1}, None])
def test_a_schema_property_whose_enum_is_not_a_list_is_a_schema_problem_not_a_failure(enum: Any) -> None:
    schema = {"type": "object", "properties": {"p": {"type": "string", "enum": enum}}}
    assert form_schema_problem(schema) is not None
