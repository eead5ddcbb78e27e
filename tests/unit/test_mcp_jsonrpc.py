"""JSON-RPC framing: every shape is classified, and nothing a server sends makes parse_frame raise."""

from __future__ import annotations

import json
import random
import struct

import pytest

from app.mcp.jsonrpc import classify, decode, encode, notification, parse_frame, pretty, request


def test_parse_frame_classifies_a_request_with_its_id_method_and_params() -> None:
    raw = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}'
    frame = parse_frame(raw)
    assert frame.kind == "request"
    assert frame.problem is None
    assert frame.raw == raw
    assert frame.id == 7
    assert frame.method == "tools/call"
    assert frame.params == {"name": "echo"}


def test_parse_frame_classifies_a_message_with_a_method_and_no_id_as_a_notification() -> None:
    frame = parse_frame('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}')
    assert frame.kind == "notification"
    assert frame.id is None
    assert frame.method == "notifications/progress"


def test_parse_frame_classifies_a_result_with_an_id_as_a_response() -> None:
    frame = parse_frame('{"jsonrpc":"2.0","id":"a","result":{"resultType":"complete"}}')
    assert frame.kind == "response"
    assert frame.id == "a"
    assert frame.message == {"jsonrpc": "2.0", "id": "a", "result": {"resultType": "complete"}}


def test_parse_frame_classifies_an_error_object_with_an_id_as_an_error() -> None:
    frame = parse_frame('{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params"}}')
    assert frame.kind == "error"
    assert frame.id == 3
    assert frame.problem is None


def test_parse_frame_accepts_an_error_without_an_id_as_the_answer_to_a_rejected_notification() -> None:
    frame = parse_frame('{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"}}')
    assert frame.kind == "error"
    assert frame.id is None


def test_parse_frame_accepts_an_error_with_a_null_id() -> None:
    frame = parse_frame('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}')
    assert frame.kind == "error"
    assert frame.id is None


def test_an_error_with_an_id_but_without_an_integer_code_is_invalid() -> None:
    frame = parse_frame('{"jsonrpc":"2.0","id":1,"error":{"code":"oops","message":"x"}}')
    assert frame.kind == "invalid"
    assert "integer code" in (frame.problem or "")


def test_an_error_without_an_id_whose_error_is_not_an_object_is_invalid() -> None:
    kind, problem = classify({"jsonrpc": "2.0", "error": "boom"})
    assert kind == "invalid"
    assert problem


def test_parse_frame_refuses_a_batch_with_a_reason() -> None:
    frame = parse_frame('[{"jsonrpc":"2.0","id":1,"method":"ping"}]')
    assert frame.kind == "invalid"
    assert frame.message is None
    assert "batch" in (frame.problem or "")


@pytest.mark.parametrize("raw, type_name", [("42", "int"), ('"text"', "str"), ("null", "NoneType"),
                                            ("true", "bool")])
def test_parse_frame_marks_a_json_value_that_is_not_an_object_as_invalid(raw: str, type_name: str) -> None:
    frame = parse_frame(raw)
    assert frame.kind == "invalid"
    assert frame.message is None
    assert frame.problem == f"expected a JSON object, got {type_name}"


@pytest.mark.parametrize("raw", ["{not json", "", "data: {}", '{"jsonrpc":"2.0","id":1,"result":{}', "\x00"])
def test_parse_frame_keeps_malformed_json_as_an_invalid_frame_with_its_raw_text(raw: str) -> None:
    frame = parse_frame(raw)
    assert frame.kind == "invalid"
    assert frame.raw == raw
    assert frame.message is None
    assert (frame.problem or "").startswith("malformed JSON")


def test_parse_frame_survives_deeply_nested_json_without_raising() -> None:
    raw = "[" * 100_000 + "]" * 100_000
    frame = parse_frame(raw)
    assert frame.kind == "invalid"


@pytest.mark.parametrize("message", [{"id": 1, "result": {}}, {"jsonrpc": "1.0", "id": 1, "result": {}}])
def test_a_message_without_jsonrpc_2_0_is_invalid(message: dict) -> None:
    frame = parse_frame(json.dumps(message))
    assert frame.kind == "invalid"
    assert "jsonrpc" in (frame.problem or "")
    assert frame.message == message  # the object is still kept for display


def test_a_message_with_both_result_and_error_is_invalid() -> None:
    kind, problem = classify({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}})
    assert kind == "invalid"
    assert problem == 'both "result" and "error"'


def test_a_message_with_an_id_but_neither_result_nor_error_is_invalid() -> None:
    kind, problem = classify({"jsonrpc": "2.0", "id": 1})
    assert kind == "invalid"
    assert "result" in (problem or "")


def test_a_message_with_neither_method_nor_id_is_invalid() -> None:
    kind, problem = classify({"jsonrpc": "2.0", "result": {}})
    assert kind == "invalid"
    assert problem == "neither a method nor an id"


def test_a_method_that_is_not_a_string_is_invalid() -> None:
    kind, _ = classify({"jsonrpc": "2.0", "id": 1, "method": 5})
    assert kind == "invalid"


def test_frame_params_is_an_empty_dict_when_params_is_missing_or_not_an_object() -> None:
    assert parse_frame('{"jsonrpc":"2.0","method":"x"}').params == {}
    assert parse_frame('{"jsonrpc":"2.0","method":"x","params":[1]}').params == {}
    assert parse_frame("nope").params == {}


def test_encode_writes_one_compact_line_and_keeps_non_ascii() -> None:
    text = encode(request(1, "tools/call", {"name": "héllo", "arguments": {"text": "a\nb"}}))
    assert "\n" not in text
    assert "héllo" in text
    assert ", " not in text
    assert parse_frame(text).kind == "request"


def test_notification_leaves_out_params_when_none_are_given() -> None:
    assert notification("notifications/cancelled") == {"jsonrpc": "2.0", "method": "notifications/cancelled"}
    assert notification("x", {"a": 1})["params"] == {"a": 1}


def test_pretty_indents_json_and_returns_anything_else_unchanged() -> None:
    assert pretty('{"a":1}') == '{\n  "a": 1\n}'
    assert pretty("{broken") == "{broken"


def test_encode_refuses_nan_rather_than_send_something_that_is_not_json() -> None:
    import math

    from app.mcp.jsonrpc import encode

    with pytest.raises(ValueError):
        encode({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"v": math.nan}})


# --- decode: orjson where it reads a text exactly as the stdlib does ------------------------------------------

def _stdlib(raw: str) -> tuple[str, object]:
    try:
        return "ok", json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return "refused", type(exc)


def _ours(raw: str) -> tuple[str, object]:
    try:
        return "ok", decode(raw)
    except (ValueError, RecursionError) as exc:
        return "refused", type(exc)


def _same(a: tuple[str, object], b: tuple[str, object]) -> bool:
    # repr tells 1 from 1.0 and -0.0 from 0.0, and a NaN equals itself there
    return a[0] == b[0] and (a[0] == "refused" or repr(a[1]) == repr(b[1]))


@pytest.mark.parametrize("raw", [
    "18446744073709551616", "-9223372036854775809", '{"id":123456789012345678901234567890}',  # past 64 bits
    "18446744073709551615", "-9223372036854775808",  # 64 bits: orjson's own integers
    "1e400", "-1e400", "NaN", "Infinity", "-Infinity", '{"a":NaN}',  # the stdlib reads them, orjson refuses
    '"\\ud800"', '{"m":"\\udc00\\ud800"}', '"\udc80"',  # lone surrogates, escaped and in the str itself
    '{"a":1,"a":2,"b":3}', "-0", "-0.0", "4.9e-324", "1e-400", "0.30000000000000004", "\ufeff{}", " {} ",
    "[1,]", "01", ".5", "5.", "+1", '"a\nb"', '{"a":1}x', "", "[" * 1000 + "]" * 1000, "[" * 3000 + "]" * 3000,
])
def test_decode_reads_every_text_as_the_stdlib_does(raw: str) -> None:
    assert _same(_ours(raw), _stdlib(raw)), raw[:60]


def test_decode_agrees_with_the_stdlib_on_fuzzed_texts_and_numbers() -> None:
    rnd = random.Random(13)
    alphabet = [*'{}[],:"\\ \t\n\r0123456789.-+eE', "\\u", "d800", "\x00", "\x1f", "é", "\u2028", "true", "null",
                "false", '"a"', "1e5", "\ufeff", "NaN", "Infinity"]
    texts = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12))) for _ in range(20_000)]
    for _ in range(5_000):
        digits = "".join(rnd.choice("0123456789") for _ in range(rnd.randint(1, 25))).lstrip("0") or "0"
        frac = "".join(rnd.choice("0123456789") for _ in range(rnd.randint(0, 20)))
        texts.append(("-" if rnd.random() < 0.3 else "") + digits + (f".{frac}" if frac else "")
                     + (f"e{rnd.randint(-330, 330)}" if rnd.random() < 0.5 else ""))
        texts.append(repr(struct.unpack("d", struct.pack("Q", rnd.getrandbits(64)))[0]))
    for raw in texts:
        assert _same(_ours(raw), _stdlib(raw)), raw
