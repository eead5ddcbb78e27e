"""The connect machine (app/mcp/connecting.py) without sockets: what it asks for, given what it is told."""

from __future__ import annotations

from typing import Any

import pytest

from app.mcp.client import Reply
from app.mcp.connecting import (
    Connected,
    ConnectMachine,
    Failed,
    Initialize,
    NotifyInitialized,
    Probe,
    StartClient,
    discover_shape,
)
from app.mcp.errors import ConnectFailed, ProcessExited, RequestTimedOut, RpcError, StreamLost

INFO = {"name": "t", "version": "1"}
CAPS = {"elicitation": {"form": {}}, "roots": {}}
DISCOVER = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
INIT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "old"}}


def reply(method: str, result: dict[str, Any] | None = None, error: Exception | None = None) -> Reply:
    return Reply(key="c1x1", id=1, method=method, params={}, sent=0.0, result=result, error=error)  # type: ignore[arg-type]


def machine(chosen: str) -> ConnectMachine:
    return ConnectMachine(chosen, INFO, CAPS)


@pytest.mark.parametrize("chosen", ["auto", "modern"])
def test_a_server_that_answers_discover_is_spoken_to_in_2026_07_28(chosen: str) -> None:
    m = machine(chosen)
    assert m.start() == StartClient("modern")
    assert m.started() == Probe()
    done = m.probed(reply("server/discover", DISCOVER))
    assert isinstance(done, Connected) and done.era == "modern" and done.protocol_version == "2026-07-28"
    assert done.discovered == DISCOVER and done.probe == "c1x1" and done.chosen == chosen
    assert done.reason == ("server/discover answered" if chosen == "auto" else "forced on this target")
    assert m.take_notes() == []


def test_auto_falls_back_to_initialize_on_the_same_transport_when_discover_is_not_served() -> None:
    m = machine("auto")
    m.start()
    m.started()
    refused = RpcError(-32601, "Method not found", http_status=None)
    step = m.probed(reply("server/discover", error=refused))
    assert step == StartClient("legacy", keep_transport=True)
    notes = m.take_notes()
    assert [n.signal for n in notes] == ["era_probe"] and "falling back to 2025-11-25" in notes[0].message
    init = m.started()
    assert isinstance(init, Initialize) and init.params["protocolVersion"] == "2025-11-25"
    assert init.params["clientInfo"] == INFO and init.params["capabilities"]["roots"] == {"listChanged": True}
    assert m.initialized(reply("initialize", INIT)) == NotifyInitialized("2025-06-18")
    done = m.notified()
    assert isinstance(done, Connected) and done.era == "legacy" and done.protocol_version == "2025-06-18"
    assert done.probe == "c1x1" and done.reason.startswith("probe refused: server/discover not served (JSON-RPC")
    assert done.negotiated is not None and done.discovered == discover_shape(done.negotiated)
    assert done.discovered["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "old"}


def test_a_stdio_server_that_died_of_the_probe_gets_a_fresh_process_for_the_handshake() -> None:
    m = machine("auto")
    m.start()
    m.started()
    step = m.probed(reply("server/discover", error=ProcessExited("exited with code 1")), transport_alive=False)
    assert step == StartClient("legacy", keep_transport=False)
    assert isinstance(m.started(), Initialize)


@pytest.mark.parametrize("error", [RequestTimedOut("no answer in 1 s"), ConnectFailed("refused"),
                                   RpcError(-32603, "internal", http_status=None)],
                         ids=["timeout", "unreachable", "unrelated error"])
def test_auto_does_not_take_an_unrelated_probe_failure_for_an_older_server(error: Exception) -> None:
    m = machine("auto")
    m.start()
    m.started()
    done = m.probed(reply("server/discover", error=error))
    assert isinstance(done, Failed) and done.message.startswith("server/discover failed: ")
    assert m.take_notes() == []


def test_modern_never_falls_back_even_when_discover_is_not_served() -> None:
    m = machine("modern")
    m.start()
    m.started()
    done = m.probed(reply("server/discover", error=RpcError(-32601, "Method not found", http_status=404)))
    assert isinstance(done, Failed) and "server/discover failed" in done.message


@pytest.mark.parametrize("chosen", ["legacy", "sse-2024"])
def test_legacy_and_sse_2024_go_straight_to_initialize_without_a_probe(chosen: str) -> None:
    m = machine(chosen)
    assert m.start() == StartClient("legacy")
    assert isinstance(m.started(), Initialize)
    m.initialized(reply("initialize", {**INIT, "protocolVersion": "2025-11-25"}))
    done = m.notified()
    assert isinstance(done, Connected) and done.probe is None
    assert done.reason == "forced on this target; initialize: 2025-11-25 as offered"


def test_a_handshake_that_settles_nothing_fails_with_what_came_back() -> None:
    m = machine("legacy")
    m.start()
    m.started()
    done = m.initialized(reply("initialize", {"protocolVersion": "1999-01-01"}))
    assert isinstance(done, Failed) and "'1999-01-01'" in done.message
    m2 = machine("legacy")
    m2.start()
    m2.started()
    m2.initialized(reply("initialize", INIT))
    assert m2.notified("broken pipe") == Failed("notifications/initialized failed: broken pipe")


def test_a_client_that_cannot_start_fails_the_connect_with_its_reason() -> None:
    m = machine("auto")
    m.start()
    assert m.started("could not start the process: no such file") == Failed(
        "could not start the process: no such file")


def test_an_unknown_era_is_refused_when_the_machine_is_made() -> None:
    with pytest.raises(ValueError, match="not one of"):
        machine("2024")


def _unsupported(*supported: str) -> RpcError:
    return RpcError(-32022, "Unsupported protocol version", data={"supported": list(supported),
                                                                    "requested": "2026-07-28"}, http_status=400)


@pytest.mark.parametrize("chosen", ["auto", "modern"])
def test_an_unsupported_version_refusal_listing_ours_sends_the_probe_again_once(chosen: str) -> None:
    """SEP-2575: a client retries with a version the server supports (the conformance runner's request-metadata
    scenario refuses the first request of every client so)."""
    m = machine(chosen)
    m.start()
    m.started()
    assert m.probed(reply("server/discover", error=_unsupported("2026-07-28"))) == Probe()
    assert "asking again with 2026-07-28" in m.take_notes()[0].message
    done = m.probed(reply("server/discover", DISCOVER))
    assert isinstance(done, Connected) and done.era == "modern" and "after the server refused" in done.reason
    m2 = machine(chosen)
    m2.start()
    m2.started()
    m2.probed(reply("server/discover", error=_unsupported("2026-07-28")))
    again = m2.probed(reply("server/discover", error=_unsupported("2026-07-28")))
    assert isinstance(again, Failed) and "the server speaks 2026-07-28" in again.message  # once, not forever


def test_auto_takes_the_older_revision_an_unsupported_version_refusal_lists_and_modern_does_not() -> None:
    m = machine("auto")
    m.start()
    m.started()
    assert m.probed(reply("server/discover", error=_unsupported("2025-06-18"))) == StartClient(
        "legacy", keep_transport=True)
    m2 = machine("modern")
    m2.start()
    m2.started()
    done = m2.probed(reply("server/discover", error=_unsupported("2025-06-18")))
    assert isinstance(done, Failed) and "the server speaks 2025-06-18" in done.message


def test_a_broken_http_answer_stream_is_no_sign_of_an_older_server_but_a_stdio_one_is() -> None:
    """A head too long, a reset: an HTTP probe whose stream broke was taken for a stdio server breaking off and
    fell back to initialize, saying "stdio error" of an HTTP target."""
    broke = reply("server/discover", error=StreamLost("the response stream broke: RemoteProtocolError"))
    http = ConnectMachine("auto", INFO, CAPS, stdio=False)
    http.start()
    http.started()
    assert isinstance(http.probed(broke), Failed)
    stdio = ConnectMachine("auto", INFO, CAPS, stdio=True)
    stdio.start()
    stdio.started()
    assert stdio.probed(broke, transport_alive=False) == StartClient("legacy", keep_transport=False)
