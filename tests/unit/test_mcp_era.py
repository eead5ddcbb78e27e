"""The era seam: the 2026-07-28 strategy stamps what the client always stamped and refuses server requests."""

from __future__ import annotations

from app.mcp.era import META_CAPS, META_INFO, META_LOG_LEVEL, META_VERSION, ModernEra, ServerAnswer
from app.mcp.jsonrpc import parse_frame


def test_modern_era_stamps_version_info_and_capabilities_on_every_request() -> None:
    meta = ModernEra().meta({"name": "c"}, {"roots": {}}, progress_token="p1", log_level="debug")
    assert meta == {META_VERSION: "2026-07-28", META_INFO: {"name": "c"}, META_CAPS: {"roots": {}},
                    "progressToken": "p1", META_LOG_LEVEL: "debug"}


def test_modern_era_leaves_out_progress_token_and_log_level_when_not_asked() -> None:
    meta = ModernEra().meta({}, {}, progress_token=None, log_level=None)
    assert "progressToken" not in meta and META_LOG_LEVEL not in meta


def test_modern_era_headers_name_the_method_and_the_tool() -> None:
    headers = ModernEra().headers("tools/call", {"name": "echo", "arguments": {}}, None)
    assert headers["MCP-Protocol-Version"] == "2026-07-28"
    assert headers["Mcp-Method"] == "tools/call" and headers["Mcp-Name"] == "echo"


def test_modern_era_flags_a_server_request_and_asks_nobody() -> None:
    frame = parse_frame('{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}')
    verdict = ModernEra().on_server_request(frame)
    assert not verdict.ask_caller and verdict.refusal is None
    assert verdict.warning is not None and "sampling/createMessage" in verdict.warning


def test_a_server_answer_becomes_a_response_or_an_error_with_the_request_id() -> None:
    assert ServerAnswer(result={"roots": []}).message(7) == {"jsonrpc": "2.0", "id": 7, "result": {"roots": []}}
    assert ServerAnswer(error={"code": -1, "message": "no"}).message("a")["error"]["code"] == -1
