"""What is secret in a target is explicit, held as `Secret` values, recorded as masks and put back from the store."""

from __future__ import annotations

import base64
import json

import httpx
from jinja2 import Environment

from app.console.target import Target, target_from
from app.mcp.secret import MASK, Secret, header_masks, json_default, reveal
from app.mcp.wire import recorded_headers


def test_a_secret_shows_its_mask_as_text_repr_json_and_html_and_only_reveal_gives_the_value() -> None:
    secret = Secret("Bearer tok-1", "Bearer " + MASK)
    assert str(secret) == f"Bearer {MASK}" and "tok-1" not in repr(secret) and f"{secret}" == f"Bearer {MASK}"
    assert json.dumps({"h": secret}, default=json_default) == json.dumps({"h": f"Bearer {MASK}"})
    assert Environment(autoescape=True).from_string("{{ v }}").render(v=secret) == f"Bearer {MASK}"
    assert reveal(secret) == "Bearer tok-1" and reveal("plain") == "plain"


def test_credential_shaped_values_are_secret_by_default_and_ordinary_ones_are_not() -> None:
    http = Target(kind="http", url="https://u:pw@h.example/mcp?api_key=k1&tenant=json&session=s1",
                  headers={"Authorization": "Bearer t", "Cookie": "c=1", "X-Api-Key": "k", "X-Tenant": "acme"})
    assert http.secret == {"userinfo", "query:api_key", "query:session", "header:Authorization", "header:Cookie",
                           "header:X-Api-Key"}
    assert str(http.url) == f"https://{MASK}@h.example/mcp?api_key={MASK}&tenant=json&session={MASK}"
    stdio = Target(kind="stdio", cwd="/srv/app", argv=["env", "DB_PASSWORD=p", "HOME=/h", "node", "srv.js",
                                                     "--token=t", "--password", "hunter2", "--port", "80", "/data"])
    assert stdio.secret == {"env:DB_PASSWORD", "arg:5", "arg:7"}
    assert stdio.shown() == f"env DB_PASSWORD={MASK} HOME=/h node srv.js --token={MASK} --password {MASK} " \
                            "--port 80 /data (in /srv/app)"


def test_the_owner_marks_a_value_secret_or_a_default_one_not() -> None:
    target = Target(kind="http", url="http://h/mcp?tenant=json", headers={"Authorization": "Bearer t"},
                    secret=frozenset({"query:tenant"}))
    assert target.headers == {"Authorization": "Bearer t"} and str(target.url) == f"http://h/mcp?tenant={MASK}"
    target.seal({"header:Authorization", "no-such-slot"})
    assert target.secret == {"header:Authorization"} and target.url == "http://h/mcp?tenant=json"


def test_the_recorded_target_holds_masks_and_the_store_values_put_it_back() -> None:
    target = Target(kind="http", url="http://u:pw@h/mcp?token=q1", headers={"Authorization": "Bearer t1"},
                    era="legacy")
    recorded, values = target.to_dict(), target.secret_values()
    assert not any(v in json.dumps(recorded) for v in ("pw", "q1", "t1"))
    assert recorded["secret"] == ["header:Authorization", "query:token", "userinfo"]
    again = target_from(recorded, values)
    assert again.revealed() == target.revealed() and again.to_dict() == recorded
    masked_only = target_from(recorded)  # an import of a masked file: no values, the masks stay masks
    assert reveal(masked_only.headers["Authorization"]) == f"Bearer {MASK}"


def test_a_target_recorded_before_secrets_were_explicit_gets_the_default_secrets() -> None:
    old = {"kind": "http", "url": "http://h/mcp", "headers": {"Authorization": "Bearer t1", "X-Team": "blue"}}
    target = target_from(old)
    assert target.secret == {"header:Authorization"} and target.to_dict()["headers"]["Authorization"] == \
        f"Bearer {MASK}"


def test_a_requests_secret_headers_are_recorded_as_masks_and_the_owner_gets_them_back() -> None:
    target = Target(kind="http", url="http://ann:pw@h/mcp", headers={"Authorization": "Bearer t1", "X-A": "b"})
    request = httpx.Request("POST", reveal(target.url), headers={k: reveal(v) for k, v in target.headers.items()})
    recorded = recorded_headers(request.headers, header_masks(target.url, target.headers))
    assert ("Authorization", f"Bearer {MASK}") in recorded and ("X-A", "b") in recorded
    assert ["Authorization", "Bearer t1"] in target.reveal_headers(recorded)
    basic_only = Target(kind="http", url="http://ann:pw@h/mcp")  # httpx makes Basic from the URL's user and password
    assert header_masks(basic_only.url, basic_only.headers) == {"authorization": f"Basic {MASK}"}
    assert basic_only.reveal_headers([["Authorization", f"Basic {MASK}"]]) == [
        ["Authorization", "Basic " + base64.b64encode(b"ann:pw").decode()]]


def test_an_environment_value_holding_a_urls_password_is_secret_by_default_as_an_argument_is() -> None:
    target = Target(kind="stdio", argv=["DATABASE_URL=postgres://app:hunter2pw@db/x", "LOG=debug", "node", "s.js",
                                        "postgres://app:hunter2pw@db/x"])
    assert target.secret == frozenset({"env:DATABASE_URL", "arg:4"})
    assert "hunter2pw" not in target.shown() and "LOG=debug" in target.shown()


def test_a_command_is_shown_as_a_person_writes_it_and_named_by_its_last_path_segments() -> None:
    target = Target(kind="stdio", argv=["/usr/bin/python3", "-c", "print('hi there')",
                                        "/home/ada/projects/notes-server/src/server.py"])
    assert target.shown() == "/usr/bin/python3 -c \"print('hi there')\" /home/ada/projects/notes-server/src/server.py"
    assert target.short() == "python3 -c \"print('hi there')\" …/notes-server/src/server.py"
