"""Compressed answers decoded in bounded pieces, whatever the target's scheme.

Every bound on what a target sends (`max_stream_bytes`, `max_message_bytes`) counts decoded bytes as they are
yielded, so it holds only if each yielded piece is small. httpx's decoders turn a network read whole, and a
gzip of zeros packs about a thousand bytes into one: one read of 128 KiB became one 128 MiB allocation before
any bound could count it. Here gzip and deflate (what the shared client advertises) are read with zlib's
`max_length`, at most `DECODED_PIECE` bytes at a time, exactly as httpx's GZipDecoder and DeflateDecoder read
them; anything else is left to httpx.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator

import httpx

DECODED_PIECE = 64 * 1024  # the most one decoded piece of a compressed body holds


class Inflate:
    """gzip or deflate, as httpx's GZipDecoder and DeflateDecoder read them, in pieces of at most `piece` bytes.

    zlib's `max_length` stops the output there and keeps the rest of the input (`unconsumed_tail`); the next
    piece is asked for only when the reader takes this one, so the stream's bound sees every piece.
    """

    def __init__(self, encoding: str, piece: int = DECODED_PIECE) -> None:
        self._deflate = encoding == "deflate"
        self._piece = piece
        self._first = True  # deflate: a body that is not zlib-wrapped is tried again as raw deflate, as httpx does
        self._obj = zlib.decompressobj(zlib.MAX_WBITS if self._deflate else zlib.MAX_WBITS | 16)

    def pieces(self, data: bytes) -> Iterator[bytes]:
        while True:
            try:
                out = self._obj.decompress(data, self._piece)
            except zlib.error as exc:
                if self._deflate and self._first:
                    self._first = False
                    self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise httpx.DecodingError(str(exc)) from exc
            self._first = False
            data = self._obj.unconsumed_tail
            if out:
                yield out
            if not data and len(out) < self._piece:  # a full piece may leave output inside zlib: ask again
                return

    def flush(self) -> bytes:
        try:
            return self._obj.flush()
        except zlib.error as exc:
            raise httpx.DecodingError(str(exc)) from exc


def inflater(headers: httpx.Headers) -> Inflate | None:
    """An `Inflate` for a body in gzip or deflate alone; None for identity or anything else (httpx decodes it)."""
    named = [v.strip().lower() for v in headers.get_list("content-encoding", split_commas=True)
             if v.strip().lower() not in ("", "identity")]
    return Inflate(named[0]) if len(named) == 1 and named[0] in ("gzip", "deflate") else None


def body_pieces(response: httpx.Response) -> AsyncIterator[bytes]:
    """A streamed answer's decoded body, in bounded pieces: what every reader of a target's answer iterates.

    An answer in gzip or deflate is read raw and inflated here; anything else is its own `aiter_bytes()`."""
    inflate = inflater(response.headers)
    return _inflated(response, inflate) if inflate is not None else response.aiter_bytes()


async def _inflated(response: httpx.Response, inflate: Inflate) -> AsyncIterator[bytes]:
    async for raw in response.aiter_raw():
        for piece in inflate.pieces(raw):
            yield piece
    tail = inflate.flush()
    if tail:
        yield tail
