"""Credentials are masked wherever a target or a header is shown to someone who may not see them."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.console.secrets import MASK, Redactor, mask_argv, mask_headers, mask_url, mask_wire
from app.console.session import Target


def test_every_command_line_value_is_masked_while_the_program_flags_and_names_stay() -> None:
    shown = mask_argv(["server", "--api-key", "sk-123", "--token=abc", "DB_PASSWORD=hunter2", "--port", "80"])
    assert "sk-123" not in shown and "abc" not in shown and "hunter2" not in shown
    assert shown == f"server --api-key {MASK} --token={MASK} DB_PASSWORD={MASK} --port {MASK}"


def test_an_env_prefix_keeps_its_variable_names_and_the_program_but_masks_their_values() -> None:
    shown = mask_argv(["env", "OPENAI_KEY=sk-live-abc123", "MY_TOKEN=hunter22", "python", "-m", "srv", "--stdio"])
    assert shown == f"env OPENAI_KEY={MASK} MY_TOKEN={MASK} python -m {MASK} --stdio"


def test_userinfo_and_every_query_value_are_masked_in_a_url() -> None:
    shown = mask_url("https://user:pw@example.com/mcp?api_key=k1&region=eu&auth=t2")
    assert "pw" not in shown and "k1" not in shown and "t2" not in shown and "eu" not in shown
    assert shown == f"https://{MASK}@example.com/mcp?api_key={MASK}&region={MASK}&auth={MASK}"


def test_a_redactor_masks_secret_values_inside_any_string_and_leaves_values_that_are_not_secret() -> None:
    target = Target(kind="http", url="https://h.example/mcp?auth=qv-secret-1&n=json",
                    headers={"X-Custom-Auth": "s3cr3t-value", "X-Short": "abc"})
    redact = Redactor(target)
    assert redact({"notes": ["sent s3cr3t-value", {"qv-secret-1": "x"}], "n": 1, "id": "call 1 of abc json"}) == {
        "notes": [f"sent {MASK}", {MASK: "x"}], "n": 1, "id": "call 1 of abc json"}
    raw = r'{"raw": "say \"qv-secret-1\"", "q": "a%20b"}'
    assert redact.text(raw) == f'{{"raw": "say \\"{MASK}\\"", "q": "a%20b"}}'
    assert redact.text("&lt;s3cr3t-value&gt; qv-secret-1") == f"&lt;{MASK}&gt; {MASK}"
    shown = target.shown()
    assert "s3cr3t" not in shown and "qv-secret" not in shown
    assert f"h.example/mcp?auth={MASK}&n=json" in shown and "X-Short: abc" in shown


def test_a_redactor_masks_the_secret_environment_values_and_a_working_directory_marked_secret() -> None:
    target = Target(kind="stdio", argv=["env", "API_KEY=sk-live-abc123", "python", "srv.py"], cwd="/home/ann",
                    secret=frozenset({"env:API_KEY", "cwd"}))
    redact = Redactor(target)
    assert redact.text("started pid 7: env API_KEY=sk-live-abc123 python srv.py in /home/ann/x") == \
        f"started pid 7: env API_KEY={MASK} python srv.py in {MASK}/x"
    assert redact.target_dict()["argv"] == ["env", f"API_KEY={MASK}", "python", "srv.py"]
    assert redact.target_dict()["cwd"] == MASK


def test_the_authorization_scheme_stays_visible_while_its_credential_is_masked() -> None:
    assert mask_headers([["Authorization", "Bearer s3cret"], ["Accept", "x"]]) == [
        ["Authorization", f"Bearer {MASK}"], ["Accept", "x"]]


@pytest.mark.parametrize("headers", [{"Authorization": "b"}, [[1, 2]], [["a"]], "ab", 5, [["X-A", "b", "c"]], [None],
                                     [["Set-Cookie", 5]], [["set-cookie", ["v"]]]])
def test_a_stored_frame_whose_headers_are_not_name_value_pairs_is_masked_whole_not_raised_on(headers: Any) -> None:
    # An imported file's wire event can say anything there: a masked export or a viewer's entry raised on it
    # (the download cut off half way, a 500), before any secret was looked at.
    masked = mask_wire({"raw": "{}", "headers": headers})
    assert masked["raw"] == "{}"
    assert "b" not in json.dumps(masked["headers"]) and "5" not in json.dumps(masked["headers"]) \
        and '"v"' not in json.dumps(masked["headers"])


def test_well_formed_headers_are_masked_by_name_as_before() -> None:
    headers = [["Content-Type", "application/json"], ["Set-Cookie", "sid=1"], ["Authorization", "Bearer t0k"]]
    assert mask_wire({"headers": headers})["headers"] == [["Content-Type", "application/json"],
                                                          ["Set-Cookie", MASK], ["Authorization", "Bearer " + MASK]]


def test_the_url_a_2024_sse_post_went_to_has_its_session_id_masked_and_its_path_kept() -> None:
    # The endpoint's ?sessionId= binds a POST to the server's stream: whoever holds it can post as the session.
    masked = mask_wire({"raw": "{}", "headers": [], "url": "http://h/messages?sessionId=0123abcd"})
    assert masked["url"] == f"http://h/messages?sessionId={MASK}"
    assert mask_wire({"raw": "{}", "headers": None, "url": 5})["url"] == MASK  # an imported file's, whatever it is


_DEEP_REDACTOR = Redactor(Target(kind="http", url="http://h/mcp?key=secretvalue",
                                 headers={"X-Key": "ab1", "Authorization": "Bearer tok-1234"}))
_LEAVES = st.none() | st.booleans() | st.integers() | st.sampled_from(
    ["ab1", "X-Key", "x-key", "Bearer tok-1234", "a secretvalue b", "plain", "name", "value"])
_VALUES = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["name", "value", "secretvalue", "k"]), inner, max_size=3), max_leaves=15)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_the_walk_for_values_nested_past_the_stack_masks_exactly_as_the_recursive_walk(value: object) -> None:
    assert _DEEP_REDACTOR._walk_deep(value) == _DEEP_REDACTOR._walk(value)


def test_a_value_nested_past_the_stack_is_masked_not_raised() -> None:
    value: object = "a secretvalue b"
    for _ in range(5000):
        value = [{"k": value}]
    masked = _DEEP_REDACTOR(value)
    for _ in range(5000):
        assert isinstance(masked, list)
        masked = masked[0]["k"]
    assert masked == f"a {MASK} b"


# --- a typed value in another JSON writer's spelling ---------------------------------------------------------


def _escape_each(value: str, choices: list[int]) -> str:
    """`value` with each character spelled one of the ways JSON writers spell it (chosen by `choices`)."""
    out = []
    for ch, choice in zip(value, choices, strict=True):
        code = ord(ch)
        if code > 0xFFFF:
            pair = ch.encode("utf-16-be")
            hexes = f"{int.from_bytes(pair[:2], 'big'):04x}", f"{int.from_bytes(pair[2:], 'big'):04x}"
            spellings = [ch, "\\u{}\\u{}".format(*hexes), "\\u{}\\u{}".format(*(h.upper() for h in hexes))]
        else:
            spellings = [ch, f"\\u{code:04x}", f"\\u{code:04X}"]
            spellings += {"/": ["\\/"], '"': ['\\"'], "\\": ["\\\\"], "\n": ["\\n"]}.get(ch, [])
        out.append(spellings[choice % len(spellings)])
    return "".join(out)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=4, max_size=24).flatmap(
    lambda v: st.tuples(st.just(v), st.lists(st.integers(0, 5), min_size=len(v), max_size=len(v)))))
@example(("0000", [1, 0, 0, 0]))  # "\u0030000": masking the plain "0000" in its tail first left "\u003" behind
@example(("000\\", [0, 0, 0, 1]))  # "000\u005c": the typed backslash took the escape's first character
def test_a_typed_value_is_masked_however_a_json_writer_escapes_each_of_its_characters(
        case: tuple[str, list[int]]) -> None:
    value, choices = case
    redact = Redactor(Target(kind="http", url="http://h.example/mcp", headers={"X-Key": value}))
    raw = '{"said": "<' + _escape_each(value, choices) + '>"}'
    assert redact.text(raw) == '{"said": "<' + MASK + '>"}'
    assert redact.might_mask(json.dumps({"raw": raw}))  # the export's quick test does not skip it


def test_php_and_go_spellings_of_a_typed_value_are_masked_in_raw_text_in_a_page_and_in_json_text() -> None:
    redact = Redactor(Target(kind="http", url="http://h.example/mcp",
                             headers={"Authorization": "Bearer sk/live/AAAA", "X-Api-Key": 'to"k&en=ZZZZ'}))
    php, go = r"sk\/live\/AAAA", r"to\"k\u0026en=ZZZZ"
    assert redact.text(f"token {php}; api {go}") == f"token {MASK}; api {MASK}"  # the credential alone, too
    assert redact.text(r"to\&#34;k\u0026en=ZZZZ") == MASK  # the raw text as Jinja shows it in a page
    assert redact({"raw": f'{{"a": "{php}"}}'}) == {"raw": f'{{"a": "{MASK}"}}'}
    assert redact.might_mask(json.dumps({"raw": f'{{"a": "{go}"}}'}))
    assert not redact.might_mask(json.dumps({"raw": r'{"a": "nothing typed \/ here"}'}))
    # JSON inside JSON: a PHP tool's json_encode'd text, written again by the server (or by Python's repr of an
    # HTTP error's body), doubles the escape's backslash once per level.
    assert redact.text(r"sk\\/live\\\/AAAA and to\\\"k\\u0026en=ZZZZ") == f"{MASK} and {MASK}"
    assert redact.text(r"sk\\\\/live\\\\/AAAA") == MASK


def test_the_escaped_spellings_of_a_targets_typed_values_are_spelled_once_however_many_redactors_are_built(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A Redactor is built for each answer a link holder gets and each fragment pushed to their sockets: spelling a
    # 60-character token's every escape took ~2 ms each time.
    from app.console import secrets

    spelled: list[str] = []
    real = secrets._escaped_pattern
    monkeypatch.setattr(secrets, "_escaped_pattern", lambda value: spelled.append(value) or real(value))
    run = uuid.uuid4().hex[:8]  # values no other test has built a Redactor for (the spellings are kept per process)
    target = Target(kind="http", url=f"http://h.example/mcp?key=only-{run}-QQQQ",
                    headers={"Authorization": f"Bearer only/{run}/RRRR"})
    first = Redactor(target)
    once = len(spelled)
    assert once >= 2 and f"only/{run}/RRRR" in spelled
    for _ in range(4):
        Redactor(target)
    assert len(spelled) == once
    assert first.text(f"echo only\\/{run}\\/RRRR") == f"echo {MASK}"


def test_the_basic_credential_the_console_builds_from_a_urls_userinfo_is_masked_where_a_server_echoes_it() -> None:
    # The userinfo was masked in the URL, but a server that shows its request head (httpbin's /headers) echoed the
    # Authorization the console sent for it, base64 of "alice:s3crét", which decodes to the password.
    redact = Redactor(Target(kind="http", url="http://alice:s3cr%C3%A9t@h.example/mcp"))
    echoed = '{"headers": {"Authorization": "Basic YWxpY2U6czNjcsOpdA=="}, "said": "s3crét is wrong"}'
    assert redact.text(echoed) == f'{{"headers": {{"Authorization": "Basic {MASK}"}}, "said": "{MASK} is wrong"}}'
    assert redact.might_mask(json.dumps({"raw": echoed}))


def test_a_cut_for_display_stops_before_a_typed_value_it_would_cut_in_two_in_any_spelling() -> None:
    redact = Redactor(Target(kind="http", url="http://h.example/mcp", headers={"X-Key": "sk/live+abc&def<xyz>99"}))
    for spelled in ("sk/live+abc&def<xyz>99", r"sk\/live+abc\u0026def\u003cxyz\u003e99",
                    "sk%2Flive%2Babc%26def%3Cxyz%3E99"):
        text = "A" * 100 + spelled + " and more"
        assert redact.safe_cut(text, 110) == 100, spelled  # the whole value goes, not its head
        assert redact.safe_cut(text, 100) == 100 and redact.safe_cut(text, 90) == 90  # nothing to step around
    twice = "A" * 10 + "sk/live+abc&def<xyz>99" * 2
    assert redact.safe_cut(twice, 40) == 32  # the second one straddles; the first is kept whole and masked


def test_a_megabyte_of_backslashes_from_a_server_is_searched_once_not_once_per_backslash() -> None:
    # Each backslash could start an escaped spelling, and each try ran to the end of the run: the search took time
    # quadratic in the run's length (8,000 backslashes 67 ms; a megabyte would have held the console for minutes).
    redact = Redactor(Target(kind="http", url="http://h.example/mcp", headers={"X-Key": "sk/live+abc&def"}))
    run = "\\" * 1_000_000
    assert redact.text(run + "x") == run + "x"
    assert redact.text(f"{run} sk\\\\\\/live+abc\\u0026def {run}") == f"{run} {MASK} {run}"
    assert redact.safe_cut(run + "x", 500_000) == 500_000
    pattern = redact.hidden_pattern()
    assert pattern is not None and pattern.search(run) is None


def test_a_typed_values_head_left_before_the_mark_of_a_cut_is_masked_and_other_cut_text_is_not() -> None:
    redact = Redactor(Target(kind="http", url="http://h.example/mcp",
                             headers={"Authorization": "Bearer sk-live-AAAABBBBCCCC"}))
    assert redact.text("from the server: 'token sk-live-AAAAB…'") == f"from the server: 'token {MASK}…'"
    assert redact.text("key=sk-live-AA … [18 more bytes]") == f"key={MASK} … [18 more bytes]"
    assert redact.text(r"said sk\u002Dlive…") == f"said {MASK}…"  # an escaped head too
    assert redact.text("sk-…") == "sk-…"  # shorter than a typed value may be and still be masked
    assert redact.text("sk-live-AAAAB and more") == "sk-live-AAAAB and more"  # no cut: not this value
    assert redact.might_mask(json.dumps({"m": "token sk-live-AAAAB…"}))
    assert not redact.might_mask(json.dumps({"m": "nothing here…"}))
    pattern = redact.hidden_pattern()
    assert pattern is not None and pattern.sub("M", "token sk-live-aaaab… x") == "token M… x"


def test_a_typed_value_percent_encoded_twice_or_in_lower_case_or_as_numeric_character_references_is_masked() -> None:
    from urllib.parse import quote

    token = "sk-live/Ab+Cd~Ef!Gh(Ij)*Kl'Mn=="
    redact = Redactor(Target(kind="http", url="http://h.example/mcp", headers={"X-Key": token}))
    for spelled in (quote(quote(token, safe=""), safe=""),  # a URL inside a URL's query
                    "sk-live%2fAb%2bCd~Ef!Gh(Ij)*Kl'Mn%3d%3d",  # lower-case hex
                    "sk-live%2FAb+Cd~Ef%21Gh%28Ij%29%2AKl%27Mn%3D%3D",  # encodeURIComponent leaves !'()* alone
                    token.replace("+", "&#43;").replace("/", "&#x2F;")):  # Go's html/template
        assert redact.text(f"echo {spelled} done") == f"echo {MASK} done", spelled
        assert redact.might_mask(json.dumps({"said": spelled})), spelled
    assert redact.text("100% of sk-live and &#43; alone") == "100% of sk-live and &#43; alone"


def test_a_link_holders_filter_checks_an_entrys_text_up_to_a_bound_and_finds_no_more_past_it() -> None:
    # A server's 2 MB error message, checked whole with every spelling hidden, held the loop for seconds on each
    # link holder's query; past the bound the link holder's filter counts fewer matches, never more.
    from app.console.entry_index import REFINED_CHARS, EntryQuery, refined

    redact = Redactor(Target(kind="http", url="http://h.example/mcp", headers={"X-Key": "sk-live-AAAABBBB"}))
    query = EntryQuery(text="needle", hidden=redact.hidden_text(), hidden_pattern=redact.hidden_pattern())
    rows = [("x2", 7, "exchange", 0, "a" * REFINED_CHARS + " needle"), ("x1", 4, "exchange", 0, "a needle")]
    found = refined(rows, query, lambda text: text, None, 10)
    assert [h.key for h in found.hits] == ["x1"] and found.total == 1
