"""Two tabs acting on one session through the demo server: a roots request answered in one tab (an operator's,
say) while the owner changes the roots in another sends only what the answering tab was shown."""

from __future__ import annotations

import json

from tests.integration.conftest import JSON, Console

SHOWN = [{"uri": "file:///tmp/shown", "name": "Shown"}]
CHANGED = [{"uri": "file:///tmp/changed-meanwhile"}]


async def test_roots_changed_after_a_roots_dialog_was_shown_are_not_sent_under_its_send_these_roots(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    await console.http.post(f"/sessions/{sid}/roots", data={"roots": "file:///tmp/shown Shown"}, headers=JSON)
    op = (await console.call_tool(sid, "list_roots"))["operation"]
    assert op["status"] == "awaiting_input", op
    # Another tab (the owner's) changes the roots while this dialog shows the old ones.
    changed = await console.http.post(f"/sessions/{sid}/roots", data={"roots": "file:///tmp/changed-meanwhile"},
                                      headers=JSON)
    assert changed.json()["roots"] == CHANGED, changed.text

    form = {"key": "roots", "key_json": '"roots"', "action": "accept", "round": "1",
            "roots_shown": json.dumps(SHOWN)}  # what the dialog previewed, as its form posts it
    answered = await console.http.post(f"/sessions/{sid}/operations/{op['op']}/answer", data=form, headers=JSON)
    assert answered.status_code == 200, answered.text
    state = answered.json()
    assert state["status"] == "awaiting_input" and len(state["rounds"]) == 1, state
    assert "changed" in json.dumps(state["errors"].get("roots")), state["errors"]

    # Sent again from the dialog as it is now shown, the current roots go.
    form["roots_shown"] = json.dumps(CHANGED)
    done = (await console.http.post(f"/sessions/{sid}/operations/{op['op']}/answer", data=form, headers=JSON)).json()
    assert done["status"] == "complete", done
    assert done["final"]["result"]["structuredContent"] == {"roots": CHANGED}, done["final"]["result"]
