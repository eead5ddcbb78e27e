"""Attack: a server whose discover answer (or prompt list) has the right keys and the wrong shapes.

The session's page reads the answer's capabilities and versions to draw its header and its listen form: a
capability that is a string (`"tools": "yes"`) or versions that are a number made the page of that session,
and its JSON twin, fail for as long as the session was kept, for the owner and every link holder alike. The
answer stays on the timeline as the server sent it; the page shows what of it has the shape it needs.
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.integration.conftest import Console

# Answers discover with whatever RESULT says (the test writes it), and every other request with an empty result.
SERVER = textwrap.dedent('''
    import json, sys
    RESULT = json.loads(sys.argv[1])
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        result = RESULT if msg.get("method") == "server/discover" else {}
        if msg.get("method") == "prompts/list":
            result = {"prompts": [{"name": "n", "arguments": 7}, {"name": "s", "arguments": ["x", 5, {"name": 1}]}]}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\\n")
        sys.stdout.flush()
''')

SHAPES = {
    "a capability that is a string": {"capabilities": {"tools": "yes", "prompts": 1, "resources": [1]}},
    "versions that are a number": {"supportedVersions": 7, "capabilities": {}},
    "versions of objects": {"supportedVersions": [{"v": 1}], "capabilities": {}},
    "capabilities that are a list": {"supportedVersions": ["2026-07-28"], "capabilities": ["tools"]},
    "server info that is a string": {"supportedVersions": ["2026-07-28"], "capabilities": {}, "serverInfo": "x"},
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_a_discover_answer_of_the_wrong_shapes_leaves_the_sessions_page_and_json_working(
        console: Console, tmp_path: Path, shape: str) -> None:
    script = tmp_path / "shapes_server.py"
    script.write_text(SERVER)
    result = {"supportedVersions": ["2026-07-28"], **SHAPES[shape]}
    command = shlex.join([sys.executable, str(script), json.dumps(result)])
    sid = await console.create(kind="stdio", command=command)
    s = await console.settled(sid)
    assert s["status"] in ("connected", "failed"), s["status_message"]
    for path in (f"/sessions/{sid}", f"/sessions/{sid}.json", "/"):
        response = await console.http.get(path)
        assert response.status_code == 200, (path, response.text[:300])


async def test_a_prompt_whose_arguments_are_not_a_list_of_objects_leaves_the_page_and_prompts_get_working(
        console: Console, tmp_path: Path) -> None:
    # "arguments": 7 made the session's page raise (the prompt form iterates them), and a prompts/get of it
    # answered 500; a string among the arguments, the same in prompts/get.
    script = tmp_path / "shapes_server.py"
    script.write_text(SERVER)
    result = {"supportedVersions": ["2026-07-28"], "capabilities": {"prompts": {}}}
    sid = await console.create(kind="stdio", command=shlex.join([sys.executable, str(script), json.dumps(result)]))
    s = await console.settled(sid)
    assert s["status"] == "connected", s["status_message"]
    assert (await console.http.get(f"/sessions/{sid}")).status_code == 200
    for name in ("n", "s"):
        response = await console.http.post(f"/sessions/{sid}/prompts/get", data={"prompt": name},
                                           headers={"Accept": "application/json"})
        assert response.status_code == 200, response.text[:300]
