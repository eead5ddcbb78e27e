"""Schema-generated forms: what is submitted comes back typed exactly as the person meant it."""

from __future__ import annotations

from typing import Any

import pytest

from app.web.forms import FormField, FormInput, fields_for, parse_form


def form_for(props: dict[str, Any], required: list[str] | None = None) -> list[FormField]:
    return fields_for({"type": "object", "properties": props, "required": required or []})


def submit(props: dict[str, Any], pairs: list[tuple[str, str]],
           required: list[str] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    return parse_form(form_for(props, required), FormInput(pairs))


def only(props: dict[str, Any]) -> FormField:
    (f,) = form_for(props)
    return f


def test_fields_for_returns_nothing_for_a_schema_without_properties() -> None:
    assert fields_for(None) == []
    assert fields_for({"type": "object"}) == []
    assert fields_for({"type": "object", "properties": []}) == []


def test_fields_for_uses_title_as_label_and_marks_required_fields() -> None:
    a, b = form_for({"a": {"type": "string", "title": "Your name", "description": "who"}, "b": {"type": "string"}},
                    required=["a"])
    assert (a.label, a.required, a.description, a.input_name) == ("Your name", True, "who", "arg.a")
    assert (b.label, b.required) == ("b", False)


def test_form_input_keeps_every_value_of_a_repeated_name() -> None:
    form = FormInput([("a", "1"), ("b", "x"), ("a", "2")])
    assert list(form["a"]) == ["1", "2"]
    assert form.first("a") == "1"
    assert form.first("missing") is None
    assert len(form) == 2


def test_an_integer_field_parses_text_into_an_int() -> None:
    values, errors = submit({"n": {"type": "integer"}}, [("arg.n", "7")])
    assert errors == {}
    assert values == {"n": 7}
    assert type(values["n"]) is int


@pytest.mark.parametrize("text", ["7.5", "seven", "1e3", "0x10", "\uff11\uff12", "\u0661"])
def test_an_integer_field_refuses_text_that_is_not_a_whole_number(text: str) -> None:
    values, errors = submit({"n": {"type": "integer"}}, [("arg.n", text)])
    assert values == {}
    assert errors == {"n": "Enter a whole number."}


@pytest.mark.parametrize("kind", ["integer", "number"])
def test_a_whole_number_past_pythons_digit_limit_is_refused_in_words(kind: str) -> None:
    values, errors = submit({"n": {"type": kind}}, [("arg.n", "9" * 5000)])
    assert values == {}
    assert errors == {"n": "This number has too many digits to send."}


def test_a_number_field_refuses_digits_that_are_not_ascii() -> None:
    assert submit({"x": {"type": "number"}}, [("arg.x", "\uff15")]) == ({}, {"x": "Enter a number."})


def test_a_number_field_keeps_decimals_as_floats_and_whole_numbers_as_ints() -> None:
    values, errors = submit({"x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"}},
                            [("arg.x", "2.5"), ("arg.y", "3"), ("arg.z", "-1e2")])
    assert errors == {}
    assert values == {"x": 2.5, "y": 3, "z": -100.0}
    assert type(values["x"]) is float
    assert type(values["y"]) is int


def test_a_number_field_refuses_text_that_is_not_a_number() -> None:
    _, errors = submit({"x": {"type": "number"}}, [("arg.x", "two")])
    assert errors == {"x": "Enter a number."}


def test_a_checkbox_boolean_is_true_when_ticked_and_false_when_absent() -> None:
    props = {"flag": {"type": "boolean"}}
    ticked, _ = submit(props, [("present.flag", "checkbox"), ("arg.flag", "on")])
    unticked, errors = submit(props, [("present.flag", "checkbox")])
    assert ticked == {"flag": True}
    assert unticked == {"flag": False}
    assert type(unticked["flag"]) is bool
    assert errors == {}


def test_an_optional_boolean_select_left_empty_is_omitted() -> None:
    values, errors = submit({"flag": {"type": "boolean"}}, [("arg.flag", "")])
    assert values == {}
    assert errors == {}


def test_a_boolean_select_sends_true_or_false() -> None:
    props = {"flag": {"type": "boolean"}}
    assert submit(props, [("arg.flag", "true")])[0] == {"flag": True}
    assert submit(props, [("arg.flag", "false")])[0] == {"flag": False}


def test_a_required_boolean_select_left_empty_is_an_error() -> None:
    _, errors = submit({"flag": {"type": "boolean"}}, [("arg.flag", "")], required=["flag"])
    assert errors == {"flag": "This field is required."}


def test_an_optional_empty_string_is_omitted() -> None:
    values, errors = submit({"s": {"type": "string"}}, [("arg.s", "")])
    assert values == {}
    assert errors == {}


def test_a_required_empty_string_is_an_error() -> None:
    values, errors = submit({"s": {"type": "string"}}, [("arg.s", "")], required=["s"])
    assert values == {}
    assert errors == {"s": "This field is required."}


def test_a_required_field_missing_from_the_form_is_an_error() -> None:
    _, errors = submit({"n": {"type": "integer"}}, [], required=["n"])
    assert errors == {"n": "This field is required."}


def test_an_empty_optional_integer_is_omitted_rather_than_sent_as_text() -> None:
    values, errors = submit({"n": {"type": "integer"}}, [("arg.n", "  ")])
    assert values == {}
    assert errors == {}


def test_a_plain_enum_offers_its_values_and_accepts_only_them() -> None:
    props = {"color": {"type": "string", "enum": ["red", "green"]}}
    f = only(props)
    assert (f.kind, f.options) == ("enum", [("red", "red"), ("green", "green")])
    assert submit(props, [("arg.color", "green")]) == ({"color": "green"}, {})
    assert submit(props, [("arg.color", "blue")]) == ({}, {"color": "Choose one of the offered values."})


def test_a_one_of_const_enum_uses_titles_as_labels() -> None:
    props = {"size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"},
                                                  {"const": "xl"}]}}
    f = only(props)
    assert f.kind == "enum"
    assert f.options == [("s", "Small"), ("l", "Large"), ("xl", "xl")]
    assert submit(props, [("arg.size", "l")]) == ({"size": "l"}, {})


def test_a_legacy_enum_names_list_gives_the_labels() -> None:
    f = only({"c": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]}})
    assert f.options == [("r", "Red"), ("g", "Green")]


def test_an_optional_enum_left_on_the_empty_choice_is_omitted() -> None:
    props = {"color": {"type": "string", "enum": ["red", "green"]}}
    assert submit(props, [("arg.color", "")]) == ({}, {})


MULTI = {"tags": {"type": "array", "minItems": 1, "maxItems": 2,
                  "items": {"type": "string", "enum": ["a", "b", "c"]}}}


def test_a_multi_select_returns_every_chosen_value_in_order() -> None:
    f = only(MULTI)
    assert f.kind == "multi"
    assert (f.min_items, f.max_items) == (1, 2)
    assert submit(MULTI, [("present.tags", "1"), ("arg.tags", "c"), ("arg.tags", "a")]) == ({"tags": ["c", "a"]}, {})


def test_a_multi_select_refuses_too_many_choices() -> None:
    pairs = [("present.tags", "1"), ("arg.tags", "a"), ("arg.tags", "b"), ("arg.tags", "c")]
    assert submit(MULTI, pairs) == ({}, {"tags": "Choose at most 2."})


def test_a_required_multi_select_with_nothing_chosen_reports_the_minimum() -> None:
    assert submit(MULTI, [("present.tags", "1")], required=["tags"]) == ({}, {"tags": "Choose at least 1."})


def test_an_optional_multi_select_with_nothing_chosen_is_omitted() -> None:
    assert submit(MULTI, [("present.tags", "1")]) == ({}, {})


def test_a_multi_select_refuses_a_value_that_was_not_offered() -> None:
    assert submit(MULTI, [("arg.tags", "zzz")]) == ({}, {"tags": "Choose only offered values."})


def test_a_multi_select_of_one_of_consts_uses_their_titles() -> None:
    f = only({"t": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "Ex"}, {"const": "y"}]}}})
    assert (f.kind, f.options) == ("multi", [("x", "Ex"), ("y", "y")])


@pytest.mark.parametrize("text, error", [("ab", "Must be at least 3 characters."), ("abc", None),
                                         ("abcde", None), ("abcdef", "Must be at most 5 characters.")])
def test_string_length_limits_are_checked(text: str, error: str | None) -> None:
    values, errors = submit({"s": {"type": "string", "minLength": 3, "maxLength": 5}}, [("arg.s", text)])
    assert errors == ({"s": error} if error else {})
    assert values == ({} if error else {"s": text})


@pytest.mark.parametrize("fmt, good, bad", [
    ("email", "ada@example.com", "ada.example.com"),
    ("email", "ada@example.com", "ada@example.com\n"),  # `$` alone lets a final newline by
    ("uri", "https://example.com/x", "example.com/x"),
    ("uri", "https://example.com/x", "https://example.com/x\n"),
    ("date", "2026-07-28", "28/07/2026"),
    ("date-time", "2026-07-28T10:00:00Z", "tomorrow"),
])
def test_string_formats_accept_good_values_and_refuse_bad_ones(fmt: str, good: str, bad: str) -> None:
    props = {"v": {"type": "string", "format": fmt}}
    assert submit(props, [("arg.v", good)]) == ({"v": good}, {})
    values, errors = submit(props, [("arg.v", bad)])
    assert values == {}
    assert "v" in errors


@pytest.mark.parametrize("text", ["2026-01-02T03:04:05Z", "2026-01-02T03:04:05.123+02:00", "2026-01-02 03:04:05z"])
def test_a_date_time_field_sends_an_rfc3339_value_exactly_as_typed(text: str) -> None:
    assert submit({"when": {"type": "string", "format": "date-time"}}, [("arg.when", text)]) == ({"when": text}, {})


@pytest.mark.parametrize("text", ["2026-01-02T03:04", "2026-01-02T03:04:05", "2026-01-02"])
def test_a_date_time_without_seconds_or_zone_is_refused_rather_than_guessed(text: str) -> None:
    values, errors = submit({"when": {"type": "string", "format": "date-time"}}, [("arg.when", text)])
    assert values == {}
    assert "RFC 3339" in errors["when"]


def test_format_fields_get_matching_html_input_types() -> None:
    types = [f.html_type for f in form_for({"a": {"type": "string", "format": "email"},
                                            "b": {"type": "string", "format": "uri"},
                                            "c": {"type": "string", "format": "date"},
                                            "d": {"type": "string", "format": "hostname"},
                                            "e": {"type": "string", "format": "date-time"}})]
    # date-time stays text: datetime-local would drop the seconds and the zone.
    assert types == ["email", "url", "date", "text", "text"]


@pytest.mark.parametrize("text, error", [("-1", "Must be at least 0."), ("0", None), ("10", None),
                                         ("11", "Must be at most 10.")])
def test_minimum_and_maximum_are_checked(text: str, error: str | None) -> None:
    _, errors = submit({"n": {"type": "integer", "minimum": 0, "maximum": 10}}, [("arg.n", text)])
    assert errors == ({"n": error} if error else {})


def test_a_fractional_maximum_is_shown_as_given() -> None:
    _, errors = submit({"x": {"type": "number", "maximum": 2.5}}, [("arg.x", "3")])
    assert errors == {"x": "Must be at most 2.5."}


@pytest.mark.parametrize("schema", [
    {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
    {"oneOf": [{"type": "null"}, {"type": "integer", "minimum": 1}]},
    {"type": ["integer", "null"], "minimum": 1},
])
def test_a_nullable_schema_is_treated_as_its_non_null_type(schema: dict[str, Any]) -> None:
    props = {"n": {**schema, "title": "Count"}}
    f = only(props)
    assert (f.kind, f.label, f.minimum) == ("integer", "Count", 1)
    assert submit(props, [("arg.n", "4")]) == ({"n": 4}, {})
    assert submit(props, [("arg.n", "")]) == ({}, {})


def test_an_object_property_becomes_a_fieldset_and_a_script_may_still_post_it_as_json_text() -> None:
    props = {"filter": {"type": "object", "properties": {"a": {"type": "integer"}}}}
    f = only(props)
    assert f.kind == "object"
    assert [(c.name, c.kind) for c in f.children] == [("a", "integer")]
    assert submit(props, [("arg.filter", '{"a": 1, "b": [true, null]}')]) == ({"filter": {"a": 1, "b": [True, None]}},
                                                                              {})


def test_a_json_field_with_invalid_json_reports_an_error() -> None:
    _, errors = submit({"filter": {"type": "object"}}, [("arg.filter", "{oops")])
    assert errors["filter"].startswith("Not valid JSON")


def test_a_list_of_integers_is_read_one_per_line_skipping_blank_lines() -> None:
    props = {"ids": {"type": "array", "items": {"type": "integer"}}}
    f = only(props)
    assert (f.kind, f.item_kind) == ("list", "integer")
    values, errors = submit(props, [("arg.ids", "1\r\n 22 \n\n-3\n")])
    assert errors == {}
    assert values == {"ids": [1, 22, -3]}
    assert all(type(v) is int for v in values["ids"])


def test_a_list_of_integers_with_a_bad_line_reports_an_error() -> None:
    _, errors = submit({"ids": {"type": "array", "items": {"type": "integer"}}}, [("arg.ids", "1\ntwo")])
    assert errors == {"ids": "Enter a whole number."}


def test_a_list_of_booleans_reads_true_and_false_words() -> None:
    values, _ = submit({"b": {"type": "array", "items": {"type": "boolean"}}}, [("arg.b", "true\nno\n1")])
    assert values == {"b": [True, False, True]}


def test_a_list_field_checks_min_and_max_items() -> None:
    props = {"ids": {"type": "array", "minItems": 2, "maxItems": 3, "items": {"type": "integer"}}}
    assert submit(props, [("arg.ids", "1")])[1] == {"ids": "Choose at least 2."}
    assert "ids" in submit(props, [("arg.ids", "1\n2\n3\n4")])[1]


def test_an_array_of_free_form_objects_is_a_list_of_json_editors() -> None:
    f = only({"rows": {"type": "array", "items": {"type": "object"}}})
    assert f.kind == "array"
    assert f.item is not None and f.item.kind == "json" and f.item.note


def test_default_text_formats_defaults_for_their_inputs() -> None:
    fields = form_for({"b": {"type": "boolean", "default": True},
                       "l": {"type": "array", "items": {"type": "integer"}, "default": [1, 2]},
                       "o": {"type": "object", "default": {"a": 1}},
                       "t": {"type": "string", "format": "date-time", "default": "2026-01-02T03:04:05Z"},
                       "n": {"type": "integer"}})
    assert [f.default_text() for f in fields] == ["true", "1\n2", '{\n  "a": 1\n}', "2026-01-02T03:04:05Z", ""]


def test_strict_json_refuses_nan_infinity_and_numbers_that_overflow() -> None:
    from app.web.forms import strict_json

    for text in ('{"x": NaN}', '{"x": Infinity}', '{"x": -Infinity}', '{"x": 1e400}', '[1, [2e999]]'):
        with pytest.raises(ValueError):
            strict_json(text)
    assert strict_json('{"x": 1.5, "y": [7]}') == {"x": 1.5, "y": [7]}
