"""A run of events read in one pass (`session_stream._region`) gives exactly what the loop that reads one event at
a time gives: the same rows in the same chunks, or the same refusal, for the console's own files and for odd ones.

The reference is the same reader with `_region` turned off. Each file is read in pieces of several sizes too, so
runs end at a buffer's end and events are cut there, and in small chunks, so runs cross chunk boundaries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.console import session_stream
from app.console.event_types import check_types, types_fit
from app.console.events import EVENT_VERSION, RECORDS, check, keys_fit

HEAD = ('{"format": "mcp-console-session", "version": 2, "session": {"id": "s1", "created": 1.0, "meta": {}}, '
        '"events": [')
WIRE = '{"direction":"in","raw":"{\\"jsonrpc\\": \\"2.0\\", \\"id\\": 1}","frame_kind":"response","problem":null,' \
       '"exchange":"b1","http_status":200,"headers":null,"note":null,"wall":1796289887.1453192}'
STARTED = '{"key":"b1","method":"tools/call","name":"echo","id":1,"status":"pending","op":null,"round":null}'
FINISHED = '{"key":"b1","status":"ok","duration_ms":1.5,"bytes_in":89,"http_status":200,"warnings":[],"op":null}'


def event(seq: Any, data: str, kind: str = "wire", at: str | None = None, sid: str = '"s1"') -> str:
    """An event as `session_file` writes it (unless told otherwise)."""
    return (f'{{"v": {EVENT_VERSION}, "session_id": {sid}, "seq": {seq}, "kind": "{kind}", '
            f'"at": {at or f"{seq}.5"}, "data": {data}}}')


def console_events(n: int, first: int = 1) -> list[str]:
    kinds = [("exchange_started", STARTED), ("wire", WIRE), ("wire", WIRE), ("exchange_finished", FINISHED)]
    return [event(seq, kinds[seq % 4][1], kinds[seq % 4][0]) for seq in range(first, first + n)]


def file_of(events: list[str]) -> str:
    return HEAD + ", ".join(events) + "]}"


Outcome = tuple[str, Any]


def read(text: str, piece: int | None = None, one_pass: bool = True, chunk: int = 5, tail: bool = True) -> Outcome:
    """The chunks of rows the reader gives (each row as comparable values), or the error it raises."""
    pos = 0

    def source(n: int) -> str:
        nonlocal pos
        out = text[pos:pos + min(n, piece or n)]
        pos += len(out)
        return out
    with pytest.MonkeyPatch.context() as m:
        m.setattr(session_stream, "CHUNK", chunk)
        if not one_pass:
            m.setattr(session_stream, "_region", lambda buf, head: ([], -1, 0))
        if not tail:  # every value parsed in the buffer itself, never in a copy of its rest
            m.setattr(session_stream, "_TAIL", -1)
        reader = session_stream.SessionFileReader(source)
        try:
            reader.open()
            chunks = [[(type(r), r.seq, type(r.seq), r.kind, r.at, type(r.at), repr(r.data), r.text) for r in rows]
                      for rows in reader.chunks()]
        except ValueError as exc:
            return "refused", (type(exc), str(exc))
    return "read", chunks


def counting_region(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many events `_region` read (the rows it gave)."""
    count = [0]
    real: Callable[..., Any] = session_stream._region

    def counted(buf: str, head: Any) -> Any:
        out = real(buf, head)
        count[0] += len(out[0])
        return out
    monkeypatch.setattr(session_stream, "_region", counted)
    return count


PIECES = [None, 7, 97, 1000]


def assert_same(text: str) -> Outcome:
    """The file read both ways in pieces of each size (an event cut at a buffer's end is read by the general path,
    whose row holds its data as written again: the same file in other pieces may give other texts)."""
    for piece in PIECES:
        assert read(text, piece) == read(text, piece, one_pass=False)
    return read(text)


def test_the_console_s_events_are_read_a_run_at_a_time_as_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    text = file_of(console_events(60))
    outcome = assert_same(text)
    assert outcome[0] == "read" and sum(map(len, outcome[1])) == 60
    count = counting_region(monkeypatch)
    read(text)
    assert count[0] == 59  # all but the last, which no next head follows


def test_a_run_of_the_real_chunk_size_gives_the_same_chunks() -> None:
    text = file_of(console_events(5000))
    assert read(text, chunk=session_stream.CHUNK) == read(text, chunk=session_stream.CHUNK, one_pass=False)
    assert read(text, 4096, chunk=session_stream.CHUNK) == read(text, 4096, chunk=session_stream.CHUNK,
                                                                  one_pass=False)


# Events of a run that the per-event loop reads in some other way than by orjson between two heads, or refuses.
ODD = {
    "a 19-digit number": event(7, '{"raw":"x","http_status":1234567890123456789}'),
    "an integer past 64 bits": event(7, '{"raw":"x","note":null,"n":1180591620717411303424}', "exchange_finished"),
    "NaN": event(7, '{"raw":"x","wall":NaN}'),
    "Infinity where any value goes": event(7, '{"key":"b1","error_code":[Infinity,-Infinity]}', "exchange_finished"),
    "a float past the double's range": event(7, '{"key":"b1","error_code":1e400}', "exchange_finished"),
    "a lone surrogate": event(7, '{"raw":"\\ud800"}'),
    "a duplicated key": event(7, '{"raw":"a","raw":"b"}'),
    "nesting the stdlib still reads": event(7, '{"key":"b1","error_code":' + "[" * 600 + "]" * 600 + "}",
                                             "exchange_finished"),
    "nesting orjson reads and the stdlib does not": event(7, '{"key":"b1","error_code":' + "[" * 1010 + "]" * 1010
                                                           + "}", "exchange_finished"),
    "nesting past what the stdlib reads": event(7, '{"key":"b1","error_code":' + "[" * 5000 + "]" * 5000 + "}",
                                                 "exchange_finished"),
    "many brackets in a string": event(7, json.dumps({"raw": "[" * 700})),
    "an unknown kind": event(7, "{}", "no_such_kind"),
    "an unknown key": event(7, '{"raw":"x","colour":"red"}'),
    "a wrong type": event(7, '{"raw":5}'),
    "a wrong type in a list": event(7, '{"key":"b1","warnings":[1]}', "exchange_finished"),
    "headers that are no pairs": event(7, '{"raw":"x","headers":[["a"]]}'),
    "headers that are pairs": event(7, '{"raw":"x","headers":[["a","b"]]}'),
    "data that is a list": event(7, '["raw"]'),
    "data that is null": event(7, "null"),
    "data that is a string": event(7, '"x"'),
    "no data": event(7, ""),
    "data that is cut short": event(7, '{"raw":"x"'),
    "whitespace before the data": event(7, ' {"raw":"x"}'),
    "whitespace after the data": event(7, '{"raw":"x"} '),
    "the next event's head inside the data": event(7, '{"raw":"x","note":null,"x":[{}, ' + event(8, "{}") + "]}"),
    "a head of another spelling inside the data": event(7, '{"raw":"x","y":[{}, {"v": 2, "session_id": 3}]}'),
    "a compact head": '{"v":2,"session_id":"s1","seq":7,"kind":"wire","at":7.5,"data":{"raw":"x"}}',
    "keys in another order": '{"seq": 7, "v": 2, "session_id": "s1", "kind": "wire", "at": 7.5, "data": {}}',
    "an older event version": '{"v": 1, "session_id": "s1", "seq": 7, "kind": "wire", "at": 7.5, "data": {}}',
    "another session id": event(7, WIRE, sid='"other \\" id"'),
    "a kind of capitals": event(7, "{}", "Wire"),
    "a seq out of order": event(3, WIRE),
    "a repeated seq": event(6, WIRE),
    "a seq of other digits": event("\u0667", WIRE),
    "a time of other digits": event(7, WIRE, at="\u0661\u0667\u0669\u0666"),
    "a time past what a clock shows": event(7, WIRE, at="1e20"),
    "an infinite time": event(7, WIRE, at="1e999"),
    "a negative time": event(7, WIRE, at="-1.5"),
    "a time as an integer": event(7, WIRE, at="1796289887"),
    "a time with an exponent": event(7, WIRE, at="1.7e9"),
    "escapes and non-ASCII": event(7, '{"raw":"\\u00e9\\n\\"\\\\ é€😀 \\ud83d\\ude00"}'),
}


@pytest.mark.parametrize("case", sorted(ODD))
def test_an_odd_event_in_a_run_gets_the_per_event_answer(case: str) -> None:
    events = [*console_events(6), ODD[case], *console_events(12, first=8)]
    assert_same(file_of(events))


@pytest.mark.parametrize("case", sorted(ODD))
def test_an_odd_event_that_opens_or_closes_the_list_gets_the_per_event_answer(case: str) -> None:
    odd = ODD[case]
    assert_same(file_of([odd.replace('"seq": 7', '"seq": 1', 1), *console_events(8, first=2)]))
    assert_same(file_of([*console_events(6), odd]))


def test_odd_events_everywhere_get_the_per_event_answers() -> None:
    every = [ODD["NaN"].replace('"seq": 7', f'"seq": {seq}').replace('"at": 7.5', f'"at": {seq}.5')
             for seq in range(1, 40)]
    assert_same(file_of(every))
    mixed = [e if seq % 3 else e.replace("wall", "note").replace("NaN", "null") for seq, e in enumerate(every, 1)]
    assert_same(file_of(mixed))


def test_after_a_run_stops_short_the_loop_reads_the_rest_of_it_before_another_is_tried(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = [0]
    real: Callable[..., Any] = session_stream._region

    def counted(buf: str, head: Any) -> Any:
        calls[0] += 1
        return real(buf, head)
    monkeypatch.setattr(session_stream, "_region", counted)
    read(file_of([*console_events(6), ODD["whitespace before the data"], *console_events(100, first=8)]))
    assert calls[0] <= 3  # not once per event after the odd one
    calls[0] = 0
    odd = ODD["whitespace before the data"]
    read(file_of([odd.replace('"seq": 7,', f'"seq": {seq},') for seq in range(1, 200)]), 4096)
    assert calls[0] <= 12  # some once a buffer, not once an event


def test_an_event_cut_at_the_buffer_s_end_is_read_whole() -> None:
    text = file_of(console_events(40))
    for piece in range(len(HEAD) + 1, len(HEAD) + 600, 37):
        assert read(text, piece) == read(text, piece, one_pass=False)


@pytest.mark.parametrize("piece", [None, 7, 97, 1000, 5000])
def test_a_file_that_breaks_off_or_goes_wrong_is_refused_with_the_words_it_was(piece: int | None) -> None:
    whole = file_of(console_events(40))
    for cut in range(len(HEAD) + 50, len(whole), 397):
        broken = [whole[:cut], whole[:cut] + "x" + whole[cut:], whole[:cut] + "]" + whole[cut:]]
        for text in broken:
            assert read(text, piece) == read(text, piece, tail=False)
            assert read(text, piece) == read(text, piece, one_pass=False, tail=False)


VARIANTS = st.sampled_from(sorted(ODD)) | st.just("") | st.just("") | st.just("")


@settings(max_examples=120, deadline=None)
@given(cases=st.lists(VARIANTS, min_size=1, max_size=25), piece=st.sampled_from(PIECES),
       chunk=st.integers(min_value=1, max_value=9))
def test_any_mix_of_events_reads_as_one_event_at_a_time(cases: list[str], piece: int | None, chunk: int) -> None:
    events = []
    for seq, case in enumerate(cases, 1):
        one = ODD[case] if case else console_events(1, first=seq)[0]
        events.append(one.replace('"seq": 7,', f'"seq": {seq},', 1).replace('"at": 7.5,', f'"at": {seq}.5,', 1))
    text = file_of(events)
    assert read(text, piece, chunk=chunk) == read(text, piece, one_pass=False, chunk=chunk)


def _agrees(kind: str, datas: list[dict[str, Any]]) -> None:
    def passes(one: Callable[[str, dict[str, Any]], None], data: dict[str, Any]) -> bool:
        try:
            one(kind, data)
        except ValueError:
            return False
        return True
    assert keys_fit(kind, datas) == all(passes(check, d) for d in datas)
    if keys_fit(kind, datas):
        assert types_fit(kind, datas) == all(passes(check_types, d) for d in datas)


VALUES = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3) \
    | st.lists(st.text(max_size=2) | st.integers() | st.lists(st.text(max_size=2), max_size=3), max_size=3) \
    | st.dictionaries(st.text(max_size=3), st.none() | st.integers() | st.text(max_size=2), max_size=2)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), kind=st.sampled_from(sorted(RECORDS)))
def test_the_checks_of_many_events_agree_with_the_checks_of_each(data: st.DataObject, kind: str) -> None:
    names = sorted(session_stream.data_keys(kind) or ())
    keys = st.sampled_from(names) if names else st.just("x")
    datas = data.draw(st.lists(st.dictionaries(keys | st.sampled_from(["x", "extra"]), VALUES, max_size=5),
                               max_size=4))
    _agrees(kind, datas)


def test_a_missing_key_is_not_a_value_of_the_wrong_type() -> None:
    assert types_fit("wire", [{"raw": "x"}, {}])  # direction, a str, absent: not checked
    assert not types_fit("wire", [{"raw": "x"}, {"direction": None}])
    assert not keys_fit("no_such_kind", [])


NUMBER_TEXTS = st.from_regex(r"\A-?[0-9]{1,12}(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?\Z") \
    | st.floats(allow_nan=False, allow_infinity=False).map(repr) | st.sampled_from(["007", "0", "-0", "\u0667"])


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(NUMBER_TEXTS, min_size=1, max_size=6))
def test_a_run_s_numbers_read_as_int_and_float_read_them(texts: list[str]) -> None:
    floats = session_stream._numbers(float, texts)
    assert [(type(x), x) for x in floats] == [(float, float(t)) for t in texts]
    digits = [t for t in texts if t.isdigit()]
    if digits:
        assert [(type(x), x) for x in session_stream._numbers(int, digits)] == [(int, int(t)) for t in digits]


def test_texts_orjson_refuses_every_other_one_are_stepped_over_once_not_again_at_every_refusal() -> None:
    # Each restart after a refusal stepped over every text read before: quadratic in such a buffer (46 s for a
    # 36 MB file that the old reader took in 3 s).
    class Counted(list[str]):
        stepped = 0

        def __iter__(self) -> Any:
            for item in super().__iter__():
                Counted.stepped += 1
                yield item
    texts = Counted(['{"wall": NaN}', "{}"] * 500)
    values = session_stream._values(texts, whole=True)
    assert len(values) == len(texts) and values[1] == {}
    assert Counted.stepped <= 5 * len(texts), Counted.stepped  # a few passes, not one per refusal


@pytest.mark.parametrize("piece", [None, 997])
def test_a_run_reads_at_most_region_chars_of_a_grown_buffer_and_the_next_run_goes_on_with_the_same_rows(
        monkeypatch: pytest.MonkeyPatch, piece: int | None) -> None:
    # After a big value the buffer grows to its size, and one run over all of it held every part and row at once.
    big = event(1, '{"direction": "in", "raw": "' + "x" * 50_000 + '", "exchange": "b1"}')
    text = file_of([big, *console_events(400, first=2)])
    expected = read(text, piece, one_pass=False, chunk=64)
    ends: list[int] = []
    real: Callable[..., Any] = session_stream._region

    def measured(buf: str, head: Any) -> Any:
        out = real(buf, head)
        if out[0]:
            ends.append(out[1] - head.end())
        return out
    monkeypatch.setattr(session_stream, "REGION_CHARS", 4_000)
    monkeypatch.setattr(session_stream, "_region", measured)
    assert read(text, piece, chunk=64) == expected
    assert len(ends) > 5 and max(ends) <= 4_000


def test_a_file_of_big_events_is_handed_on_in_chunks_of_bounded_text_not_of_4096_events() -> None:
    big = '{"direction":"in","raw":"' + "x" * 200_000 + '","frame_kind":"response","problem":null,' \
          '"exchange":"b1","http_status":200,"headers":null,"note":null,"wall":1796289887.1453192}'
    text = file_of([event(seq, big) for seq in range(1, 101)])  # 20 MB: one chunk of 4,096 events would hold it all
    outcome = read(text, chunk=session_stream.CHUNK)
    assert outcome[0] == "read"
    chunks = outcome[1]
    assert [row[1] for rows in chunks for row in rows] == list(range(1, 101))
    assert len(chunks) >= 3
    assert max(sum(len(row[-1]) for row in rows) for rows in chunks) <= \
        session_stream.CHUNK_CHARS + session_stream.REGION_CHARS
