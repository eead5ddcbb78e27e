"""RFC 6570 URI templates (all four levels), for the form a resource template gets.

Values come from a form, so each variable is a string or undefined (a field left empty is undefined, and the
RFC leaves an undefined variable out, separator and all). Percent-encoding is the RFC's: UTF-8 octets, with only
unreserved characters kept as they are, plus reserved ones and existing %XX triplets for `+` and `#`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_VARCHAR = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC = re.compile(rf"^({_VARCHAR}(?:\.?{_VARCHAR})*)(\*|:([1-9]\d{{0,3}}))?$")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED = frozenset(":/?#[]@!$&'()*+,;=")
_TRIPLET = re.compile(r"%[0-9A-Fa-f]{2}")


@dataclass(frozen=True, slots=True)
class _Op:
    first: str  # what starts the expansion
    sep: str  # between variables
    named: bool  # name=value
    if_empty: str  # after the name when the value is empty
    allow_reserved: bool


_OPS = {
    "": _Op("", ",", False, "", False),
    "+": _Op("", ",", False, "", True),
    "#": _Op("#", ",", False, "", True),
    ".": _Op(".", ".", False, "", False),
    "/": _Op("/", "/", False, "", False),
    ";": _Op(";", ";", True, "", False),
    "?": _Op("?", "&", True, "=", False),
    "&": _Op("&", "&", True, "=", False),
}


@dataclass(frozen=True, slots=True)
class Variable:
    name: str
    operator: str  # "", "+", "#", ".", "/", ";", "?", "&"
    prefix: int | None = None
    explode: bool = False


class TemplateError(ValueError):
    """A template this module cannot read; the message says where."""


def _parse(expression: str) -> tuple[_Op, str, list[Variable]]:
    op_char = expression[:1] if expression[:1] in _OPS and expression[:1] != "" else ""
    if expression[:1] in "=,!@|":
        raise TemplateError(f"{{{expression}}} uses an operator RFC 6570 reserves for the future")
    specs = expression[len(op_char):].split(",")
    out = []
    for spec in specs:
        m = _VARSPEC.match(spec)
        if m is None:
            raise TemplateError(f"{{{expression}}}: {spec!r} is not a variable name")
        out.append(Variable(m.group(1), op_char, int(m.group(3)) if m.group(3) else None, m.group(2) == "*"))
    return _OPS[op_char], op_char, out


def variables(template: str) -> list[Variable]:
    """The variables of a template, each once, in order of first use."""
    seen: dict[str, Variable] = {}
    for m in _EXPRESSION.finditer(template):
        for var in _parse(m.group(1))[2]:
            seen.setdefault(var.name, var)
    return list(seen.values())


def encode(text: str, allow_reserved: bool) -> str:
    out = []
    i = 0
    while i < len(text):
        if allow_reserved and _TRIPLET.match(text, i):
            out.append(text[i:i + 3])
            i += 3
            continue
        ch = text[i]
        if ch in _UNRESERVED or (allow_reserved and ch in _RESERVED):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        i += 1
    return "".join(out)


def expand(template: str, values: Mapping[str, str | None]) -> str:
    """The URI for these values (None or missing: undefined). TemplateError for a malformed template."""
    out: list[str] = []
    pos = 0
    for m in _EXPRESSION.finditer(template):
        out.append(_literal(template[pos:m.start()]))
        pos = m.end()
        op, _, specs = _parse(m.group(1))
        parts = []
        for var in specs:
            value = values.get(var.name)
            if value is None:
                continue
            text = value[:var.prefix] if var.prefix is not None else value
            encoded = encode(text, op.allow_reserved)
            if op.named:
                parts.append(var.name + (op.if_empty if text == "" else "=" + encoded))
            else:
                parts.append(encoded)
        if parts:
            out.append(op.first + op.sep.join(parts))
    out.append(_literal(template[pos:]))
    return "".join(out)


def _literal(text: str) -> str:
    if "{" in text or "}" in text:
        raise TemplateError("an unclosed { or a stray } in the template")
    return text


_ROLE = {"": "", "+": "reserved characters kept", "#": "fragment", ".": "label", "/": "path segment",
         ";": "path parameter", "?": "query parameter", "&": "query parameter"}


@dataclass(frozen=True, slots=True)
class TemplateForm:
    variables: list[Variable]
    uri: str  # with every field empty
    problem: str | None

    @staticmethod
    def role(var: Variable) -> str:
        return _ROLE.get(var.operator, "")


MAX_TEMPLATE_CHARS = 2000    # a uriTemplate longer than this gets no form (each page draws every template's)
MAX_TEMPLATE_VARIABLES = 32  # nor one with more variables


def template_form(template: object) -> TemplateForm:
    """What a resource template's form offers: its variables, the URI with none given, or why there is no form."""
    if not isinstance(template, str):
        return TemplateForm([], "", "The server gave no uriTemplate string.")
    if len(template) > MAX_TEMPLATE_CHARS:
        return TemplateForm([], "", f"This uriTemplate is {len(template):,} characters, more than a form is drawn for "
                                    f"({MAX_TEMPLATE_CHARS:,}): type its URI under Read any resource.")
    try:
        found = variables(template)
        if len(found) > MAX_TEMPLATE_VARIABLES:  # every page of the session draws every template's form
            return TemplateForm([], "", f"This template has {len(found):,} variables, more than a form is drawn for "
                                        f"({MAX_TEMPLATE_VARIABLES}): type its URI under Read any resource.")
        return TemplateForm(found, expand(template, {}), None)
    except TemplateError as exc:
        return TemplateForm([], "", f"The URI template cannot be read: {exc}")
