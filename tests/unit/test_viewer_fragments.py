"""What a viewer's socket gets of a pushed fragment: everything but the inbox's dialogs."""

from __future__ import annotations

from app.web.render import DIALOGS_END, DIALOGS_START, without_dialogs


def test_a_fragment_with_no_dialogs_is_sent_to_a_viewer_as_it_is() -> None:
    fragment = '<div id="ws-seq" data-seq="4"></div><li id="e-c1">echo</li>'
    assert without_dialogs(fragment) is fragment


def test_every_dialog_block_is_cut_and_what_is_around_them_is_kept_in_order() -> None:
    dialog = f'{DIALOGS_START}<div hx-swap-oob="beforeend:#inbox">asked</div>{DIALOGS_END}'
    assert without_dialogs(f"a{dialog}b{dialog}{dialog}c") == "abc"


def test_a_block_whose_end_mark_is_missing_is_cut_to_the_end_rather_than_shown() -> None:
    assert without_dialogs(f"kept{DIALOGS_START}<form>typed</form>") == "kept"
