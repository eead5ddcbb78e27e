"""A stderr storm in real Chromium: the live box stays at its cap and an echo's result still shows promptly."""

from __future__ import annotations

import shlex
import sys
import textwrap
import time
from pathlib import Path

from playwright.sync_api import BrowserContext, expect

from tests.browser.conftest import ROOT, Console, open_launch_url, wait_live
from tests.browser.ui import label, open_tool
from tests.hostile.fixtures import hostile_argv

BOX_CAP = 500  # the stderr box's data-max
ECHO_DEADLINE_S = 3.0


def test_during_a_stderr_flood_the_box_stays_capped_and_an_echo_result_appears_within_seconds(
        context: BrowserContext, console: Console) -> None:
    page = context.new_page()
    open_launch_url(page, console)
    page.goto(console.url("/"))
    page.get_by_label("Command to start the server").fill(shlex.join(hostile_argv("bounds", "basic")))
    page.get_by_label("Working directory (optional)").fill(str(ROOT))
    page.get_by_role("button", name="Start and connect").click()
    wait_live(page)

    flood = open_tool(page, "stderr_flood")
    flood.get_by_label(label("lines")).fill("20000")
    flood.get_by_label(label("rate")).fill("4000")  # five seconds of storm
    flood.get_by_role("button", name="Call stderr_flood", exact=True).click()
    lines = page.locator("#stderr-lines > span")
    expect(lines.nth(BOX_CAP - 1)).to_be_attached()  # the storm is on screen, and the box is full

    echo = open_tool(page, "echo")
    echo.get_by_label(label("text")).fill("through the storm")
    started = time.monotonic()
    echo.get_by_role("button", name="Call echo", exact=True).click()
    expect(echo.locator(".result pre.text-content")).to_have_text("through the storm",
                                                                  timeout=ECHO_DEADLINE_S * 1000)
    took = time.monotonic() - started
    assert took < ECHO_DEADLINE_S, f"the echo's result took {took:.2f} s during the storm"

    counts = [lines.count()]
    expect(page.locator("#stderr-dropped")).to_contain_text("lines dropped", timeout=15_000)
    counts.append(lines.count())
    assert max(counts) <= BOX_CAP, f"the stderr box held {counts} lines"
    expect(lines.last).to_contain_text("stderr storm line")
    expect(page.locator("#stderr-lines b")).to_have_count(0)  # server text stays text


# Each call of `step` redraws a progress bar on stderr the way tqdm does (\r, no newline); `finish` ends its line.
REDRAWS_ON_EACH_CALL = textwrap.dedent('''
    import json, sys
    DISCOVER = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "ttlMs": 0, "cacheScope": "public"}
    TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in ("step", "finish")]
    steps = 0
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        if message["method"] == "tools/call":
            if message["params"]["name"] == "step":
                steps += 1
                sys.stderr.write(f"\\rstep {steps} of 3")
            else:
                sys.stderr.write("\\rall 3 steps done\\n")
            sys.stderr.flush()
        result = {"server/discover": DISCOVER, "tools/list": {"resultType": "complete", "tools": TOOLS},
                  "tools/call": {"resultType": "complete", "content": []}}.get(message["method"], {})
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
''')


def test_a_progress_bar_redrawn_on_stderr_shows_live_as_one_line_replaced_then_stays_as_its_final_line(
        context: BrowserContext, console: Console, tmp_path: Path) -> None:
    script = tmp_path / "redraws.py"
    script.write_text(REDRAWS_ON_EACH_CALL)
    page = context.new_page()
    open_launch_url(page, console)
    page.goto(console.url("/"))
    page.get_by_label("Command to start the server").fill(shlex.join([sys.executable, str(script)]))
    page.get_by_role("button", name="Start and connect").click()
    wait_live(page)

    current, lines = page.locator("#stderr-current"), page.locator("#stderr-lines > span")
    for step in (1, 2):
        open_tool(page, "step").get_by_role("button", name="Call step", exact=True).click()
        expect(current).to_have_text(f"step {step} of 3")  # pushed as it is drawn, without a reload
    expect(lines.filter(has_text="step")).to_have_count(0)  # no line per redraw
    open_tool(page, "finish").get_by_role("button", name="Call finish", exact=True).click()
    expect(lines.last).to_contain_text("all 3 steps done")
    expect(current).to_have_text("")
    expect(current).to_be_hidden()
