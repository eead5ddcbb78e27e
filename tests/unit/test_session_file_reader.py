"""The session file reader's orjson path reads every event exactly as the stdlib path does, or leaves it to it.

The reference is the same reader with the orjson path turned off (`_fast_data` always declining, and no run of
events read in one pass), which is what an import read before it. Each file is read in small pieces too, so events
are cut at a buffer's end.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.console import session_stream
from app.console.events import EVENT_VERSION
from app.console.store import ImportRow

HEAD = ('{"format": "mcp-console-session", "version": 2, "session": {"id": "s1", "created": 1.0, "meta": {}}, '
        '"events": [')


def _event(seq: int, data_text: str, kind: str = "wire") -> str:
    return (f'{{"v": {EVENT_VERSION}, "session_id": "s1", "seq": {seq}, "kind": "{kind}", "at": {seq}.5, '
            f'"data": {data_text}}}')


def _wire(headers_text: str, raw: str = "frame") -> str:
    return f'{{"direction": "in", "raw": {json.dumps(raw)}, "headers": {headers_text}, "exchange": "b1"}}'


def _finished(value_text: str) -> str:
    # Any JSON value where a record takes any (a frame's headers are checked as a list of pairs on import).
    return f'{{"key": "b1", "status": "error", "error_code": {value_text}}}'


def _file(datas: list[str], sep: str = ", ") -> str:
    return HEAD + sep.join(_event(i + 1, d, "exchange_finished" if d.startswith('{"key"') else "wire")
                           for i, d in enumerate(datas)) + "]}"


def _rows(text: str, piece: int | None = None) -> list[tuple[Any, ...]]:
    pos = 0

    def read(n: int) -> str:
        nonlocal pos
        out = text[pos:pos + min(n, piece or n)]
        pos += len(out)
        return out
    reader = session_stream.SessionFileReader(read)
    reader.open()
    return [(r.seq, r.kind, r.at, repr(r.data), r.text) for r in reader.rows()]


def _stdlib_rows(monkeypatch: pytest.MonkeyPatch, text: str, piece: int | None = None) -> list[tuple[Any, ...]]:
    with monkeypatch.context() as m:
        m.setattr(session_stream, "_fast_data", lambda text: session_stream._UNREAD)
        m.setattr(session_stream, "_region", lambda buf, head: ([], -1, 0))  # its orjson too: an event at a time
        return _rows(text, piece)


def _counting_fast_data(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the events the orjson path parsed (it returned data for them), reading an event at a time."""
    monkeypatch.setattr(session_stream, "_region", lambda buf, head: ([], -1, 0))
    parsed = [0]
    real: Callable[[str], Any] = session_stream._fast_data

    def counted(text: str) -> Any:
        out = real(text)
        parsed[0] += out is not session_stream._UNREAD
        return out
    monkeypatch.setattr(session_stream, "_fast_data", counted)
    return parsed


HOSTILE = {
    "a lone surrogate": '["x-a", "\\ud800"]',
    "an integer past 64 bits": "[[\"n\", 1180591620717411303424]]",
    "a negative integer past 64 bits": "[[\"n\", -9223372036854775809]]",
    "NaN and infinities": "[[NaN, Infinity, -Infinity]]",
    "a float past the double's range": "[[1e400]]",
    "a duplicated key": '{"a": 1, "b": 2, "a": 3}',
    "the next event's head inside the data": '[{}, {"v": 2, "session_id": "s1"}]',
    "escapes and non-ASCII": '[["\\u00e9\\n\\"\\\\", "é€😀", "\\ud83d\\ude00"]]',
    "nesting the stdlib still reads": "[" * 600 + "]" * 600,
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("piece", [None, 97])
def test_a_hostile_event_reads_as_the_stdlib_reads_it(monkeypatch: pytest.MonkeyPatch, case: str,
                                                       piece: int | None) -> None:
    text = _file([_wire("null"), _finished(HOSTILE[case]), _wire("null", raw="after")])
    assert _rows(text, piece) == _stdlib_rows(monkeypatch, text, piece)


def test_an_event_nested_past_what_the_stdlib_reads_is_refused_as_before() -> None:
    text = _file([_finished("[" * 5000 + "]" * 5000)])
    with pytest.raises(ValueError, match="deeper"):
        _rows(text)


def test_the_events_the_console_writes_are_parsed_by_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _file([_wire("null", raw=f"frame {i}") for i in range(50)])
    expected = _stdlib_rows(monkeypatch, text)
    parsed = _counting_fast_data(monkeypatch)
    assert _rows(text) == expected
    assert parsed[0] == 49  # all but the last, which no next head follows


def test_a_buffer_with_a_long_run_of_digits_is_left_to_the_stdlib(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _file([_wire("null"), _wire("null", raw="1234567890123456789"), _wire("null")])
    expected = _stdlib_rows(monkeypatch, text)
    parsed = _counting_fast_data(monkeypatch)
    assert _rows(text) == expected
    assert parsed[0] == 0


@pytest.mark.parametrize("sep", [",", ",\n  ", " , "])
def test_a_file_of_another_writer_reads_the_same(monkeypatch: pytest.MonkeyPatch, sep: str) -> None:
    text = _file([_wire("null", raw=f"frame {i}") for i in range(40)], sep=sep)
    assert _rows(text) == _stdlib_rows(monkeypatch, text)
    assert _rows(text, 53) == _stdlib_rows(monkeypatch, text, 53)


def test_data_with_whitespace_around_it_is_left_to_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    text = HEAD + _event(1, " " + _wire("null")) + ", " + _event(2, _wire("null") + " ") + ", " + \
        _event(3, _wire("null")) + "]}"
    assert _rows(text) == _stdlib_rows(monkeypatch, text)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text() | st.sampled_from(["\ud800", "a\udfffb", "\x00"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(values=st.lists(JSON_VALUES, min_size=1, max_size=6), ascii_only=st.booleans(),
       piece=st.sampled_from([None, 61]))
def test_any_data_reads_as_the_stdlib_reads_it(values: list[Any], ascii_only: bool, piece: int | None) -> None:
    text = _file([_finished(json.dumps(v, ensure_ascii=ascii_only)) for v in values])
    with pytest.MonkeyPatch.context() as m:
        assert _rows(text, piece) == _stdlib_rows(m, text, piece)


def test_rows_keep_the_data_text_as_the_file_has_it() -> None:
    data = '{"direction":"in","raw":"x","headers":null,"exchange":"b1"}'  # compact, as the console writes some
    rows = list(_read_rows(_file([data, data])))
    assert [r.text for r in rows] == [data, data]


def _read_rows(text: str) -> list[ImportRow]:
    it = iter([text])
    reader = session_stream.SessionFileReader(lambda n: next(it, ""))
    reader.open()
    return list(reader.rows())


@pytest.mark.parametrize("at", [0.0, -0.0, 1.5, 1764611111.1234567, 1e300, 5e-324, float("nan"), float("inf"),
                                -float("inf"), 7, True, None, 2**70])
def test_an_exported_event_spells_its_time_as_json_dumps_does(at: Any) -> None:
    assert session_stream._json_at(at) == json.dumps(at)


@pytest.mark.parametrize("kind", ["wire", "exchange_started", "é", "\ud800", 'a"b\\', "\x00\u2028", 3])
def test_an_exported_event_spells_its_kind_as_json_dumps_does(kind: Any) -> None:
    assert session_stream._json_str(kind) == json.dumps(kind)


_FRAMES = [
    '{"raw":"plain","headers":null,"note":null}',
    '{"raw":"x","headers":[["Set-Cookie","sid=s3ss10n"],["X-Trace","t1"]]}',
    '{"raw":"x","headers":[]}',
    '{"raw":"big 1","n":123456789012345678901234,"headers":null}',
    '{"raw":"q \\" \\\\ \\n \\t","headers":null}',
]


@pytest.mark.parametrize("data", _FRAMES)
def test_a_masked_export_masks_what_the_server_sent_under_a_credentials_name_and_nothing_else(data: str) -> None:
    # The target's own secret values are masks in the log already (app/console/scrub.py): the file writes each
    # frame as stored, but for a header the server sent under a credential's name.
    from app.console.secrets import mask_wire
    from app.console.store import StoredEvent

    text = session_stream._event_text(StoredEvent(1, "wire", 1.5, data, EVENT_VERSION), True)
    written = json.loads("{\"seq\": " + text)["data"]
    assert written == mask_wire(json.loads(data)) and "s3ss10n" not in text
    owners = session_stream._event_text(StoredEvent(1, "wire", 1.5, data, EVENT_VERSION), False)
    assert json.loads("{\"seq\": " + owners)["data"] == json.loads(data)


def _strict_loads(text: str) -> Any:
    def refuse(word: str) -> None:
        raise AssertionError(f"bare {word} in the file: no JSON reader but Python's takes it")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("masked", [False, True])
def test_a_servers_bare_nan_and_infinity_are_exported_as_null_and_the_same_words_in_strings_are_kept(
        masked: bool) -> None:
    from app.console.store import StoredEvent

    data = '{"key": "b1", "status": "ok", "result": {"x": NaN, "y": [Infinity, -Infinity], "s": "NaN Infinity"}}'
    text = session_stream._event_text(StoredEvent(1, "exchange_finished", 1.5, data, EVENT_VERSION), masked)
    written = _strict_loads("{\"seq\": " + text)["data"]
    assert written["result"] == {"x": None, "y": [None, None], "s": "NaN Infinity"}


def test_an_event_with_nan_only_inside_a_string_is_exported_as_it_was_stored() -> None:
    from app.console.store import StoredEvent

    data = '{"level": "info", "message": "got NaN and -Infinity"}'
    text = session_stream._event_text(StoredEvent(1, "notice", 1.5, data, EVENT_VERSION), False)
    assert text.endswith(f'"data": {data}}}')


def _read_all(text: str, piece: int | None = None) -> list[tuple[Any, ...]]:
    return _rows(text, piece)


@pytest.mark.parametrize("tail", ['{"format": "mcp-console-session"}', "x", "]", '\n{"events": []}'])
@pytest.mark.parametrize("piece", [None, 7])
def test_anything_after_the_session_objects_closing_brace_is_refused(tail: str, piece: int | None) -> None:
    with pytest.raises(ValueError, match="data after the end of the session file"):
        _read_all(_file(['{"raw": "a"}']) + " \n" + tail, piece)


@pytest.mark.parametrize("piece", [None, 7])
def test_whitespace_after_the_session_objects_closing_brace_is_fine(piece: int | None) -> None:
    assert len(_read_all(_file(['{"raw": "a"}']) + " \r\n\t\n", piece)) == 1


@pytest.mark.parametrize("piece", [None, 64, 4096])
def test_a_json_error_deep_in_a_file_says_where_it_is_in_the_file_not_in_the_readers_buffer(
        piece: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    good = [_wire("null", raw=f"frame {i}") for i in range(300)]
    text = _file([*good, '{"raw": tru}', *good], sep=",\n  ")
    with pytest.raises(json.JSONDecodeError) as whole:
        json.loads(text)
    expected = f"{whole.value.msg}: line {whole.value.lineno} column {whole.value.colno} (char {whole.value.pos} " \
               "of the file)"
    monkeypatch.setattr(session_stream, "READ_BYTES", 1000)  # many buffers before the error, whatever the piece
    with pytest.raises(ValueError) as read:
        _read_all(text, piece)
    assert str(read.value) == expected


@pytest.mark.parametrize("data", [
    '{"op": "o1", "errors": {"profile": {"email": "not an email"}}, "drafts": {"profile": {"arg.email": ["pw"]}}}',
    '{"op": "o1", "params": {"x\\"drafts": {}, "x\\"errors": {}}, "errors": {}, "drafts": {"p": {"a": ["pw"]}}}',
    '{"op":"o1","errors":{},"drafts":{"p":{"a":["pw"]}}}',  # another writer's spelling: parsed to be sure
])
def test_a_masked_export_leaves_out_what_was_typed_into_a_refused_answer(data: str) -> None:
    from app.console.store import StoredEvent

    text = session_stream._event_text(StoredEvent(1, "op_snapshot", 1.5, data, EVENT_VERSION), True)
    written = json.loads("{\"seq\": " + text)["data"]
    assert written["drafts"] == {} and written["errors"] == {} and written["op"] == "o1"
    kept = session_stream._event_text(StoredEvent(1, "op_snapshot", 1.5, data, EVENT_VERSION), False)
    assert json.loads("{\"seq\": " + kept)["data"] == json.loads(data)  # the owner's file with secrets keeps it


def test_an_operation_event_with_nothing_typed_is_exported_masked_as_it_was_stored() -> None:
    from app.console.store import StoredEvent

    data = '{"op": "o1", "errors": {}, "drafts": {}, "final": null}'
    assert session_stream._event_text(StoredEvent(1, "op_snapshot", 1.5, data, EVENT_VERSION), True).endswith(
        f'"data": {data}}}')


def test_a_bare_nan_in_the_sessions_discover_answer_is_written_to_the_files_header_as_null() -> None:
    from app.console.store import SqliteStore

    store = SqliteStore(":memory:")
    try:
        meta = {"target": {"kind": "http", "url": "http://h/mcp"},
                "discover": {"ttlMs": float("nan"), "note": "NaN"}, "lists": {"tools": [{"x": float("inf")}]}}
        text = "".join(session_stream.session_file("s1", meta, 1.0, store))
    finally:
        store.close()
    written = _strict_loads(text)["session"]["meta"]
    assert written["discover"] == {"ttlMs": None, "note": "NaN"} and written["lists"]["tools"] == [{"x": None}]


@pytest.mark.parametrize(("before", "after"), [
    ("", ', "session": {"id": "x", "created": 2.0, "meta": {"target": {"kind": "http", "url": "http://last/"}}}'),
    (', "session": {"id": "x", "created": 2.0, "meta": {}}', ""),
    ("", ', "version": 2'),
    ("", ', "format": "mcp-console-session"'),
])
def test_a_header_field_the_import_reads_given_twice_is_refused_not_read_first_wins(before: str, after: str) -> None:
    head = HEAD.replace(', "events": [', before + ', "events": [')
    text = head + _event(1, _wire("null")) + "]" + after + "}"
    with pytest.raises(ValueError, match="the file has two"):
        _read_rows(text)
