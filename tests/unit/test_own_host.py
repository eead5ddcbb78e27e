"""No link a target offers leads to the console's own host name, whatever its port or spelling: browsers send the
owner's cookie to every port of that name (app/console/own_host.py)."""

from __future__ import annotations

import pytest

from app.console.own_host import leads_to_host
from app.web.urls import url_facts

HOST = "mcp-abcdefghijklmnop.localhost"


@pytest.mark.parametrize("url", [
    f"http://{HOST}:9301/report", f"https://{HOST}/", f"http://{HOST.upper()}:1/", f"http://{HOST}.:1/",
    f"http://user:pw@{HOST}:1/", f"http://{HOST}:1\\@example.com/", "http://mcp-abcdefghijklmnop%2elocalhost:2/",
    f"ws://{HOST}:3/", f" http://{HOST}:4/ ",
])
def test_a_url_naming_the_consoles_host_in_any_spelling_leads_to_it(url: str) -> None:
    assert leads_to_host(url, HOST)


@pytest.mark.parametrize("url", [
    "http://example.com/", f"http://{HOST}.example.com/", f"http://x{HOST}/", f"http://{HOST}@example.com/",
    "mailto:a@b", "not a url", f"http://example.com/?next=http://{HOST}:1/",
])
def test_other_hosts_do_not(url: str) -> None:
    assert not leads_to_host(url, HOST)


@pytest.mark.parametrize("url", ["http://2130706433:9301/", "http://0x7f.1:9301/", "http://127.1/",
                                 "http://[::ffff:127.0.0.1]/"])
def test_a_console_on_an_address_is_matched_in_the_addresses_legacy_spellings(url: str) -> None:
    assert leads_to_host(url, "127.0.0.1") or url.startswith("http://[")  # a mapped IPv6 is another host name


def test_a_url_elicitation_to_the_consoles_host_is_not_a_link_and_says_why() -> None:
    facts = url_facts(f"http://{HOST}:9301/login", HOST)
    assert facts["ok_link"] is False and any("owner cookie" in w for w in facts["warnings"])
    assert not any("not http(s)" in w for w in facts["warnings"]), facts  # its scheme is fine: only its host is not
    assert url_facts("https://example.com/login", HOST)["ok_link"] is True


def test_a_resource_link_to_the_consoles_host_is_shown_as_text_with_why_and_another_is_a_link() -> None:
    from app.web.render import make_env
    env = make_env(HOST)
    block = env.from_string('{% from "_content.html" import block %}{{ block(c) }}')
    own = block.render(c={"type": "resource_link", "uri": f"http://{HOST}:9301/steal", "name": "r"})
    assert "<a " not in own and "owner cookie" in own
    other = block.render(c={"type": "resource_link", "uri": "https://example.com/doc", "name": "r"})
    assert '<a href="https://example.com/doc"' in other
