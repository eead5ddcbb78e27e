"""The console's config import and export over its routes: a preview with secrets masked, sessions created but
not started (a stdio server starts on Connect), and `mcpServers` downloads that keep an entry's unknown fields."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from tests.integration.conftest import JSON, REPO_ROOT, eventually

if TYPE_CHECKING:
    from tests.integration.conftest import Console

SECRET = "sk-literal-4242"
DEMO_STDIO = {"command": sys.executable, "args": ["-m", "app.demo", "--stdio"], "cwd": str(REPO_ROOT),
              "env": {"DEMO_API_KEY": SECRET, "PLAIN": "shown"}, "disabled": False, "x-team": {"owner": "ops"}}


async def preview(console: Console, text: str) -> dict[str, Any]:
    response = await console.http.post("/configs/preview", data={"text": text}, headers=JSON)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


async def create(console: Console, text: str, servers: list[str], **form: str) -> dict[str, Any]:
    response = await console.http.post("/configs/create", data={"text": text, "server": servers, **form},
                                       headers=JSON)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


async def test_the_preview_names_each_server_with_its_secret_values_masked(console: Console) -> None:
    text = json.dumps({"mcpServers": {"demo": DEMO_STDIO, "ws": {"type": "websocket", "url": "ws://x"}}})
    data = await preview(console, text)
    assert data["shape"] == "mcpServers"
    demo, ws = data["servers"]
    assert demo["kind"] == "stdio" and "DEMO_API_KEY=••••••" in demo["target"] and "PLAIN=shown" in demo["target"]
    assert demo["env"] == [{"name": "DEMO_API_KEY", "secret": True}, {"name": "PLAIN", "secret": False}]
    assert demo["unknown"] == ["x-team"] and demo["ignored"] == ["disabled"] and demo["ok"]
    assert ws["ok"] is False and "type 'websocket' not understood" in ws["problems"][0]
    assert SECRET not in json.dumps(data)
    page = await console.http.post("/configs/preview", data={"text": text})
    table = page.text.split('<table class="config-servers', 1)[1]
    assert SECRET not in table and "secret, masked" in table


async def test_a_bad_config_is_refused_with_what_is_wrong(console: Console) -> None:
    response = await console.http.post("/configs/preview", data={"text": '{"mcpServers": {}, "mcp_servers": {}}'},
                                       headers=JSON)
    assert response.status_code == 400 and "both mcpServers and mcp_servers" in response.text


async def test_an_imported_stdio_server_starts_only_when_the_owner_clicks_connect(console: Console) -> None:
    text = json.dumps({"mcpServers": {"demo": DEMO_STDIO}})
    created = (await create(console, text, ["demo"], connect_http="1"))["created"]
    session_id = created[0]["id"]
    s = await console.session(session_id)
    assert s["status"] == "new" and s["name"] == "demo"
    assert not any("started pid" in json.dumps(e) for e in s["timeline"])
    page = await console.http.get(f"/sessions/{session_id}")
    assert f'action="/sessions/{session_id}/reconnect"><button type="submit">Connect</button>' in page.text
    response = await console.http.post(f"/sessions/{session_id}/reconnect")
    assert response.status_code == 303
    settled = await console.settled(session_id)
    assert settled["status"] == "connected", settled["status_message"]


async def test_a_session_exports_as_mcp_servers_keeping_unknown_fields_and_masking_secrets(console: Console) -> None:
    text = json.dumps({"mcpServers": {"demo": DEMO_STDIO}})
    session_id = (await create(console, text, ["demo"]))["created"][0]["id"]
    masked = (await console.http.get(f"/sessions/{session_id}/config.json")).json()
    assert masked == {"mcpServers": {"demo": {**DEMO_STDIO, "env": {"DEMO_API_KEY": "••••••", "PLAIN": "shown"}}}}
    revealed = await console.http.get(f"/sessions/{session_id}/config.json?secrets=1")
    assert revealed.json() == {"mcpServers": {"demo": DEMO_STDIO}}
    assert "with-secrets" in revealed.headers["content-disposition"]
    everything = (await console.http.get("/configs/export.json")).json()
    assert list(everything["mcpServers"]) == ["demo"] and SECRET not in json.dumps(everything)


async def test_a_vs_code_password_input_becomes_a_secret_header_and_http_connects_when_asked(
        console: Console, demo_url: str) -> None:
    text = json.dumps({"inputs": [{"type": "promptString", "id": "key", "password": True}],
                       "servers": {"demo": {"type": "http", "url": demo_url,
                                            "headers": {"X-Service": "${input:key}"}}}})
    data = await preview(console, text)
    assert data["inputs"] == [{"id": "key", "description": "", "password": True, "default": ""}]
    assert data["servers"][0]["inputs"] == ["key"]
    skipped = await console.http.post("/configs/create", data={"text": text, "server": ["demo"]}, headers=JSON)
    assert skipped.status_code == 400 and "no value for ${input:key}" in skipped.text
    created = await create(console, text, ["demo"], connect_http="1", **{"input:key": "vs-secret-1"})
    session_id = created["created"][0]["id"]
    s = await console.settled(session_id)
    assert s["status"] == "connected", s["status_message"]

    async def header_masked() -> bool | None:
        shown = json.dumps(await console.session(session_id))
        return True if "X-Service" in shown and "vs-secret-1" not in shown else None

    await eventually(header_masked, what="the session to show the header masked")
    export = (await console.http.get(f"/sessions/{session_id}/config.json")).json()["mcpServers"]["demo"]
    assert export["headers"] == {"X-Service": "••••••"}


async def test_an_inspector_oauth_object_becomes_the_sessions_oauth_settings(console: Console, demo_url: str) -> None:
    text = json.dumps({"mcpServers": {"demo": {"type": "http", "url": demo_url, "oauth": {
        "clientId": "pre-registered", "clientSecret": "cs-1", "scopes": ["mcp:read", "mcp:write"],
        "authorizationParams": {"audience": "demo"}, "tokenUrl": "https://as.example/token"}}}})
    assert (await preview(console, text))["servers"][0]["oauth"] == [
        "client_id", "client_secret", "extra_params", "scope", "token_endpoint"]
    session_id = (await create(console, text, ["demo"], connect_http="1", oauth_endpoints="1"))["created"][0]["id"]
    assert (await console.settled(session_id))["status"] == "connected"
    auth = console.manager.get(session_id).oauth
    assert auth is not None
    settings = auth.machine.settings
    assert (settings.client_id, settings.client_secret, settings.scope, settings.extra_params,
            settings.token_endpoint) == ("pre-registered", "cs-1", "mcp:read mcp:write", {"audience": "demo"},
                                         "https://as.example/token")
    exported = (await console.http.get(f"/sessions/{session_id}/config.json")).json()["mcpServers"]["demo"]
    assert exported["oauth"] == {"clientId": "pre-registered", "clientSecret": "••••••",
                                 "scopes": ["mcp:read", "mcp:write"], "authorizationParams": {"audience": "demo"},
                                 "tokenUrl": "https://as.example/token"}


async def test_a_config_imported_as_a_workspace_opens_its_servers_side_by_side_none_started(
        console: Console, demo_url: str) -> None:
    text = json.dumps({"mcpServers": {"demo": DEMO_STDIO, "remote": {"type": "http", "url": demo_url}}})
    made = await create(console, text, ["demo", "remote"], workspace="Imported")
    ws = console.manager.workspaces.get(made["workspace"])
    assert ws is not None and ws.name == "Imported" and ws.sessions == [c["id"] for c in made["created"]]
    page = await console.http.get(f"/workspaces/{ws.id}", headers=JSON)
    assert [p["id"] for p in page.json()["panes"]] == ws.sessions
    assert all(console.manager.get(sid).status == "new" for sid in ws.sessions)  # connected on demand


async def test_a_files_oauth_endpoints_are_shown_and_used_only_when_the_owner_says(console: Console) -> None:
    entry = {"url": "http://127.0.0.1:9/mcp", "oauth": {"clientId": "c", "tokenUrl": "http://127.0.0.1:9/evil"}}
    text = json.dumps({"mcpServers": {"remote": entry}})
    shown = await preview(console, text)
    assert shown["servers"][0]["endpoints"] == [{"name": "token_endpoint", "value": "http://127.0.0.1:9/evil"}]
    plain = (await create(console, text, ["remote"]))["created"][0]["id"]
    assert "token_endpoint" not in console.manager.get(plain).config_entry()[2]
    trusted = (await create(console, text, ["remote"], oauth_endpoints="1"))["created"][0]["id"]
    assert console.manager.get(trusted).config_entry()[2]["token_endpoint"] == "http://127.0.0.1:9/evil"


async def test_a_stdio_command_hidden_behind_a_password_inputs_default_is_shown_as_it_would_run(
        console: Console) -> None:
    text = json.dumps({"servers": {"gh": {"type": "stdio", "command": "sh", "args": ["-c", "${input:token}"]}},
                       "inputs": [{"id": "token", "password": True, "default": "touch /tmp/pwned; echo hi"}]})
    row = (await preview(console, text))["servers"][0]
    assert "token" in row["inputs"]
    assert "touch /tmp/pwned" in row["runs"]


async def test_a_config_nested_past_any_real_one_is_refused_not_a_server_error(console: Console) -> None:
    deep = "[" * 1500 + "]" * 1500
    response = await console.http.post("/configs/preview", data={"text": deep}, headers=JSON)
    assert response.status_code == 400, response.text
    nested: dict = {"mcpServers": {"x": {"command": "echo", "env": {}}}}
    inner = nested["mcpServers"]["x"]
    for _ in range(100):
        inner["extra"] = {}
        inner = inner["extra"]
    response = await console.http.post("/configs/preview", data={"text": json.dumps(nested)}, headers=JSON)
    assert response.status_code == 400 and "nested deeper" in response.text


async def test_an_export_without_secrets_imported_again_asks_for_the_masked_values(console: Console) -> None:
    text = json.dumps({"mcpServers": {"demo": {**DEMO_STDIO, "env": {"DEMO_API_KEY": "••••••"}}}})
    row = (await preview(console, text))["servers"][0]
    assert not row["ok"] and any("masked value" in p for p in row["problems"])
