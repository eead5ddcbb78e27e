"""A tool's form fields are read once per schema object, and a re-listed tool's new schema is read anew."""

from __future__ import annotations

from app.web import forms
from app.web.forms import fields_for, fields_for_kept


def test_the_same_schema_object_gives_the_fields_read_the_first_time() -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    first = fields_for_kept(schema)
    assert fields_for_kept(schema) is first
    assert [(f.name, f.kind, f.required) for f in first] == [(f.name, f.kind, f.required) for f in fields_for(schema)]


def test_a_re_listed_schema_with_other_fields_is_read_anew_even_where_the_old_one_stood() -> None:
    old = {"type": "object", "properties": {"text": {"type": "string"}}}
    assert [f.name for f in fields_for_kept(old)] == ["text"]
    new = {"type": "object", "properties": {"count": {"type": "integer"}}}
    assert [(f.name, f.kind) for f in fields_for_kept(new)] == [("count", "integer")]
    # An id the old object's memory could pass on is never taken for it: the kept entry holds the schema itself.
    kept = forms._fields_of[id(old)]
    assert kept[0] is old


def test_the_kept_fields_stay_bounded() -> None:
    schemas = [{"type": "object", "properties": {f"p{i}": {"type": "string"}}} for i in range(forms._FIELDS_KEPT * 2)]
    for schema in schemas:
        fields_for_kept(schema)
    assert len(forms._fields_of) <= forms._FIELDS_KEPT
