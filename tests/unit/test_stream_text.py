"""A stream's bytes as text (StreamText): what it says of U+FFFD, the target's own or a replacement."""

from __future__ import annotations

from app.mcp.transport import StreamText

OWN = "\ufffd".encode()  # the target's own U+FFFD: EF BF BD


def _said(pieces: list[bytes], charset: str | None = None) -> tuple[str, list[bool]]:
    stream = StreamText(charset)
    read = [stream.decode(piece) for piece in pieces] + [stream.decode(b"", final=True)]
    return "".join(text for text, _ in read), [was for _, was in read]


def test_the_targets_own_replacement_character_is_no_replacement_however_it_is_split() -> None:
    for pieces in ([OWN], [OWN[:1], OWN[1:]], [OWN[:2], OWN[2:]], [OWN[:1], OWN[1:2], OWN[2:]],
                   [b"a" + OWN[:1], OWN[1:2], OWN[2:] + b"b"]):
        text, said = _said(pieces)
        assert "\ufffd" in text and not any(said), pieces


def test_a_byte_that_is_not_utf8_is_said_in_the_piece_that_shows_it() -> None:
    text, said = _said([b"caf\xe9 ", b"ok"])
    assert text == "caf\ufffd ok" and said == [True, False, False]


def test_a_character_the_stream_ends_inside_is_said_at_its_end() -> None:
    text, said = _said([b"caf\xc3"])
    assert text == "caf\ufffd" and said == [False, True]


def test_a_character_split_across_pieces_is_kept_whole() -> None:
    text, said = _said([b"caf\xc3", b"\xa9"])
    assert text == "café" and not any(said)


def test_a_charset_that_is_no_text_encoding_is_read_as_utf8() -> None:
    stream = StreamText("base64")
    assert stream.codec == "utf-8" and stream.decode(b"caf\xe9!") == ("caf\ufffd!", True)
