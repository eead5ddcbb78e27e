"""Shared plumbing for the demo server: per-server state, hand-rolled MRTR helpers, media bytes.

Most interactive features here drive the 2026-07-28 multi-round-trip flow (MRTR) by hand
instead of through the SDK's `Resolve(...)` resolvers. The resolver path validates every
answer through a pydantic model, which silently coerces values (`"7"` becomes `7`); a
debugging console needs a server that reports back exactly what the client sent, with its
JSON types intact. So these helpers read `inputResponses` from the raw request params and
build `InputRequiredResult`s directly.

`requestState` is sealed and verified by the SDK's `RequestStateBoundary` middleware
(AES-GCM, bound to method + name/uri + arguments), so by the time a handler sees it the
plaintext is one this process minted; we store a small JSON object in it.
"""

from __future__ import annotations

import base64
import json
import math
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp.shared.exceptions import MCPError
from mcp_types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolResult,
    ClientCapabilities,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    InputRequest,
    InputRequiredResult,
    ListRootsRequest,
    TextContent,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

DEMO_VERSION = "0.1.0"

CapabilityNeed = Literal["form", "url", "sampling", "roots"]


@dataclass
class DemoState:
    """Mutable state of one demo server instance.

    Kept per `build_server()` call (not module-global) so tests that build several
    servers in one process do not see each other's counters or cancellations.
    """

    counters: dict[str, int] = field(default_factory=dict)
    cancellations: list[dict[str, Any]] = field(default_factory=list)
    runtime_tools: list[str] = field(default_factory=list)


def is_modern(protocol_version: str | None) -> bool:
    """True when the request arrived on the 2026-07-28 (MRTR-capable) wire."""
    return protocol_version in MODERN_PROTOCOL_VERSIONS


def legacy_refusal(what: str) -> CallToolResult:
    """Tool-level error for MRTR tools called over a handshake-era (2025-xx) connection.

    An `InputRequiredResult` cannot be expressed on the legacy wire, and the SDK would
    turn one into an opaque internal error; an explicit isError result is clearer.
    """
    return CallToolResult(
        content=[TextContent(text=f"{what} needs the 2026-07-28 protocol (MRTR); this request used a legacy version")],
        is_error=True,
    )


@dataclass(frozen=True)
class Round:
    """What the client sent back on this MRTR round, read from the raw wire params."""

    responses: Mapping[str, Any]
    """`inputResponses` exactly as decoded from JSON (no model coercion)."""
    state: Mapping[str, Any] | None
    """Our decoded `requestState`, or None on a first round / foreign state."""

    def answer(self, tool: str, key: str) -> Any | None:
        """The raw response for `key`, but only if our state says we asked it for `tool`.

        Answers that arrive without our state (a client that forgot to echo
        `requestState`, or invented keys) are ignored and the question is asked again:
        that makes such client bugs visible as a loop instead of silently passing.
        """
        if self.state is None or self.state.get("tool") != tool:
            return None
        if key not in self.state.get("asked", []):
            return None
        return self.responses.get(key)

    @property
    def number(self) -> int:
        """1-based index of the round the client is answering (0 on the first call)."""
        if self.state is None:
            return 0
        value = self.state.get("round", 0)
        return value if isinstance(value, int) else 0


def read_round(params: Mapping[str, Any] | None) -> Round:
    """Extract `inputResponses` and our `requestState` from raw request params."""
    raw = params or {}
    responses = raw.get("inputResponses")
    state_text = raw.get("requestState")
    state: Mapping[str, Any] | None = None
    if isinstance(state_text, str):
        try:
            decoded = json.loads(state_text)
        except ValueError:
            decoded = None
        # Resolver-driven handlers (two_step) use their own state shape; ignore it here.
        if isinstance(decoded, dict) and "tool" in decoded:
            state = decoded
    return Round(responses=responses if isinstance(responses, dict) else {}, state=state)


def ask(tool: str, requests: Mapping[str, InputRequest], round_no: int, **extra: Any) -> InputRequiredResult:
    """Build an `input_required` result whose state records which keys were asked."""
    state = {"tool": tool, "round": round_no, "asked": sorted(requests), **extra}
    return InputRequiredResult(input_requests=dict(requests), request_state=json.dumps(state, sort_keys=True))


def state_only(tool: str, round_no: int, **extra: Any) -> InputRequiredResult:
    """An `input_required` result with ONLY `requestState` (the spec's load-shedding shape)."""
    state = {"tool": tool, "round": round_no, "asked": [], **extra}
    return InputRequiredResult(request_state=json.dumps(state, sort_keys=True))


def form_request(message: str, schema: dict[str, Any]) -> ElicitRequest:
    """A form-mode `elicitation/create` input request with a hand-written schema."""
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def url_request(message: str, url: str) -> ElicitRequest:
    """A URL-mode `elicitation/create` input request (no elicitationId on 2026-07-28)."""
    return ElicitRequest(params=ElicitRequestURLParams(message=message, url=url))


def roots_request() -> ListRootsRequest:
    """A bare `roots/list` input request (`{"method": "roots/list"}` on the wire)."""
    return ListRootsRequest()


def echo_result(value: Any) -> CallToolResult:
    """Echo a received JSON value as sorted JSON text plus identical structuredContent."""
    return CallToolResult(
        content=[TextContent(text=json.dumps(value, sort_keys=True))],
        structured_content=value,
    )


def require_capability(caps: ClientCapabilities | None, *needs: CapabilityNeed) -> None:
    """Raise -32021 (MissingRequiredClientCapability) unless the request declared `needs`.

    The spec forbids putting a request type in `inputRequests` the client did not declare;
    hand-rolled MRTR bypasses the SDK's own check, so we repeat it here with the same
    error shape (`data.requiredCapabilities`).
    """
    missing: dict[str, Any] = {}
    elicitation = caps.elicitation if caps is not None else None
    for need in needs:
        if need == "form":
            # A bare `elicitation: {}` means form-only support, per the spec.
            if elicitation is None or (elicitation.form is None and elicitation.url is not None):
                missing.setdefault("elicitation", {})["form"] = {}
        elif need == "url":
            if elicitation is None or elicitation.url is None:
                missing.setdefault("elicitation", {})["url"] = {}
        elif need == "sampling":
            if caps is None or caps.sampling is None:
                missing["sampling"] = {}
        elif caps is None or caps.roots is None:
            missing["roots"] = {}
    if missing:
        names = ", ".join(sorted(missing))
        raise MCPError(
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"Server requires the {names} capability for this request",
            data={"requiredCapabilities": missing},
        )


# --- media generated in code (no binary files in the repo) -------------------------------


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def tiny_png(size: int = 16) -> bytes:
    """A valid `size`x`size` RGB PNG (a diagonal gradient), built with zlib + struct."""
    rows = bytearray()
    for y in range(size):
        rows.append(0)  # filter type "None" for every scanline
        for x in range(size):
            rows += bytes(((x * 255) // (size - 1), (y * 255) // (size - 1), 160))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit truecolour
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(bytes(rows), 9))
        + _png_chunk(b"IEND", b"")
    )


def tiny_wav(seconds: float = 0.25, freq_hz: float = 440.0, rate: int = 8000) -> bytes:
    """A valid mono 16-bit PCM WAV containing a short sine tone."""
    frames = int(seconds * rate)
    samples = b"".join(
        struct.pack("<h", int(12000 * math.sin(2 * math.pi * freq_hz * i / rate))) for i in range(frames)
    )
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
