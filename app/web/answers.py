"""Turning what a person did in a dialog into the exact value sent back in inputResponses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.mcp import mrtr
from app.web.form_view import SchemaFields
from app.web.forms import FormField, FormInput, check_value, parse_form, strict_json

ACTIONS = ("accept", "decline", "cancel")


class NotAnswered(Exception):
    """The answer cannot be sent as it is; `errors` maps field names to messages shown beside them."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def form_fields(request: dict[str, Any]) -> tuple[Sequence[FormField], str | None]:
    """Fields for a form-mode elicitation, or the reason the schema needs the JSON editor instead."""
    schema = (request.get("params") or {}).get("requestedSchema")
    problem = mrtr.form_schema_problem(schema)
    return ([] if problem else SchemaFields(schema)), problem


def defaults_of(fields: Sequence[FormField]) -> dict[str, Any]:
    return {f.name: f.default for f in fields if f.default is not None}


def elicitation_answer(request: dict[str, Any], form: FormInput) -> dict[str, Any]:
    action = form.first("action") or "accept"
    if action == "defaults":
        fields, problem = form_fields(request)
        content = defaults_of(fields)
        errors = {f.name: "This field is required and has no default." for f in fields
                  if f.required and f.name not in content}
        errors.update({f.name: msg for f in fields if f.name in content
                       for msg in [check_value(f, content[f.name])] if msg})
        if problem or errors:
            raise NotAnswered(errors or {"json": f"No form: {problem}"})
        return {"action": "accept", "content": content}
    if action not in ACTIONS:
        raise NotAnswered({"action": f"Unknown action {action!r}"})
    if action != "accept" or mrtr.kind_of(request) == "url":
        return {"action": action}  # URL mode: accept means only that the person consented to open it
    fields, problem = form_fields(request)
    if problem:
        return {"action": "accept", "content": _json_object(form.first("content_json") or "{}")}
    content, errors = parse_form(fields, form)
    if errors:
        raise NotAnswered(errors)
    return {"action": "accept", "content": content}


def sampling_answer(form: FormInput) -> dict[str, Any]:
    text = form.first("reply") or ""
    model = (form.first("model") or "").strip()
    errors = {}
    if not text.strip():
        errors["reply"] = "Write the assistant's reply (or decline)."
    if not model:
        errors["model"] = "Name the model that answered (any name; the server only records it)."
    if errors:
        raise NotAnswered(errors)
    answer: dict[str, Any] = {"role": "assistant", "content": {"type": "text", "text": text}, "model": model}
    stop = form.first("stopReason") or "endTurn"
    if stop:
        answer["stopReason"] = stop
    return answer


def raw_answer(form: FormInput) -> Any:
    """For an input request kind the console does not know: the person writes the JSON value."""
    return _json_object(form.first("content_json") or "{}")


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = strict_json(text)
    except ValueError as exc:
        raise NotAnswered({"json": f"Not valid JSON: {exc}"}) from exc
    if not isinstance(value, dict):
        raise NotAnswered({"json": "Must be a JSON object."})
    return value
