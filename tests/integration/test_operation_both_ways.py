"""One MRTR flow, two drivers of the same machine (app/mcp/operation.py): the console and `mcp-console call` send
the same rounds to the same server (each retry the original params, the answers keyed as asked and the state the
last round returned) and get the same result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration.conftest import JSON, REPO_ROOT, Console, child_env, eventually

ANSWERS = [{"action": "accept", "content": {"name": "Ada"}}, {"action": "accept", "content": {"confirm": True}}]


def rounds_sent(requests: list[dict[str, Any]]) -> list[tuple[list[str], bool]]:
    """What each round's request carried besides the original params: its answers' keys, whether it echoed a state."""
    return [(sorted(p.get("inputResponses", {})), "requestState" in p) for p in requests]


async def test_the_console_and_the_cli_send_the_same_rounds_for_one_mrtr_flow(
        console: Console, demo_url: str, tmp_path: Path) -> None:
    sid = await console.create(kind="http", url=demo_url)

    async def listed() -> bool:
        return bool((await console.http.get(f"/sessions/{sid}.json")).json()["lists"]["tools"])

    await eventually(listed, what="the tools to be listed")
    reply = (await console.http.post(f"/sessions/{sid}/tools/call", data={"tool": "two_step"}, headers=JSON)).json()
    op = reply["operation"]
    keys: list[str] = []
    for answer in ANSWERS:
        [key] = op["pending"]
        keys.append(key)
        form = {"key": key, "action": answer["action"], **{f"arg.{k}": json.dumps(v) if isinstance(v, bool) else v
                                                             for k, v in answer["content"].items()}}
        answered = await console.http.post(f"/sessions/{sid}/operations/{op['op']}/answer", data=form, headers=JSON)
        assert answered.status_code == 200, answered.text
        op = (await console.http.get(f"/sessions/{sid}/operations/{op['op']}.json")).json()
    assert op["status"] == "complete"
    console_sent = []
    for rnd in op["rounds"]:
        entry = (await console.http.get(f"/sessions/{sid}/entries/{rnd['key']}.json")).json()
        [out] = [w for w in entry["wire"] if w["direction"] == "out" and '"method"' in w["raw"]]
        console_sent.append(json.loads(out["raw"])["params"])

    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(dict(zip(keys, ANSWERS, strict=True))))
    har = tmp_path / "call.har"
    done = subprocess.run([sys.executable, "-m", "app", "call", demo_url, "two_step", "--elicit", str(answers),
                           "--har", str(har)], cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    entries = json.loads(har.read_text())["log"]["entries"]
    calls = [json.loads(e["request"]["postData"]["text"])["params"] for e in entries
             if e["_mcp"]["method"] == "tools/call"]
    assert rounds_sent(calls) == rounds_sent(console_sent) == [([], False), ([keys[0]], True), ([keys[1]], True)]
    assert all(c["name"] == "two_step" for c in calls)
    cli_result = json.loads(done.stdout)["result"]
    assert cli_result["content"] == op["final"]["result"]["content"]
