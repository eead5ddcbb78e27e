"""Progress flood: delay from the server sending a notification to the browser showing it.

The demo server's `progress_fast` tool sends `count` progress notifications back to back; with `stamp`
ticked each message is "t=<server time.time()> i=<n>". The tool is called from the session page in
headless Chromium (the form: count, stamp, "Call progress_fast"). Before the click a MutationObserver on
the document watches the progress boxes (ids `progress-card-…` and `progress-entry-…`, text in
`.progress-message`) and records, for each distinct message, the wall-clock time it first appeared
(performance.timeOrigin + performance.now(), at the DOM change) and the time of the next rendered frame
(requestAnimationFrame, then a zero timeout). Delay = shown − sent; both processes run on this machine so
the clocks agree (the script checks the page clock against Python's and prints the difference).

The console coalesces progress per request (the latest value wins within 50 ms), so the page shows a few
dozen of the thousands sent; the final value must be among them, and the script checks that it is. The
console's own wire record (one event per frame received, with its wall time) splits the delay into
server → console and console → browser, and gives the server's achieved send rate. Console CPU time and
RSS come from /proc before the click and after the call has finished.

At `--rate 1000` the demo paces its sending; at `--rate full` it sends as fast as it can (about 17,800 a second
on a quiet machine). Both run in one console and one tab, in the order given, so `--rate 1000 full 1000 full`
interleaves them; each call's console CPU and RSS are taken around it.

    .venv/bin/python -m bench.progress_latency [--rate 1000 full] [--count 10000] [--full-count 50000]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from typing import Any

from bench.browser import chromium, open_session_page
from bench.common import Rig, cpu_seconds, emit_json, median, percentile, print_table, r, rss_mb, wait_until

STAMP = re.compile(r"t=(\d+\.\d+) i=(\d+)")
TOOL = "details[data-tool=progress_fast]"

OBSERVE_JS = """
() => {
  const seen = new Map();
  window.__progress = seen;
  const clock = () => performance.timeOrigin + performance.now();
  let batch = [];
  const scan = () => {
    const now = clock();
    const boxes = document.querySelectorAll(
      '[id^="progress-card-"] .progress-message, [id^="progress-entry-"] .progress-message');
    for (const el of boxes) {
      const text = el.textContent;
      if (!seen.has(text)) { const rec = {text, dom: now, frame: null}; seen.set(text, rec); batch.push(rec); }
    }
    if (batch.length) {
      const mine = batch; batch = [];
      requestAnimationFrame(() => setTimeout(() => { const t = clock(); for (const rec of mine) rec.frame = t; }, 0));
    }
  };
  new MutationObserver(scan).observe(document.body, {childList: true, subtree: true, characterData: true});
}
"""


def clock_offset_ms(page: Any, samples: int = 20) -> tuple[float, float]:
    """Page clock minus Python clock, and its uncertainty (half the round trip), from the fastest of
    `samples` evaluate round trips."""
    best: tuple[float, float] | None = None
    for _ in range(samples):
        before = time.time()
        page_now = float(page.evaluate("() => performance.timeOrigin + performance.now()"))
        after = time.time()
        rtt = (after - before) * 1000
        if best is None or rtt < best[1] * 2:
            best = (page_now - (before + after) / 2 * 1000, rtt / 2)
    assert best is not None
    return best


def call_from_page(page: Any, count: int, per_second: float) -> None:
    if not page.eval_on_selector(TOOL, "el => el.open"):
        page.click(f"{TOOL} > summary")
    page.fill(f"{TOOL} input[name='arg.count']", str(count))
    page.select_option(f"{TOOL} select[name='arg.stamp']", "true")  # optional boolean: not set / true / false
    page.fill(f"{TOOL} input[name='arg.per_second']", repr(per_second) if per_second else "0")
    page.locator(TOOL).get_by_role("button", name="Call progress_fast", exact=True).click()


def console_wire(rig: Rig, session_id: str, count: int) -> list[tuple[float, float]]:
    """(sent, received by the console) for each progress frame, from the console's wire record."""
    ops = rig.client.get(f"/sessions/{session_id}.json").json()["operations"]
    op = next(o for o in reversed(ops) if o["name"] == "progress_fast")
    key = op["rounds"][0]["key"]

    def frames() -> list[tuple[float, float]] | None:
        wire = rig.client.get(f"/sessions/{session_id}/entries/{key}.json").json()["wire"]
        pairs = []
        for w in wire:
            if w["direction"] == "in" and "notifications/progress" in w["raw"]:
                message = json.loads(w["raw"])["params"].get("message", "")
                match = STAMP.search(message)
                if match:
                    pairs.append((float(match[1]), float(w["wall"])))
        return pairs if len(pairs) >= count else None  # the store writes in batches: wait for all

    try:
        return list(wait_until(frames, 10, "the console's wire record"))
    except TimeoutError:
        return frames() or []


def run(rates: list[float], count: int, full_count: int, timeout_s: float) -> list[dict[str, Any]]:
    """One console, one tab, one call per rate in the order given (`--rate 1000 full 1000 full` interleaves)."""
    results = []
    with Rig() as rig, chromium() as context:
        assert rig.console is not None and rig.demo is not None
        session_id = rig.open_demo_session()
        page = open_session_page(context, rig.launch_url(session_id))
        offset = clock_offset_ms(page)
        page.evaluate(OBSERVE_JS)
        for per_second in rates:
            n = count if per_second else full_count
            page.evaluate("() => window.__progress.clear()")
            page.evaluate("(sel) => document.querySelectorAll(sel).forEach(e => e.remove())",
                          f"{TOOL} .result .operation")
            pid = rig.console.pid
            before = {"cpu": cpu_seconds(pid), "rss": rss_mb(pid), "demo_cpu": cpu_seconds(rig.demo.pid)}
            clicked = time.time()
            call_from_page(page, n, per_second)
            final = f"i={n}"
            page.wait_for_function("(final) => Array.from(window.__progress.keys()).some(k => k.endsWith(final))",
                                   arg=final, timeout=timeout_s * 1000)
            page.wait_for_selector(f"{TOOL} .result .operation[data-status=complete]", timeout=timeout_s * 1000)
            finished = time.time()
            after = {"cpu": cpu_seconds(pid), "rss": rss_mb(pid), "demo_cpu": cpu_seconds(rig.demo.pid)}
            page.wait_for_timeout(100)  # the last frame timestamps are taken one frame after the DOM change
            # The previous call's entry still shows its last value: keep only what this call's server sent.
            shown = [rec for rec in page.evaluate("() => Array.from(window.__progress.values())")
                     if (m := STAMP.search(rec["text"])) and float(m[1]) >= clicked - 1]
            wire = console_wire(rig, session_id, n)
            result = report(n, shown, wire, offset, before, after, finished - clicked)
            results.append(result | {"rate": per_second or "full"})
    return results


def report(count: int, shown: list[dict[str, Any]], wire: list[tuple[float, float]], offset: tuple[float, float],
           before: dict[str, float], after: dict[str, float], call_s: float) -> dict[str, Any]:
    delays_dom, delays_frame, indexes = [], [], []
    for rec in shown:
        match = STAMP.search(rec["text"])
        if not match:
            continue
        sent_ms = float(match[1]) * 1000
        indexes.append(int(match[2]))
        delays_dom.append(rec["dom"] - sent_ms)
        if rec["frame"] is not None:
            delays_frame.append(rec["frame"] - sent_ms)
    to_console = [(got - sent) * 1000 for sent, got in wire]
    stamps = sorted(sent for sent, _ in wire)
    send_s = stamps[-1] - stamps[0] if len(stamps) > 1 else float("nan")
    rate = (len(stamps) - 1) / send_s if send_s > 0 else float("nan")
    final_shown = count in indexes
    print_table(f"progress_fast count={count}: server send → shown in the browser; ms",
                ["leg", "p50", "p95", "max", "samples"],
                [["server → console (wire record)", median(to_console), percentile(to_console, 95),
                  max(to_console, default=float("nan")), len(to_console)],
                 ["server → browser DOM", median(delays_dom), percentile(delays_dom, 95),
                  max(delays_dom, default=float("nan")), len(delays_dom)],
                 ["server → browser next frame", median(delays_frame), percentile(delays_frame, 95),
                  max(delays_frame, default=float("nan")), len(delays_frame)]])
    cpu = after["cpu"] - before["cpu"]
    print_table("counts and cost", ["figure", "value"],
                [["notifications sent / received by the console", f"{count:,} / {len(wire):,}"],
                 ["server send time, achieved rate", f"{send_s:.2f} s, {rate:,.0f} /s"],
                 ["distinct updates shown in the page", len(indexes)],
                 ["final value (i=count) shown", "yes" if final_shown else "NO"],
                 ["click → operation complete in page", f"{call_s:.2f} s"],
                 ["console CPU during the call", f"{cpu:.2f} s ({cpu / call_s * 100:.0f}% of one core)"],
                 ["demo server CPU during the call", f"{after['demo_cpu'] - before['demo_cpu']:.2f} s"],
                 ["console RSS before → after", f"{before['rss']:.1f} → {after['rss']:.1f} MB"],
                 ["page clock − Python clock", f"{offset[0]:+.2f} ± {offset[1]:.2f} ms"]])
    if not final_shown:
        print("FAIL: the final progress value never appeared in the page")
    return {"count": count, "received_by_console": len(wire), "send_s": r(send_s, 3), "rate_per_s": r(rate, 0),
            "shown": len(indexes), "final_shown": final_shown,
            "delay_ms": {"p50": r(median(delays_frame)), "p95": r(percentile(delays_frame, 95))},
            "delay_dom_ms": {"p50": r(median(delays_dom)), "p95": r(percentile(delays_dom, 95))},
            "server_to_console_ms": {"p50": r(median(to_console)), "p95": r(percentile(to_console, 95))},
            "call_s": r(call_s), "console_cpu_s": r(cpu),
            "demo_cpu_s": r(after["demo_cpu"] - before["demo_cpu"]),
            "console_rss_mb": {"before": r(before["rss"], 1), "after": r(after["rss"], 1)},
            "clock_offset_ms": r(offset[0]), "clock_offset_uncertainty_ms": r(offset[1])}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.progress_latency", description=__doc__.split("\n")[0])
    p.add_argument("--count", type=int, default=10_000,
                   help="progress notifications per paced call (default 10000: ten seconds at 1,000 a second)")
    p.add_argument("--full-count", type=int, default=50_000,
                   help="progress notifications per full-rate call (default 50000: a few seconds at the demo's "
                        "full rate)")
    p.add_argument("--timeout", type=float, default=120, help="seconds to wait for each call (default 120)")
    p.add_argument("--rate", nargs="+", default=["1000", "full"], metavar="RATE",
                   help="one call per rate, in this order: notifications a second, or `full` (as fast as the demo "
                        "server sends); default: 1000 full")
    p.add_argument("--per-second", type=float, default=None, help="old spelling of a single --rate (0 = full)")
    args = p.parse_args(argv)
    if not 1 <= args.count <= 100_000 or not 1 <= args.full_count <= 1_000_000:
        p.error("--count must be 1..100000 and --full-count 1..1000000")
    try:
        rates = [args.per_second] if args.per_second is not None else \
            [0.0 if r == "full" else float(r) for r in args.rate]
    except ValueError:
        p.error("--rate takes numbers or `full`")
    results = run(rates, args.count, args.full_count, args.timeout)
    emit_json("progress_latency", {"runs": results, "final_shown": all(r["final_shown"] for r in results)})
    if not all(r["final_shown"] for r in results):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
