"""`--config FILE --server NAME` on the headless commands: a config file of each shape against the demo server (over
HTTP and stdio) and the real npm servers, `${env:…}` and `${input:…}` filled, secrets masked, and the choice of a
server said when the file has several."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration.conftest import CLI_RUN_TIMEOUT_S, REPO_ROOT, child_env
from tests.realservers.fixtures import MEMORY, NODE, filesystem_argv, needs_filesystem, needs_memory

DEMO_STDIO = {"command": sys.executable, "args": ["-m", "app.demo", "--stdio"], "cwd": str(REPO_ROOT)}


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=REPO_ROOT, env={**child_env(), **(env or {})},
                          capture_output=True, text=True, timeout=CLI_RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)


def write(tmp_path: Path, data: Any, name: str = "config.json") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def echoed(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.stdout, done.stderr)
    return str(json.loads(done.stdout)["result"]["content"][0]["text"])


def test_call_takes_a_claude_desktop_stdio_entry_with_env_from_the_environment(tmp_path: Path) -> None:
    config = write(tmp_path, {"mcpServers": {"demo": {**DEMO_STDIO, "env": {"DEMO_API_TOKEN": "${env:MY_TOKEN}"}}}})
    done = run("call", "--config", config, "echo", "--arg", "text=from a config", env={"MY_TOKEN": "tok-secret-1"})
    assert echoed(done) == "from a config"
    assert "DEMO_API_TOKEN=••••••" in done.stderr and "tok-secret-1" not in done.stderr + done.stdout


def test_a_missing_env_variable_stops_the_run_with_exit_2_naming_it(tmp_path: Path) -> None:
    config = write(tmp_path, {"mcpServers": {"demo": {**DEMO_STDIO, "env": {"X": "${env:NOT_SET_ANYWHERE}"}}}})
    done = run("call", "--config", config, "echo", "--arg", "text=x")
    assert done.returncode == 2
    assert "${env:NOT_SET_ANYWHERE}" in done.stderr and "started pid" not in done.stderr


def test_list_takes_an_mcp_servers_http_entry_by_name(tmp_path: Path, demo_url: str) -> None:
    config = write(tmp_path, {"mcp_servers": {"local": DEMO_STDIO, "remote": {"url": demo_url}}})
    done = run("list", "tools", "--config", config, "--server", "remote", "--json")
    assert done.returncode == 0, done.stderr
    assert "echo" in [t["name"] for t in json.loads(done.stdout)["tools"]]


def test_a_bare_map_of_several_servers_without_server_prints_their_names_and_exits_2(tmp_path: Path) -> None:
    config = write(tmp_path, {"one": DEMO_STDIO, "two": {"url": "http://127.0.0.1:9/mcp"}})
    done = run("call", "--config", config, "echo")
    assert done.returncode == 2
    assert done.stdout.split() == ["one", "two"] and "--server NAME" in done.stderr
    unknown = run("call", "--config", config, "--server", "three", "echo")
    assert unknown.returncode == 2 and "has no server 'three'; it has: one, two" in unknown.stderr
    assert echoed(run("call", "--config", config, "--server", "one", "echo", "--arg", "text=bare map")) == "bare map"


def test_a_vs_code_file_sends_a_password_inputs_value_as_a_header_and_masks_it(tmp_path: Path,
                                                                              demo_url: str) -> None:
    config = write(tmp_path, """{
      // .vscode/mcp.json
      "inputs": [{"type": "promptString", "id": "service-key", "description": "Key", "password": true}],
      "servers": {"demo": {"type": "http", "url": "DEMO_URL", "headers": {"X-Service": "${input:service-key}"}}}
    }""".replace("DEMO_URL", demo_url))
    har, revealed = tmp_path / "masked.har", tmp_path / "revealed.har"
    env = {"MCP_CONSOLE_INPUT_SERVICE_KEY": "sk-input-777"}
    done = run("call", "--config", config, "echo", "--arg", "text=vs code", "--har", str(har), env=env)
    assert echoed(done) == "vs code"
    assert "sk-input-777" not in har.read_text() + done.stdout + done.stderr
    shown = run("call", "--config", config, "echo", "--arg", "text=x", "--har", str(revealed), "--reveal", env=env)
    assert shown.returncode == 0, shown.stderr
    sent = json.loads(revealed.read_text())["log"]["entries"][0]["request"]["headers"]
    assert {"name": "X-Service", "value": "sk-input-777"} in sent
    missing = run("call", "--config", config, "echo", "--arg", "text=x")
    assert missing.returncode == 2 and "${input:service-key}" in missing.stderr


def test_check_takes_an_inspector_catalog_entry_with_its_protocol_era(tmp_path: Path, demo_url: str) -> None:
    config = write(tmp_path, {"mcpServers": {"demo": {"type": "streamable-http", "url": demo_url,
                                                      "protocolEra": "modern", "requestTimeout": 10000}}})
    done = run("check", "--config", config, "--json")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["protocol_version"] == "2026-07-28"
    legacy = write(tmp_path, {"mcpServers": {"demo": {**DEMO_STDIO, "type": "stdio", "protocolEra": "legacy"}}},
                   "legacy.json")
    done = run("check", "--config", legacy, "--json")
    assert done.returncode in (0, 1), (done.stdout, done.stderr)
    assert json.loads(done.stdout)["protocol_version"] == "2025-11-25"


def test_a_registry_server_json_remote_is_called_over_http(tmp_path: Path, demo_url: str) -> None:
    port = demo_url.split(":")[2].split("/")[0]
    config = write(tmp_path, {"name": "io.github.example/demo", "version": "0.1.0",
                              "remotes": [{"type": "streamable-http", "url": "http://127.0.0.1:{port}/mcp",
                                           "variables": {"port": {"default": port}}}]}, "server.json")
    assert echoed(run("call", "--config", config, "echo", "--arg", "text=registry")) == "registry"


def test_url_and_config_together_are_refused(tmp_path: Path, demo_url: str) -> None:
    config = write(tmp_path, {"mcpServers": {"demo": {"url": demo_url}}})
    done = run("call", demo_url, "--config", config, "echo")
    assert done.returncode == 2 and "not both" in done.stderr


@needs_memory
def test_server_memory_from_a_claude_desktop_file_writes_where_its_env_reference_points(tmp_path: Path) -> None:
    memory_file = tmp_path / "memory.jsonl"
    config = write(tmp_path, {"mcpServers": {"memory": {"command": NODE, "args": [str(MEMORY)],
                                                        "env": {"MEMORY_FILE_PATH": "${env:MEM_AT}"}}}})
    entity = json.dumps({"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote code"]}]})
    done = run("call", "--config", config, "create_entities", "--json", entity, env={"MEM_AT": str(memory_file)})
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "Ada" in memory_file.read_text()


@needs_filesystem
def test_server_filesystem_from_a_vs_code_file_serves_the_directory_in_its_args(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    argv = filesystem_argv(served)
    config = write(tmp_path, {"servers": {"files": {"type": "stdio", "command": argv[0], "args": argv[1:]}}})
    said = echoed(run("call", "--config", config, "list_allowed_directories"))
    assert str(served) in said


def test_a_config_cannot_read_the_consoles_own_settings_from_the_environment(tmp_path: Path) -> None:
    config = write(tmp_path, {"mcpServers": {"x": {"url": "http://127.0.0.1:9/mcp/${env:MCP_CONSOLE_TOKEN}"}}})
    done = run("list", "tools", "--config", config, env={"MCP_CONSOLE_TOKEN": "console-token-0123456789"})
    assert done.returncode == 2, done.stderr
    assert "${env:MCP_CONSOLE_TOKEN}" in done.stderr and "console-token-0123456789" not in done.stderr + done.stdout


def test_a_files_server_names_reach_the_terminal_escaped(tmp_path: Path) -> None:
    config = write(tmp_path, {"mcpServers": {"a\u001b[2Jred": {"url": "http://127.0.0.1:9/mcp"},
                                             "b": {"url": "http://127.0.0.1:9/mcp"}}})
    done = run("list", "tools", "--config", config)
    assert done.returncode == 2
    assert "\u001b" not in done.stdout and "\\x1b[2Jred" in done.stdout
