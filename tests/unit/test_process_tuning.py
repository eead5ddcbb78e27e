"""What a serving console sets for the whole process once it has started (app/process_tuning.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from app.process_tuning import GEN0_THRESHOLD, tune_for_serving


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_gc")
def test_what_exists_after_start_up_is_frozen_out_of_every_collection_and_young_collections_are_rarer() -> None:
    kept = [[i] for i in range(1000)]  # long-lived objects made during start-up
    tune_for_serving()
    assert gc.get_freeze_count() >= len(kept)
    assert gc.get_threshold()[0] == GEN0_THRESHOLD
    assert gc.get_threshold()[1:] == (10, 10)  # the older generations keep Python's defaults


def test_the_serving_command_compiles_the_templates_and_tunes_the_process_once_it_has_started() -> None:
    import inspect

    from app import serving

    source = inspect.getsource(serving.serve)
    assert source.index("compile_all(") < source.index("tune_for_serving()")  # compiled, then frozen


def test_a_serving_console_compiles_every_template_before_its_first_use() -> None:
    from app.web.render import compile_all, make_env

    env = make_env()
    count = compile_all(env)
    assert count == len(env.list_templates()) > 0
    assert env.cache is not None and len(env.cache) == count  # nothing left to compile on first use
