"""A target's secret values are masked once, when recorded, on decoded values, whatever spelling a server echoes.

Properties over random secrets and random echoes: a secret said back as it is, percent-encoded (as the console puts
it in a URL), as the Basic credential of a URL's user and password, or inside JSON text escaped by another writer
(PHP's `\\/`, Go's `\\u0026`, any `\\uXXXX`) leaves nothing of itself in what is recorded; text without it is left
exactly as it was; a frame's masked raw text is still the JSON it was.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

from hypothesis import given, settings
from hypothesis import strategies as st

from app.console.events import TimelineEvent, Wire
from app.console.scrub import MIN_SEARCHED, TOO_DEEP, Scrubber, scrubbed_event, scrubber_for
from app.console.target import Target, target_from
from app.mcp.secret import MASK, reveal

_SECRETS = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\u2022"),
                   min_size=6, max_size=24).filter(lambda s: s.strip() == s and len(set(s)) > 2)
_AROUND = st.text(alphabet="abc xyz-_.:/", max_size=12)


def _escaped_every_char(value: str, which: list[bool]) -> str:
    """`value` as JSON text in which each chosen character is written as its \\u escape (any writer may)."""
    out = []
    for i, ch in enumerate(value):
        escape = which[i % len(which)]
        if escape or ch in '"\\' or ord(ch) < 0x20:
            out.append(json.dumps(ch)[1:-1] if not escape else "".join(
                f"\\u{unit:04x}" for unit in _utf16(ch)))
        else:
            out.append(ch)
    return "".join(out)


def _utf16(ch: str) -> list[int]:
    data = ch.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]


@settings(max_examples=300, deadline=None)
@given(_SECRETS, _AROUND, _AROUND, st.lists(st.booleans(), min_size=24, max_size=24),
       st.sampled_from(["plain", "percent", "plus", "escaped", "slash", "nested"]))
def test_a_secret_echoed_in_any_spelling_the_console_decodes_leaves_nothing_in_what_is_recorded(
        secret: str, before: str, after: str, escapes: list[bool], spelling: str) -> None:
    target = Target(kind="http", url="http://h.example/mcp", headers={"X-Api-Key": secret})
    scrubber = scrubber_for(target)
    assert scrubber is not None
    said = {"plain": secret, "percent": quote(secret, safe=""), "plus": quote_plus(secret),
            "escaped": secret, "slash": secret, "nested": secret}[spelling]
    text = f"{before}{said}{after}"
    if spelling in ("escaped", "slash", "nested"):
        inner = _escaped_every_char(text, escapes) if spelling == "escaped" else \
            json.dumps(text)[1:-1].replace("/", "\\/")
        raw = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"' + inner + '"}]}}'
        if spelling == "nested":  # JSON text inside a JSON string: a PHP tool returning json_encode'd data
            raw = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": json.loads(raw)["result"]["content"][0]
                                                                     ["text"]}})
    else:
        raw = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": text}}, ensure_ascii=False)
    event = TimelineEvent("s", 1, Wire(direction="in", raw=raw, exchange="x1", headers=[["X-Echo", text]]))
    recorded = scrubbed_event(scrubber, event)
    decoded = json.loads(recorded.record.raw)
    shown = json.dumps(decoded, ensure_ascii=False) + json.dumps(recorded.record.headers, ensure_ascii=False)
    for form in {secret, quote(secret, safe=""), quote_plus(secret)}:
        assert form not in shown
    assert MASK in recorded.record.raw and json.loads(recorded.record.raw)  # still the JSON it was


@settings(max_examples=200, deadline=None)
@given(_SECRETS, st.text(max_size=200))
def test_text_without_the_secret_is_recorded_exactly_as_it_was(secret: str, text: str) -> None:
    scrubber = Scrubber([secret])
    if secret in text or quote(secret, safe="") in text or quote_plus(secret) in text or "\u2026" in text:
        return
    assert scrubber.text(text) is text
    value = {"a": [text, {"k": text}], text: 1}
    assert scrubber.value(value) is value


def test_the_basic_credential_of_a_urls_user_and_password_is_masked_where_a_server_echoes_it() -> None:
    target = Target(kind="http", url="http://ann:pa55-w0rd@h.example/mcp")
    scrubber = scrubber_for(target)
    assert scrubber is not None
    basic = base64.b64encode(b"ann:pa55-w0rd").decode()
    assert scrubber.text(f"got Authorization: Basic {basic} from ann:pa55-w0rd") == \
        f"got Authorization: Basic {MASK} from {MASK}"


def test_a_secrets_head_left_before_the_consoles_cut_mark_is_masked_and_a_safe_cut_stops_before_it() -> None:
    scrubber = Scrubber(["sk-live-AAAABBBB"])
    assert scrubber.text("refused: sk-live-AAA\u2026") == f"refused: {MASK}\u2026"
    assert scrubber.text("short sk\u2026") == "short sk\u2026"  # shorter than anything searched: left
    text = "x" * 10 + "sk-live-AAAABBBB" + "y" * 10
    assert scrubber.safe_cut(text, 15) == 10 and scrubber.safe_cut(text, 5) == 5


def test_a_secret_shorter_than_what_is_searched_is_left_in_text_and_nothing_is_built_for_a_target_without_one(
        ) -> None:
    assert Scrubber(["ab"]).text("ab cab") == "ab cab" and len("ab") < MIN_SEARCHED
    assert scrubber_for(Target(kind="http", url="http://h/mcp?tenant=json")) is None


def test_a_value_nested_past_the_stack_is_recorded_as_a_note_not_raised_on() -> None:
    value: object = "sk-live-AAAABBBB"
    for _ in range(5000):
        value = [value]
    assert Scrubber(["sk-live-AAAABBBB"]).value(value) == TOO_DEEP


def _recorded(scrubber: Scrubber, raw: str, **fields: object) -> str:
    event = TimelineEvent("s", 1, Wire(direction="in", raw=raw, exchange="x1", **fields))  # type: ignore[arg-type]
    return json.dumps(scrubbed_event(scrubber, event).data, ensure_ascii=False)


def test_a_secret_of_digits_said_back_as_a_json_number_is_masked() -> None:
    target = Target(kind="http", url="http://h/mcp?api_key=98765432")
    scrubber = scrubber_for(target)
    assert scrubber is not None
    assert scrubber.value({"structuredContent": {"n": 98765432, "m": 7}}) == {"structuredContent": {"n": MASK, "m": 7}}
    assert "98765432" not in _recorded(scrubber, '{"jsonrpc":"2.0","id":1,"result":{"n":98765432,"s":"a\\/b"}}')


def test_a_header_value_the_console_shows_decoded_and_a_frames_problem_are_masked() -> None:
    scrubber = Scrubber(["sk-live-ZZTOP1234"])
    sentinel = "=?base64?" + base64.b64encode(b"Bearer sk-live-ZZTOP1234").decode() + "?="
    shown = _recorded(scrubber, "not json", headers=[["X-Echo", sentinel]],
                      problem="stdout line is not JSON-RPC: 'token sk-live-ZZTOP1234'")
    assert "ZZTOP" not in shown and "QmVhcmVy" not in shown and shown.count(MASK) == 2


def test_the_parts_of_a_secret_a_server_says_alone_are_searched_for() -> None:
    basic = base64.b64encode(b"alice:Hunter2Pass").decode()
    target = Target(kind="http", url="http://h/mcp?api_key=%61bcQK%2fz9%7e",
                    headers={"Cookie": "theme=dark; sessid=COOKIEVAL777", "Authorization": f"Basic {basic}"})
    scrubber = scrubber_for(target)
    assert scrubber is not None
    said = "sessid is COOKIEVAL777, password Hunter2Pass, path /mcp?api_key=%61bcQK%2fz9%7e and abcQK/z9~"
    assert scrubber.text(said) == f"sessid is {MASK}, password {MASK}, path /mcp?api_key={MASK} and {MASK}"
    stdio = Target(kind="stdio", argv=["env", "API_AUTH=Bearer stdioTOKEN55", "node", "s.js"])
    assert scrubber_for(stdio).text("got stdioTOKEN55") == f"got {MASK}"  # type: ignore[union-attr]


def test_a_secret_past_the_basic_plane_escaped_as_a_surrogate_pair_is_masked() -> None:
    scrubber = Scrubber(["p\U0001F600ssWORD"])
    inner = json.dumps({"pw": "p\U0001F600ssWORD"})  # ASCII: the emoji as \\ud83d\\ude00
    assert "ssWORD" not in scrubber.text(inner)


def test_a_value_holding_a_secret_is_secret_too_so_the_live_target_is_never_made_from_a_mask() -> None:
    target = Target(kind="http", url="http://h/mcp/DUPVAL1234/sse", headers={"Authorization": "Bearer DUPVAL1234"})
    assert target.secret == {"header:Authorization", "path"}
    assert str(target.url) == f"http://h/{MASK}" and reveal(target.url) == "http://h/mcp/DUPVAL1234/sse"
    again = target_from(target.to_dict(), target.secret_values())
    assert reveal(again.url) == "http://h/mcp/DUPVAL1234/sse"


def test_a_header_line_in_an_argument_or_variable_is_secret_by_default_and_its_parts_are_masked() -> None:
    target = Target(kind="stdio", argv=["env", "MCP_HEADERS=X-Api-Key: sk-xk-XKEY3", "npx", "mcp-remote",
                                        "--header", "Authorization: Bearer sk-argh-ARGHDR55"])
    assert target.secret == {"env:MCP_HEADERS", "arg:5"}
    scrubber = scrubber_for(target)
    assert scrubber is not None
    assert scrubber.text("got sk-xk-XKEY3 and sk-argh-ARGHDR55") == f"got {MASK} and {MASK}"


def test_a_cookie_whose_value_holds_an_equals_sign_and_a_number_in_exponent_form_are_masked() -> None:
    cookie = scrubber_for(Target(kind="http", url="http://h/mcp", headers={"Cookie": "sessid=Q09PS0lFUEFE="}))
    assert cookie is not None and cookie.text("sessid is Q09PS0lFUEFE=") == f"sessid is {MASK}"
    digits = scrubber_for(Target(kind="http", url="http://h/mcp?api_key=55554444"))
    assert digits is not None
    assert "5555.4444e4" not in digits.raw_frame('{"jsonrpc":"2.0","id":1,"result":{"n":5555.4444e4}}')


def test_a_path_holding_a_percent_encoded_copy_of_a_secret_is_secret_too() -> None:
    target = Target(kind="http", url="http://h/mcp/tok%2BPLUS%2FSLASH%3D/x", headers={"X-Api-Key": "tok+PLUS/SLASH="})
    assert "path" in (target.secret or ()) and "PLUS" not in str(target.url)


def test_a_live_reply_a_route_answers_with_is_masked_as_the_log_has_it() -> None:
    from app.console.scrub import shown_reply
    from app.mcp.client import Reply
    from app.mcp.errors import RpcError

    scrubber = Scrubber(["sk-live-REPLAY777"])
    reply = Reply(key="c1", id=1, method="server/discover", params={"v": "sk-live-REPLAY777"}, sent=0.0,
                  result={"instructions": "use sk-live-REPLAY777"}, error=RpcError(-1, "bad sk-live-REPLAY777"))
    shown = shown_reply(scrubber, reply)
    assert "REPLAY777" not in repr((shown.params, shown.result, shown.error and shown.error.message))
    assert shown_reply(None, reply) is reply
