"""bench.answer_cost cuts captured answers apart and puts them back together (the bytes, not the timing)."""

from __future__ import annotations

import pytest

from bench.answer_cost import _answer_length, _recut

CONSOLE = b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\nx-content-type-options: nosniff\r\n\r\n{\"a\":1}"
DIRECT = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


def test_an_answer_is_as_long_as_its_head_and_its_declared_body() -> None:
    assert _answer_length(CONSOLE) == len(CONSOLE)
    assert _answer_length(DIRECT + b"HTTP/1.1 200 OK") == len(DIRECT)  # a pipelined next answer is not counted


def test_one_answers_body_under_the_others_headers_declares_its_own_length() -> None:
    head, _, _ = CONSOLE.partition(b"\r\n\r\n")
    recut = _recut(head, b"{}")
    assert recut.endswith(b"\r\n\r\n{}") and b"x-content-type-options: nosniff" in recut
    assert recut.lower().count(b"content-length") == 1 and _answer_length(recut) == len(recut)


def test_an_answer_without_a_content_length_is_refused() -> None:
    with pytest.raises(RuntimeError, match="Content-Length"):
        _answer_length(b"HTTP/1.1 200 OK\r\n\r\n{}")
