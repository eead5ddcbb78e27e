"""The bulk-job scope raises the young generation's threshold while any job runs and restores it after."""

from __future__ import annotations

import gc

from app.console import gc_scope


def test_the_threshold_is_raised_inside_the_scope_and_restored_after() -> None:
    before = gc.get_threshold()
    with gc_scope.fewer_collections():
        assert gc.get_threshold()[0] == gc_scope.BULK_THRESHOLD
        assert gc.get_threshold()[1:] == before[1:]
    assert gc.get_threshold() == before


def test_an_overlapping_scope_keeps_the_threshold_until_the_last_one_ends() -> None:
    before = gc.get_threshold()
    first, second = gc_scope.fewer_collections(), gc_scope.fewer_collections()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold()[0] == gc_scope.BULK_THRESHOLD  # the second job still runs
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before


def test_the_threshold_is_restored_when_the_job_fails() -> None:
    before = gc.get_threshold()
    try:
        with gc_scope.fewer_collections():
            raise RuntimeError("the file broke off")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before
