"""Weight of the session page's first load: JS and CSS bytes, requests, foreign hosts, first contentful paint.

Each load runs in a fresh browser context (empty cache, no cookie), in three ways:

- "launch": the launch URL `/?token=…&next=/sessions/ID`, which sets the cookie and answers 303 to the
  session page (what a person opens; its paint timings include the redirect);
- "session": the session page itself, the owner cookie set on the context beforehand;
- "reload": the session page loaded a second time in the same tab with the cache disabled (CDP), which
  leaves out starting a renderer process for a fresh context.

Sizes come from the Resource Timing API of the page (decodedBodySize = uncompressed body; transferSize =
bytes on the wire including headers; same-origin, so nothing is hidden), requests and hosts from Playwright's
request and websocket events, paint timings from the Paint Timing API. The page counts as settled once
the load event fired, its websocket is open and no request has been in flight for 300 ms.

    .venv/bin/python -m bench.page_weight [--loads 5]
"""

from __future__ import annotations

import argparse
import time
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import Browser, Page, Request, WebSocket, sync_playwright

from bench.common import Rig, emit_json, median, print_table, r
from tests.chromium import launch_options

QUIET_S = 0.3
SETTLE_TIMEOUT_S = 10.0
LOCAL = "127.0.0.1"
MODES = ("launch", "session", "reload")

TIMINGS_JS = """
async () => {
  const fcp = await new Promise(resolve => {
    const found = () => performance.getEntriesByName('first-contentful-paint')[0];
    if (found()) return resolve(found().startTime);
    const obs = new PerformanceObserver(() => { if (found()) { obs.disconnect(); resolve(found().startTime); } });
    obs.observe({type: 'paint', buffered: true});
    setTimeout(() => resolve(null), 5000);
  });
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource').map(e => ({
      name: e.name, initiator: e.initiatorType, transfer: e.transferSize,
      encoded: e.encodedBodySize, decoded: e.decodedBodySize}));
  const fp = performance.getEntriesByName('first-paint')[0];
  return {fcp, fp: fp ? fp.startTime : null,
          nav: {name: nav.name, transfer: nav.transferSize, encoded: nav.encodedBodySize, decoded: nav.decodedBodySize,
                redirects: nav.redirectCount, response_start: nav.responseStart, response_end: nav.responseEnd,
                dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd},
          resources: res};
}
"""


def kind_of(url: str) -> str:
    path = urlsplit(url).path
    return "js" if path.endswith(".js") else "css" if path.endswith(".css") else "other"


def one_load(browser: Browser, rig: Rig, session_id: str, mode: str) -> dict[str, Any]:
    context = browser.new_context()
    try:
        if mode == "launch":
            url = rig.launch_url(session_id)
        else:
            context.add_cookies([{"name": "mcp_console_token", "value": rig.token, "url": rig.public_base}])
            url = f"{rig.public_base}/sessions/{session_id}"
        page = context.new_page()
        requests: list[Request] = []
        sockets: list[str] = []
        inflight = {"n": 0, "last": time.monotonic()}

        def started(req: Request) -> None:
            requests.append(req)
            inflight["n"] += 1
            inflight["last"] = time.monotonic()

        def ended(_req: Request) -> None:
            inflight["n"] -= 1
            inflight["last"] = time.monotonic()

        def socket_opened(ws: WebSocket) -> None:
            sockets.append(ws.url)

        page.on("request", started)
        page.on("requestfinished", ended)
        page.on("requestfailed", ended)
        page.on("websocket", socket_opened)
        page.goto(url, wait_until="load")
        page.wait_for_selector("body[data-ws=open]", state="attached", timeout=SETTLE_TIMEOUT_S * 1000)
        settle(page, inflight)
        if mode == "reload":
            # The same tab loads the page again with the cache off: no new renderer process, no cached bytes.
            context.new_cdp_session(page).send("Network.setCacheDisabled", {"cacheDisabled": True})
            requests.clear()
            sockets.clear()
            page.reload(wait_until="load")
            page.wait_for_selector("body[data-ws=open]", state="attached", timeout=SETTLE_TIMEOUT_S * 1000)
            settle(page, inflight)
        timings = page.evaluate(TIMINGS_JS)
        return summarize(requests, sockets, timings)
    finally:
        context.close()


def settle(page: Page, inflight: dict[str, Any]) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        if inflight["n"] <= 0 and time.monotonic() - inflight["last"] >= QUIET_S:
            return
        page.wait_for_timeout(50)  # lets Playwright dispatch the request events meanwhile
    raise TimeoutError("the page kept making requests")


def summarize(requests: list[Request], sockets: list[str], timings: dict[str, Any]) -> dict[str, Any]:
    by_kind: dict[str, dict[str, int]] = {k: {"files": 0, "decoded": 0, "transfer": 0} for k in ("js", "css")}
    files = []
    for e in timings["resources"]:
        kind = kind_of(e["name"])
        if kind in by_kind:
            by_kind[kind]["files"] += 1
            by_kind[kind]["decoded"] += e["decoded"]
            by_kind[kind]["transfer"] += e["transfer"]
        files.append({"path": urlsplit(e["name"]).path, "decoded": e["decoded"], "transfer": e["transfer"]})
    nav = timings["nav"]
    files.insert(0, {"path": urlsplit(nav["name"]).path + " (document)", "decoded": nav["decoded"],
                     "transfer": nav["transfer"]})
    urls = [req.url for req in requests if urlsplit(req.url).scheme in ("http", "https")] + sockets
    # The launch URL hops from 127.0.0.1 to the console's own mcp-….localhost name: both are this machine.
    foreign = sorted({u for u in urls if urlsplit(u).hostname != LOCAL
                      and not (urlsplit(u).hostname or "").endswith(".localhost")})
    return {"requests": len([u for u in urls if not u.startswith("ws")]), "websockets": len(sockets),
            "foreign": foreign, "by_kind": by_kind, "files": files,
            "total_decoded": sum(f["decoded"] for f in files), "total_transfer": sum(f["transfer"] for f in files),
            "fcp_ms": timings["fcp"], "fp_ms": timings["fp"], "redirects": nav["redirects"],
            "response_start_ms": nav["response_start"], "response_end_ms": nav["response_end"],
            "dcl_ms": nav["dcl"], "load_ms": nav["load"]}


def run(loads: int) -> dict[str, Any]:
    with Rig() as rig, sync_playwright() as pw:
        session_id = rig.open_demo_session()
        browser = pw.chromium.launch(**launch_options())
        try:
            results = {mode: [one_load(browser, rig, session_id, mode) for _ in range(loads)]
                       for mode in MODES}
        finally:
            browser.close()
    return report(results)


def report(results: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    first = results["launch"][0]
    kb = 1024
    print_table("first load via the launch URL: files (bytes; transfer includes headers)",
                ["file", "uncompressed", "transferred"],
                [[f["path"], f["decoded"], f["transfer"]] for f in first["files"]]
                + [["total", first["total_decoded"], first["total_transfer"]]])
    js, css = first["by_kind"]["js"], first["by_kind"]["css"]
    js_css_decoded, js_css_transfer = js["decoded"] + css["decoded"], js["transfer"] + css["transfer"]
    print_table("JS + CSS", ["", "files", "uncompressed KB", "transferred KB"],
                [["JS", js["files"], js["decoded"] / kb, js["transfer"] / kb],
                 ["CSS", css["files"], css["decoded"] / kb, css["transfer"] / kb],
                 ["JS + CSS (goal ≤ 100 KB; Inspector 2.77 MB)", js["files"] + css["files"],
                  js_css_decoded / kb, js_css_transfer / kb]])
    rows = []
    for mode, runs in results.items():
        fcps = [x["fcp_ms"] for x in runs if x["fcp_ms"] is not None]
        rows.append([mode, runs[0]["requests"], len(runs[0]["foreign"]),
                     median([x["response_start_ms"] for x in runs]), median([x["response_end_ms"] for x in runs]),
                     runs[0]["fcp_ms"] or float("nan"), median(fcps), median([x["dcl_ms"] for x in runs]),
                     median([x["load_ms"] for x in runs])])
    print_table(f"loads ({len(results['launch'])} each; launch and session in fresh contexts); ms from navigation "
                "start, medians unless 'first'",
                ["mode", "requests", "foreign", "first byte", "HTML done", "FCP first", "FCP", "DOMContentLoaded",
                 "load"], rows)
    foreign = sorted({u for runs in results.values() for x in runs for u in x["foreign"]})
    print("requests to hosts other than 127.0.0.1 and the console's *.localhost name:",
          ", ".join(foreign) if foreign else "none")
    print("goals: JS + CSS ≤ 100 KB, no external requests, first contentful paint ≤ 150 ms (Inspector: 2.77 MB, "
          "a Google Fonts request, 488 ms)")

    def med(mode: str, key: str) -> float:
        return r(median([x[key] for x in results[mode] if x[key] is not None]), 1)

    return {"js_css_uncompressed_kb": r(js_css_decoded / kb), "js_css_transferred_kb": r(js_css_transfer / kb),
            "js_kb": {"uncompressed": r(js["decoded"] / kb), "transferred": r(js["transfer"] / kb)},
            "css_kb": {"uncompressed": r(css["decoded"] / kb), "transferred": r(css["transfer"] / kb)},
            "page_total_kb": {"uncompressed": r(first["total_decoded"] / kb),
                              "transferred": r(first["total_transfer"] / kb)},
            "requests": first["requests"], "websockets": first["websockets"], "foreign_requests": foreign,
            "loads_per_mode": len(results["launch"]),
            "fcp_ms": {mode: {"first": r(runs[0]["fcp_ms"] or float("nan"), 1), "median": med(mode, "fcp_ms")}
                       for mode, runs in results.items()},
            "first_byte_ms_median": {mode: med(mode, "response_start_ms") for mode in results},
            "load_ms_median": {mode: med(mode, "load_ms") for mode in results}}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.page_weight", description=__doc__.split("\n")[0])
    p.add_argument("--loads", type=int, default=5, help="loads per mode (default 5)")
    args = p.parse_args(argv)
    if not 1 <= args.loads <= 100:
        p.error("--loads must be 1..100")
    emit_json("page_weight", run(args.loads))


if __name__ == "__main__":
    main()
