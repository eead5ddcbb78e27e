"""Click → result visible for a trivial tool (`echo`), N calls in one headless Chromium tab.

Method. Each call is one `page.evaluate` whose promise settles in the page: it writes a unique text
("call-17.") into the echo form's text field, starts a MutationObserver on the tool's result area, takes
t0 = performance.now() and clicks "Call echo" (a real DOM click: the form submits, htmx posts it and swaps
the answer in). The observer takes t_dom when the result area first contains that call's text; a
requestAnimationFrame followed by a zero timeout then takes t_frame, after the browser has rendered the
frame holding the result. Both are measured inside the page, so the Playwright round trip (evaluate
call and return) is outside every figure. Calls run back to back in the same tab; the timeline keeps
growing over the websocket as it would for a person clicking.

At the start, after 100 calls and at the end, a forced GC and CDP `Performance.getMetrics` give the DOM
node count and live JS heap.

    .venv/bin/python -m bench.browser_clicks [--calls 1000]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench.browser import cdp_session, chromium, open_session_page, page_metrics
from bench.common import Rig, cpu_seconds, emit_json, median, percentile, print_table, r, rss_mb

CALL_TIMEOUT_MS = 5_000
MAX_FAILURES = 5

ONE_CALL_JS = r"""
async ([text, timeoutMs]) => {
  const tool = document.querySelector('details[data-tool=echo]');
  const input = tool.querySelector('input[name="arg.text"]');
  const button = Array.from(tool.querySelectorAll('button[type=submit]'))
    .find(b => b.textContent.trim() === 'Call echo');
  const result = tool.querySelector('.result');
  input.value = text;
  return await new Promise(resolve => {
    let t0 = 0;
    let tDom = null;
    // A call that never shows its text resolves as a failure (with what the result area shows instead).
    const timer = setTimeout(() => {
      observer.disconnect();
      resolve({ok: false, shows: result.innerText.slice(0, 400).replace(/\s+/g, ' ')});
    }, timeoutMs);
    const observer = new MutationObserver(() => {
      if (tDom !== null || !result.textContent.includes(text)) return;
      tDom = performance.now();
      observer.disconnect();
      clearTimeout(timer);
      const painted = () => resolve({ok: true, dom: tDom - t0, frame: performance.now() - t0});
      requestAnimationFrame(() => setTimeout(painted, 0));
    });
    observer.observe(result, {childList: true, subtree: true, characterData: true});
    t0 = performance.now();
    button.click();
  });
}
"""


TRIM_JS = """(keep) => {
  const items = document.querySelectorAll('#timeline-list > li');
  for (let i = keep; i < items.length; i++) items[i].remove();
}"""


def run(calls: int, max_seconds: float, trim: int | None = None) -> dict[str, Any]:
    with Rig() as rig, chromium() as context:
        assert rig.console is not None
        session_id = rig.open_demo_session()
        page = open_session_page(context, rig.launch_url(session_id))
        page.click("details[data-tool=echo] > summary")
        page.wait_for_selector("details[data-tool=echo] input[name='arg.text']", state="visible")
        cdp = cdp_session(context, page)
        checkpoints = {0: page_metrics(cdp, page)}
        console_before = (cpu_seconds(rig.console.pid), rss_mb(rig.console.pid))
        dom: list[float] = []
        frame: list[float] = []
        failures: list[dict[str, Any]] = []
        started = time.monotonic()
        for i in range(1, calls + 1):
            if time.monotonic() - started > max_seconds:
                print(f"stopping after {i - 1} calls: the {max_seconds:g} s budget is spent")
                break
            t = page.evaluate(ONE_CALL_JS, [f"call-{i}.", CALL_TIMEOUT_MS])
            if not t["ok"]:
                failures.append({"call": i, "shows": t["shows"]})
                print(f"call {i}: no result within {CALL_TIMEOUT_MS} ms; the result area shows: {t['shows']!r}")
                if len(failures) >= MAX_FAILURES:
                    print(f"stopping after {MAX_FAILURES} failed calls")
                    break
                continue
            dom.append(t["dom"])
            frame.append(t["frame"])
            if trim is not None:
                page.evaluate(TRIM_JS, trim)
            if i == 100 and calls > 100:
                checkpoints[i] = page_metrics(cdp, page)
        wall = time.monotonic() - started
        checkpoints[len(dom)] = page_metrics(cdp, page)
        console_after = (cpu_seconds(rig.console.pid), rss_mb(rig.console.pid))
    return report(dom, frame, checkpoints, wall, console_before, console_after, failures)


def report(dom: list[float], frame: list[float], checkpoints: dict[int, dict[str, Any]], wall: float,
           console_before: tuple[float, float], console_after: tuple[float, float],
           failures: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(dom)
    size = 100 if n >= 200 else max(1, n // 2)
    buckets = [(start, min(start + size, n)) for start in range(0, n, size)]
    rows = [[f"calls {a + 1}–{b}", median(dom[a:b]), median(frame[a:b]), percentile(frame[a:b], 95)]
            for a, b in buckets]
    rows.append(["all", median(dom), median(frame), percentile(frame, 95)])
    print_table(f"click → result visible, echo, {n} calls in one tab; ms (in-page timing)",
                ["calls", "median DOM", "median frame", "p95 frame"], rows)
    print_table("page after calls (after forced GC)",
                ["after call", "elements", "timeline <li>", "DOM nodes", "JS heap MB", "listeners"],
                [[k, v["elements"], v["timeline_entries"], v["dom_nodes"], v["js_heap_mb"], v["js_listeners"]]
                 for k, v in sorted(checkpoints.items())])
    print(f"\n{n} calls in {wall:.1f} s wall; console CPU {console_after[0] - console_before[0]:.2f} s, "
          f"RSS {console_before[1]:.1f} → {console_after[1]:.1f} MB. "
          "Goal: ≤ 100 ms median, flat (Inspector: 1,156 ms first 20 → 2,308 ms by call 96).")
    first, last = frame[:size], frame[-size:]
    if failures:
        print(f"FAILED: {len(failures)} call(s) never showed their result: calls "
              + ", ".join(str(f["call"]) for f in failures))
    return {"calls": n, "failed_calls": failures, "wall_s": r(wall, 1),
            "first100_median_ms": r(median(first)), "last100_median_ms": r(median(last)),
            "median_ms": r(median(frame)), "p95_ms": r(percentile(frame, 95)),
            "dom_first100_median_ms": r(median(dom[:size])), "dom_last100_median_ms": r(median(dom[-size:])),
            "dom_median_ms": r(median(dom)), "dom_p95_ms": r(percentile(dom, 95)),
            "page": {str(k): v for k, v in sorted(checkpoints.items())},
            "console_cpu_s": r(console_after[0] - console_before[0]),
            "console_rss_mb": {"before": r(console_before[1], 1), "after": r(console_after[1], 1)}}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.browser_clicks", description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=1000, help="calls in one tab (default 1000)")
    p.add_argument("--max-seconds", type=float, default=270, help="stop calling after this long (default 270)")
    p.add_argument("--trim-timeline", type=int, default=None, metavar="N",
                   help="diagnostic: after each call (outside the timing) remove timeline entries beyond the "
                        "newest N from the page, as a bounded live window would; shows what the growth costs")
    args = p.parse_args(argv)
    if not 1 <= args.calls <= 20_000:
        p.error("--calls must be 1..20000")
    result = run(args.calls, args.max_seconds, args.trim_timeline)
    result["trim_timeline"] = args.trim_timeline
    emit_json("browser_clicks", result)
    if result["failed_calls"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
