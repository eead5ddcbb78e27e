"""`index_item_of` with the exchange kinds' case written out gives what `entry_key` and the facts gave before."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.console import entry_index
from app.console.entry_index_writer import index_item_of


def reference(kind: str, seq: int, data: dict[str, Any]) -> Any:
    found = entry_index.entry_key(kind, seq, data)
    if found is None:
        return None
    facts = {f: data[f] for f in entry_index.FACT_FIELDS if f in data}
    if kind == "op_started":
        facts["status"] = "running"
    return found[0], found[1], facts, data.get("op")


VALUES = st.none() | st.booleans() | st.integers(-2, 2) | st.text(max_size=2) | st.lists(st.integers(), max_size=1)
FIELDS = st.sampled_from([*entry_index.FACT_FIELDS, "exchange", "op", "key", "other"])


@settings(max_examples=400, deadline=None)
@given(kind=st.sampled_from(["exchange_started", "exchange_finished", "op_started", "op_ended", "notice", "finding",
                             "wire"]),
       seq=st.integers(1, 99), data=st.dictionaries(FIELDS, VALUES, max_size=6))
def test_an_event_s_index_item_is_what_its_entry_key_and_facts_make(kind: str, seq: int,
                                                                      data: dict[str, Any]) -> None:
    item = index_item_of(kind, seq, data)
    assert repr(item) == repr(reference(kind, seq, data))
    if item is not None:
        assert list(item[2]) == list(reference(kind, seq, data)[2])  # the facts in the same order (stored as JSON)
