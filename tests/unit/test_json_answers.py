"""The JSON answer's rendering: orjson where it writes exactly, the stdlib where it refuses, never a failure."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.web.deps import TargetJSONResponse


def rendered(content: Any) -> bytes:
    return bytes(TargetJSONResponse(content).body)


@pytest.mark.parametrize("content", [
    {"ok": True, "result": {"content": [{"type": "text", "text": "hi"}]}, "n": [0, -1, 2.5, 1e16, 0.1]},
    {"text": "é ☃ \u2028 <script>", "nested": {"a": [None, False, {"b": ""}]}},
    {"big": 2**63 - 1, "small": -(2**63)},
])
def test_an_ordinary_answer_is_the_same_json_the_stdlib_writes(content: dict[str, Any]) -> None:
    body = rendered(content)
    assert json.loads(body) == content
    assert body == json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()


def test_a_small_float_is_the_same_number_however_its_exponent_is_spelled() -> None:
    assert json.loads(rendered({"x": 1e-7, "y": 5e-324})) == {"x": 1e-7, "y": 5e-324}


def test_integers_past_64_bits_keep_every_digit() -> None:
    assert json.loads(rendered({"n": 2**70, "m": -(2**80)})) == {"n": 2**70, "m": -(2**80)}


def test_keys_that_are_not_strings_are_written_as_the_stdlib_writes_them() -> None:
    assert rendered({1: "a", None: "b"}) == b'{"1":"a","null":"b"}'


def test_a_lone_surrogate_goes_back_as_its_escape() -> None:
    assert rendered({"t": "x\ud800y"}) == b'{"t":"x\\ud800y"}'


def test_nan_and_infinity_become_null() -> None:
    body = rendered({"a": float("nan"), "b": [float("inf"), -float("inf")]})
    assert json.loads(body) == {"a": None, "b": [None, None]}


def test_nesting_deeper_than_orjson_writes_is_still_answered() -> None:
    deep: Any = "end"
    for _ in range(300):
        deep = [deep]
    body = rendered({"deep": deep})
    value = json.loads(body)["deep"]
    for _ in range(300):
        value = value[0]
    assert value == "end"
