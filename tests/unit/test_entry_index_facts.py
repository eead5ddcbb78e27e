"""The entry index spells an entry's facts exactly as json.dumps does, whatever a target put in them."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.console.entry_index_writer import facts_json

_SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63, max_value=2**80)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text())
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner,
                                                                                             max_size=4), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), _VALUES, max_size=8))
def test_any_facts_are_spelled_as_json_dumps_spells_them(facts: dict[str, Any]) -> None:
    assert facts_json(facts) == json.dumps(facts)


def test_facts_with_lone_surrogates_huge_ints_and_odd_floats_are_spelled_as_json_dumps_spells_them() -> None:
    facts = {"method": "\ud800x", "name": "é\u2028\x00", "key": 2**100, "status": float("nan"),
             "error": [float("inf"), -0.0, 1e-320, {"\udfff": None}], "op": True}
    assert facts_json(facts) == json.dumps(facts)
