"""Where the session page's DOM nodes are: a count per region, before and after N echo calls in one tab.

Method. Headless Chromium opens the demo session as `browser_clicks` does, opens the `echo` tool and makes
`--calls` calls with the same in-page click (`browser_clicks.ONE_CALL_JS`). At the start and at the end it
walks every node of the document (a TreeWalker over elements, text and comments, plus the content of any
`<template>`) and files each under the first region that contains it (the list below, most specific first),
with counts of text nodes (and the whitespace-only ones), `<svg>` subtrees and `<option>`s per region. CDP's
`Nodes` after a forced GC is printed beside it: it also counts the document, the doctype and nodes that only
JavaScript still holds, so it is the figure `browser_clicks` reports and the one the goal is about.

    .venv/bin/python -m bench.dom_regions [--calls 100]
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.browser import cdp_session, chromium, open_session_page, page_metrics
from bench.browser_clicks import CALL_TIMEOUT_MS, ONE_CALL_JS
from bench.common import Rig, emit_json, print_table

# Most specific first: a node is counted in the first region whose selector contains it.
REGIONS = [
    ("open tool (form + result)", "details[data-tool][open]"),
    ("tools list", "#group-tools"),
    ("resources list", "#group-resources"),
    ("resource templates", "#group-templates"),
    ("prompts list", "#group-prompts"),
    ("completion", "#group-completion"),
    ("server panel (rest)", ".server-panel"),
    ("session head", "#session-head"),
    ("drawers (toolbar)", "nav.toolbar"),
    ("inbox", "#inbox"),
    ("timeline filter", ".timeline-filter"),
    ("findings summary", "#findings-summary"),
    ("timeline rows", "#timeline-list"),
    ("timeline (rest)", "#timeline-pane"),
    ("top bar", "header.top"),
    ("head", "head"),
]

COUNT_JS = r"""
(regions) => {
  const out = {};
  for (const [name] of regions) out[name] = {nodes: 0, text: 0, blank: 0, svg: 0, option: 0};
  out['other'] = {nodes: 0, text: 0, blank: 0, svg: 0, option: 0};
  const regionOf = (node) => {
    const el = node.nodeType === 1 ? node : node.parentElement;
    if (!el) return 'other';
    for (const [name, sel] of regions) if (el.closest(sel)) return name;
    return 'other';
  };
  const count = (root) => {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ALL);
    for (let n = walker.currentNode; n; n = walker.nextNode()) {
      if (n === document) continue;
      const r = out[regionOf(n)];
      r.nodes++;
      if (n.nodeType === 3) { r.text++; if (!n.data.trim()) r.blank++; }
      if (n.nodeType === 1 && n.localName === 'svg') r.svg++;
      if (n.nodeType === 1 && n.localName === 'option') r.option++;
      if (n.nodeType === 1 && n.localName === 'template') count(n.content);
    }
  };
  count(document);
  return out;
}
"""


def regions(page: Any) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = page.evaluate(COUNT_JS, REGIONS)
    return counts


def run(calls: int) -> dict[str, Any]:
    with Rig() as rig, chromium() as context:
        session_id = rig.open_demo_session()
        page = open_session_page(context, rig.launch_url(session_id))
        cdp = cdp_session(context, page)
        closed = {"regions": regions(page), "metrics": page_metrics(cdp, page)}
        page.click("details[data-tool=echo] > summary")
        page.wait_for_selector("details[data-tool=echo] input[name='arg.text']", state="visible")
        snaps = {"no tool open": closed, "echo open": {"regions": regions(page), "metrics": page_metrics(cdp, page)}}
        for i in range(1, calls + 1):
            t = page.evaluate(ONE_CALL_JS, [f"call-{i}.", CALL_TIMEOUT_MS])
            if not t["ok"]:
                raise SystemExit(f"call {i}: no result; the result area shows {t['shows']!r}")
        if calls:
            snaps[f"after {calls} calls"] = {"regions": regions(page), "metrics": page_metrics(cdp, page)}
    names = [name for name, _ in REGIONS] + ["other"]
    for label, snap in snaps.items():
        rows = [[name, *snap["regions"][name].values()] for name in names if snap["regions"][name]["nodes"]]
        rows.append(["total (walked)", *(sum(snap["regions"][n][k] for n in names)
                                         for k in ("nodes", "text", "blank", "svg", "option"))])
        print_table(f"{label}: CDP Nodes {snap['metrics']['dom_nodes']}, JS heap {snap['metrics']['js_heap_mb']} MB",
                    ["region", "nodes", "text", "blank text", "svg", "option"], rows)
    return {"calls": calls, "snapshots": snaps}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.dom_regions", description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=100, help="echo calls before the last count (default 100)")
    args = p.parse_args(argv)
    if not 0 <= args.calls <= 5_000:
        p.error("--calls must be 0..5000")
    emit_json("dom_regions", run(args.calls))


if __name__ == "__main__":
    main()
