"""bench.latency_steps reads the probe's stamps into per-step medians (the arithmetic, not the timing)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.latency_steps import fine_medians, read_rows, step_medians


def _row(base: float, flush: bool) -> dict[str, float]:
    row = {"arrive": base, "app": base + 50e-6, "sent": base + 300e-6, "head": base + 900e-6,
           "answer": base + 1000e-6, "written": base + 1040e-6}
    if flush:
        row["flush_start"], row["flush_end"] = base + 310e-6, base + 500e-6
    return row


def test_each_step_is_the_median_span_between_its_two_stamps_in_microseconds() -> None:
    rows = [_row(float(i), flush=i % 2 == 0) for i in range(5)]
    figures = step_medians(rows)
    assert round(figures["arrive->app"]) == 50
    assert round(figures["app->sent"]) == 250
    assert round(figures["sent->head"]) == 600
    assert round(figures["arrive->written"]) == 1040
    assert round(figures["flush_in_wait"]) == 190
    assert round(figures["flush_end->head"]) == 400
    assert figures["flushed_share"] == 3 / 5


def test_a_process_that_never_flushed_in_the_wait_reports_no_flush_figures() -> None:
    assert "flush_in_wait" not in step_medians([_row(0.0, flush=False)])


def test_only_the_latest_rows_of_requests_that_reached_the_target_are_read(tmp_path: Path) -> None:
    page = {"arrive": 0.0, "app": 1e-5, "answer": 2e-5, "written": 3e-5}  # a page or twin: never sent upstream
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([_row(0.0, False), page, _row(1.0, False), _row(2.0, False)]))
    rows = read_rows(path, 2)
    assert [row["arrive"] for row in rows] == [1.0, 2.0]


def test_the_fine_steps_are_the_medians_between_consecutive_layer_stamps_and_skip_those_a_call_lacks() -> None:
    rows = [{"app": 0.0, "checks": 10e-6, "checked": 60e-6, "form": 70e-6, "sent": 300e-6} for _ in range(3)]
    steps = {f"{a}->{b}": round(us) for a, b, us in fine_medians(rows)}
    assert steps == {"app->checks": 10, "checks->checked": 50, "checked->form": 10}
