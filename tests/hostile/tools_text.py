"""Hostile text: strings that try to break the page's layout, spoof what a name says, or run script.

- `long_title`: a 3,000-character unbroken title and description (would widen the page).
- `invoice\u202eexe.pdf`: a right-to-left override in a tool name (would read as `invoicefdp.exe`).
- `lone_surrogate`: a result text holding an unpaired surrogate (the JSON escape \\ud800).
- `not_a_number`: a result holding the bare words NaN and Infinity (not JSON; Python's decoder takes them).
- `half\ud800pair`: a tool name holding an unpaired surrogate (listed as the escape \\ud800).
- `echo_escaped`: says back its `text` as other JSON writers spell it: "/" as PHP's \\/, "&<>" as Go's \\u0026,
  and every other non-alphanumeric character as an upper-case \\u escape (json.dumps writes none of these).
- `echo_nested`: says back its `text` inside JSON text inside its result text, both written as PHP writes ("/" as
  \\/), so the raw frame holds "/" as \\\\\\/ (a tool returning json_encode'd data as its text).
- `refuse_escaped`: answers HTTP 401 with a PHP-written JSON body that repeats its `text`.
- `say_at_the_cut`: logs its `text` and sends it as a progress message, each behind a run of filler that puts the
  console's display cut (8,192 characters of log data, 2,000 of a progress message) ten characters into it.
- `say_on_stderr`: writes its `text` on stderr behind 1,980 bytes of filler, where the transport's bound on a
  line (2,000 bytes) cuts it.
- `markup`: HTML and a script break-out in its title and description, and in its result, with a
  resource link whose URI carries a bidi override and a zero-width space.

Start the target with `--name '<b>x</b>\u202eevil'` to put the same in serverInfo.
"""

from __future__ import annotations

import json

from tests.hostile.target import Ctx, Tool, complete

LONG = "W" * 3000
RLO = "\u202e"
BIDI_NAME = f"invoice{RLO}exe.pdf"
IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "</script><script>alert(1)</script>"
BIDI_URI = f"file:///tmp/report{RLO}fdp.exe\u200b"


async def long_title(ctx: Ctx) -> None:
    await ctx.reply(complete([{"type": "text", "text": "L" * 3000}]))


async def bidi_name(ctx: Ctx) -> None:
    await ctx.reply(complete([{"type": "text", "text": f"you called {BIDI_NAME}"}]))


async def markup(ctx: Ctx) -> None:
    await ctx.reply(complete([
        {"type": "text", "text": f"{IMG} {SCRIPT}"},
        {"type": "resource_link", "uri": BIDI_URI, "name": f"{IMG}{RLO}gpj.exe", "mimeType": "text/plain"},
    ]))


async def lone_surrogate(ctx: Ctx) -> None:
    # Sent as the escape \ud800 (valid JSON text; no UTF-8 form once decoded).
    await ctx.reply(complete([{"type": "text", "text": "half a pair: \ud800 end"}]))


async def not_a_number(ctx: Ctx) -> None:
    # json.dumps writes NaN and Infinity as bare words: not JSON, but Python's own decoder takes them.
    await ctx.reply({**complete([{"type": "text", "text": "scores"}]),
                     "structuredContent": {"nan": float("nan"), "inf": float("inf")}})


def _spelled_by_others(value: str) -> str:
    out = []
    for ch in value:
        if ch == "/":
            out.append("\\/")
        elif ch in "&<>":
            out.append(f"\\u{ord(ch):04x}")
        elif ch.isalnum() and ch.isascii():
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04X}")
    return "".join(out)


async def echo_escaped(ctx: Ctx) -> None:
    said = _spelled_by_others(str(ctx.args.get("text", "")))
    answer = json.dumps({"jsonrpc": "2.0", "id": ctx.id, "result": complete([{"type": "text", "text": "@"}])})
    await ctx.reply_text(answer.replace('"@"', f'"{said}"'))


def _php(value: object) -> str:
    return json.dumps(value).replace("/", "\\/")


async def echo_nested(ctx: Ctx) -> None:
    inner = _php({"echo": str(ctx.args.get("text", ""))})
    await ctx.reply_text(_php({"jsonrpc": "2.0", "id": ctx.id, "result": complete([{"type": "text", "text": inner}])}))


async def refuse_escaped(ctx: Ctx) -> None:
    await ctx.raw_http(401, _php({"error": f"token {ctx.args.get('text', '')} is not valid"}), "application/json")


async def say_at_the_cut(ctx: Ctx) -> None:
    said = str(ctx.args.get("text", ""))
    await ctx.log("A" * (8192 - 10) + said)
    await ctx.progress(1, 2, "P" * (2000 - 10) + said)
    await ctx.reply(complete([{"type": "text", "text": "said"}]))


async def say_on_stderr(ctx: Ctx) -> None:
    ctx.stderr("E" * 1975 + " key=" + str(ctx.args.get("text", "")))
    await ctx.flush_stderr()
    await ctx.reply(complete([{"type": "text", "text": "said"}]))


HALF_NAME = "half\ud800pair"


async def half_named(ctx: Ctx) -> None:
    await ctx.reply(complete([{"type": "text", "text": "called by half a pair"}]))


TEXT_ARGUMENT = {"type": "object", "properties": {"text": {"type": "string"}}}
TOOLS = [
    Tool("long_title", long_title, {"title": LONG, "description": "D" * 3000}),
    Tool(BIDI_NAME, bidi_name, {"title": f"Pay {BIDI_NAME}", "description": f"Opens {BIDI_NAME}"}),
    Tool("markup", markup, {"title": IMG, "description": SCRIPT}),
    Tool("lone_surrogate", lone_surrogate, {"description": "A result whose text holds a lone surrogate"}),
    Tool("not_a_number", not_a_number, {"description": "A result holding NaN and Infinity"}),
    Tool(HALF_NAME, half_named, {"description": "A tool whose name holds a lone surrogate"}),
    *(Tool(name, run, {"description": description, "inputSchema": TEXT_ARGUMENT}) for name, run, description in (
        ("echo_nested", echo_nested, "Says its text back inside JSON inside its text"),
        ("refuse_escaped", refuse_escaped, "HTTP 401 whose PHP-written body repeats its text"),
        ("say_at_the_cut", say_at_the_cut, "Logs its text where the display cuts"),
        ("say_on_stderr", say_on_stderr, "Writes its text on stderr where the line is cut"),
        ("echo_escaped", echo_escaped, "Says its text back with other writers' JSON escapes"))),
]
