"""RFC 6570 expansion for the resource-template form: the RFC's own examples (section 3.2 and 1.2), percent-encoding
of UTF-8 and reserved characters, and templates the module refuses in words."""

from __future__ import annotations

import pytest

from app.web.uri_template import (
    MAX_TEMPLATE_CHARS,
    MAX_TEMPLATE_VARIABLES,
    TemplateError,
    expand,
    template_form,
    variables,
)

# The RFC's example values (section 3.2), as strings: a form gives strings or nothing.
VALUES = {"var": "value", "hello": "Hello World!", "path": "/foo/bar", "empty": "", "x": "1024", "y": "768",
          "who": "fred", "base": "http://example.com/home/", "half": "50%", "dub": "me/too"}


@pytest.mark.parametrize(("template", "expected"), [
    ("{var}", "value"), ("{hello}", "Hello%20World%21"), ("{half}", "50%25"), ("O{empty}X", "OX"),
    ("O{undef}X", "OX"), ("{x,y}", "1024,768"), ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("?{x,empty}", "?1024,"), ("?{x,undef}", "?1024"), ("{var:3}", "val"), ("{var:30}", "value"),
    ("{+var}", "value"), ("{+hello}", "Hello%20World!"), ("{+half}", "50%25"),
    ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
    ("{+base}index", "http://example.com/home/index"), ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"), ("{+path:6}/here", "/foo/b/here"),
    ("{#var}", "#value"), ("{#hello}", "#Hello%20World!"), ("{#path:6}/here", "#/foo/b/here"),
    ("X{.var}", "X.value"), ("X{.x,y}", "X.1024.768"), ("{/var}", "/value"), ("{/var,x}/here", "/value/1024/here"),
    ("{/var:1,var}", "/v/value"), ("{/who,dub}", "/fred/me%2Ftoo"),
    ("{;x,y}", ";x=1024;y=768"), ("{;x,y,empty}", ";x=1024;y=768;empty"), ("{;hello:5}", ";hello=Hello"),
    ("{?x,y}", "?x=1024&y=768"), ("{?x,y,empty}", "?x=1024&y=768&empty="), ("{?x,undef}", "?x=1024"),
    ("{?var:3}", "?var=val"), ("?fixed=yes{&x}", "?fixed=yes&x=1024"), ("{&x,y,empty}", "&x=1024&y=768&empty="),
    ("{?undef}", ""),
])
def test_expansion_matches_the_rfc_examples(template: str, expected: str) -> None:
    assert expand(template, VALUES) == expected


def test_values_are_utf8_percent_encoded_and_reserved_expansion_keeps_existing_triplets() -> None:
    assert expand("demo://items/{id}", {"id": "é/ü ?"}) == "demo://items/%C3%A9%2F%C3%BC%20%3F"
    assert expand("{+p}", {"p": "a%20b%zz"}) == "a%20b%25zz"  # a triplet stays; a bare % is encoded
    assert expand("{?q}", {"q": "a&b=c"}) == "?q=a%26b%3Dc"


def test_variables_are_listed_once_in_order_of_use_with_their_operator() -> None:
    found = variables("notes://{name}{/path*}{?q,name}{&page:3}")
    assert [(v.name, v.operator, v.explode, v.prefix) for v in found] == [
        ("name", "", False, None), ("path", "/", True, None), ("q", "?", False, None), ("page", "&", False, 3)]


@pytest.mark.parametrize("template", ["a{b", "a}b", "{b c}", "{=x}", "{x:0}", "{}"])
def test_a_malformed_template_is_refused_in_words(template: str) -> None:
    with pytest.raises(TemplateError):
        expand(template, {})
    form = template_form(template)
    assert form.problem and not form.variables


def test_the_form_of_a_template_starts_with_the_uri_of_no_values() -> None:
    form = template_form("demo://items/{item_id}{?v}")
    assert ([v.name for v in form.variables], form.uri, form.problem) == (["item_id", "v"], "demo://items/", None)
    assert template_form(None).problem


def test_a_template_with_more_variables_or_characters_than_a_form_is_drawn_for_gets_none_and_says_why() -> None:
    many = "x://{" + ",".join(f"v{i}" for i in range(MAX_TEMPLATE_VARIABLES + 1)) + "}"
    assert template_form(many).variables == [] and "variables" in str(template_form(many).problem)
    long = "x://{a}/" + "p" * MAX_TEMPLATE_CHARS
    assert template_form(long).variables == [] and "characters" in str(template_form(long).problem)
    assert len(template_form("x://{" + ",".join(f"v{i}" for i in range(MAX_TEMPLATE_VARIABLES)) + "}").variables) \
        == MAX_TEMPLATE_VARIABLES
