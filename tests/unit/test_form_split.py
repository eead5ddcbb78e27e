"""The urlencoded form fast path splits a body exactly as Starlette's parser does, limits and answers included."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fastapi import HTTPException
from starlette.datastructures import Headers
from starlette.formparsers import FormParser, MultiPartException

from app.web.deps import FORM_MAX_FIELD_BYTES, FORM_MAX_FIELDS, split_urlencoded

BODIES = [b"tool=echo&arg.text=hi", b"a=1;b=2", b"a&b=&=c", b"a=1&&b=2", b"x=%E2%9C%93+y", b"x=\xe2\x9c\x93",
          b"a=b=c", b"", b"&", b"a=%zz", b"a+b=c+d", b"=", b"a=1&a=2", b"%3D=%26&json=%7B%22a%22%3A1%7D",
          b"arg.text=" + b"x" * 5000, b"a=" + b"%00" * 10]


async def starlette_split(body: bytes) -> list[tuple[str, str]]:
    async def stream() -> AsyncIterator[bytes]:
        yield body

    form = await FormParser(Headers({}), stream()).parse()
    return [(k, v) for k, v in form.multi_items() if isinstance(v, str)]


@pytest.mark.parametrize("body", BODIES)
async def test_a_urlencoded_body_splits_as_starlette_splits_it(body: bytes) -> None:
    assert split_urlencoded(body) == await starlette_split(body)


@pytest.mark.parametrize("body", [b"&".join(b"f=1" for _ in range(FORM_MAX_FIELDS + 1)),
                                  b"big=" + b"x" * FORM_MAX_FIELD_BYTES])
async def test_a_form_past_starlettes_limits_gets_its_400_and_words(body: bytes) -> None:
    with pytest.raises(MultiPartException) as theirs:
        await starlette_split(body)
    with pytest.raises(HTTPException) as ours:
        split_urlencoded(body)
    assert ours.value.status_code == 400 and ours.value.detail == theirs.value.message
