"""Roots as the owner types them: file URIs or directories, a name after a space, one per line."""

from __future__ import annotations

from app.console.roots import parse_roots


def test_a_directory_is_taken_as_its_file_uri_and_the_words_after_it_as_its_name() -> None:
    assert parse_roots("/home/ada/notes Ada's notes\nfile:///srv/x\n\n") == (
        [{"uri": "file:///home/ada/notes", "name": "Ada's notes"}, {"uri": "file:///srv/x"}], [])


def test_a_root_that_is_no_file_uri_is_refused_and_a_semicolon_splits_only_the_setting() -> None:
    assert parse_roots("https://example.com/x")[1] == ["'https://example.com/x': a root must be a file:// URI"]
    assert parse_roots("file:///a;b") == ([{"uri": "file:///a;b"}], [])
    assert parse_roots("file:///a;file:///b", semicolons=True)[0] == [{"uri": "file:///a"}, {"uri": "file:///b"}]
