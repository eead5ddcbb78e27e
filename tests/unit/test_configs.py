"""Config files of every shape read into targets, and targets written back as `mcpServers` entries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.mcp.secret import MASK, Secret, reveal
from app.workspace.config_targets import Made, export_entry, kept_original, target_of
from app.workspace.configs import ConfigError, ConfigFile, parse_config, read_config

STDIO = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": "/m"}}
HTTP = {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer tok-123", "X-Trace": "on"}}


def made(config: ConfigFile, name: str, environ: dict[str, str] | None = None,
         values: dict[str, str] | None = None) -> Made:
    entry = config.entry(name)
    assert entry is not None
    return target_of(entry, config, environ or {}, values or {})


@pytest.mark.parametrize("wrapper", ["mcpServers", "mcp_servers"])
def test_both_wrappers_read_stdio_and_http_entries(wrapper: str) -> None:
    config = parse_config({wrapper: {"memory": STDIO, "remote": HTTP}})
    assert config.shape == wrapper
    memory, remote = made(config, "memory").target, made(config, "remote").target
    assert memory is not None and remote is not None
    assert memory.kind == "stdio"
    assert [reveal(a) for a in memory.argv] == ["MEMORY_FILE_PATH=/m", "npx", "-y",
                                                "@modelcontextprotocol/server-memory"]
    assert remote.kind == "http" and reveal(remote.url) == "https://example.com/mcp"
    assert isinstance(remote.headers["Authorization"], Secret) and remote.headers["X-Trace"] == "on"


def test_a_bare_map_of_servers_is_read_as_servers_by_name() -> None:
    config = parse_config({"memory": STDIO})
    assert config.shape == "bare" and [e.name for e in config.entries] == ["memory"]


def test_both_wrappers_at_once_is_an_error() -> None:
    with pytest.raises(ConfigError, match="both mcpServers and mcp_servers"):
        parse_config({"mcpServers": {"a": STDIO}, "mcp_servers": {"b": STDIO}})


def test_a_single_bare_server_object_is_rejected_with_how_to_wrap_it() -> None:
    with pytest.raises(ConfigError, match="one server, not a file of servers"):
        parse_config(STDIO)


def test_text_that_is_not_json_says_so() -> None:
    with pytest.raises(ConfigError, match="not JSON"):
        read_config("{mcpServers: ")


def test_vs_code_file_with_comments_inputs_and_a_password_input_makes_that_value_secret() -> None:
    text = """{
      // VS Code's mcp.json
      "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true},
                 {"type": "promptString", "id": "region", "default": "eu"}],
      "servers": {
        "github": {"type": "http", "url": "https://api.example.com/mcp/${input:region}",
                   "headers": {"X-Service": "${input:api-key}"}},
        "memory": {"type": "stdio", "command": "node", "args": ["server.js", "--key", "${input:api-key}"],
                   "env": {"PLAIN": "x", "SERVICE": "${input:api-key}"}, "envFile": "${workspaceFolder}/.env",},
      },
    }"""
    config = read_config(text)
    assert config.shape == "vscode"
    assert [(i.id, i.password) for i in config.inputs] == [("api-key", True), ("region", False)]
    github = made(config, "github", values={"api-key": "k-999"})
    assert github.missing == [] and github.target is not None
    assert reveal(github.target.url) == "https://api.example.com/mcp/eu"  # the input's default
    assert "header:X-Service" in (github.target.secret or ())  # no credential-shaped name: the input says so
    memory = made(config, "memory", values={"api-key": "k-999"})
    assert memory.target is not None
    assert {"env:SERVICE", "arg:5"} <= set(memory.target.secret or ())
    assert "k-999" not in memory.target.shown() and "PLAIN=x" in memory.target.shown()
    entry = config.entry("memory")
    assert entry is not None and entry.unknown == ["envFile"]


def test_an_input_without_a_value_is_named_as_missing() -> None:
    config = read_config('{"servers": {"s": {"url": "https://x/mcp", "headers": {"K": "${input:k}"}}},'
                         ' "inputs": [{"id": "k", "password": true}]}')
    assert made(config, "s").missing == ["${input:k}"]


def test_env_references_expand_from_the_environment_given_and_a_missing_one_is_named() -> None:
    config = parse_config({"mcpServers": {"s": {"command": "srv", "env": {"API_TOKEN": "${env:TOKEN}"},
                                                "args": ["${userHome}/data", "${env:NOPE}"]}}})
    result = made(config, "s", environ={"TOKEN": "t-1", "HOME": "/home/me"})
    assert result.target is not None and result.missing == ["${env:NOPE}"]
    assert [reveal(a) for a in result.target.argv][:3] == ["API_TOKEN=t-1", "srv", "/home/me/data"]
    assert "env:API_TOKEN" in (result.target.secret or ())  # credential-shaped name: secret by default


def test_inspector_fields_map_type_era_cwd_and_oauth_onto_the_console_settings() -> None:
    config = parse_config({"mcpServers": {
        "sse": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        "legacy": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp", "protocolEra": "legacy",
                   "requestTimeout": 5000,
                   "oauth": {"clientId": "cid", "clientSecret": "cs", "scopes": ["a", "b"],
                             "authorizationParams": {"audience": "api", "state": "no"},
                             "authorizationUrl": "https://as/authorize", "tokenUrl": "https://as/token",
                             "enterpriseManaged": True}},
        "local": {"type": "stdio", "command": "srv", "cwd": "/srv"}}})
    assert made(config, "sse").target is not None and made(config, "sse").target.era == "sse-2024"  # type: ignore[union-attr]
    legacy = config.entry("legacy")
    assert legacy is not None and legacy.era == "legacy"
    assert legacy.oauth == {"client_id": "cid", "client_secret": "cs", "scope": "a b",
                            "extra_params": {"audience": "api"}, "authorization_endpoint": "https://as/authorize",
                            "token_endpoint": "https://as/token"}
    assert legacy.unknown == ["requestTimeout", "oauth.enterpriseManaged"]
    assert any("state" in p for p in legacy.problems)
    local = made(config, "local").target
    assert local is not None and local.cwd == "/srv"


def test_an_entry_of_an_unknown_type_or_without_command_or_url_becomes_no_target_and_says_why() -> None:
    config = parse_config({"mcpServers": {"ws": {"type": "websocket", "url": "ws://x"}, "empty": {"foo": 1},
                                          "bad": {"url": "ftp://x"}}})
    for name, said in (("ws", "type 'websocket'"), ("empty", "neither a command nor a url"),
                       ("bad", "must start with http")):
        entry = config.entry(name)
        assert entry is not None and entry.kind is None and any(said in p for p in entry.problems), name
        assert made(config, name).target is None


SERVER_JSON: dict[str, Any] = {
    "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
    "name": "io.github.someone/weather", "version": "1.2.0",
    "packages": [
        {"registryType": "npm", "identifier": "@someone/weather", "version": "1.2.0", "runtimeHint": "npx",
         "transport": {"type": "stdio"},
         "environmentVariables": [{"name": "WEATHER_API_KEY", "isRequired": True, "isSecret": True,
                                   "description": "The API key"},
                                  {"name": "UNITS", "default": "metric"}],
         "packageArguments": [{"type": "named", "name": "--port", "value": "8080"},
                              {"type": "positional", "valueHint": "city", "isRequired": True}]},
        {"registryType": "pypi", "identifier": "weather-mcp", "version": "1.2.0"},
        {"registryType": "oci", "identifier": "ghcr.io/someone/weather", "version": "1.2.0",
         "environmentVariables": [{"name": "UNITS", "value": "metric"}]}],
    "remotes": [{"type": "streamable-http", "url": "https://{region}.weather.example/mcp",
                 "variables": {"region": {"default": "eu"}},
                 "headers": [{"name": "X-Weather-Key", "isSecret": True, "isRequired": True}]}]}


def test_registry_server_json_packages_become_commands_and_remotes_http_servers() -> None:
    config = parse_config(SERVER_JSON)
    assert config.shape == "server.json"
    assert [e.name for e in config.entries] == ["weather-npm", "weather-pypi", "weather-oci", "weather-remote"]
    assert {i.id: i.password for i in config.inputs} == {"WEATHER_API_KEY": True, "city": False,
                                                        "X-Weather-Key": True}
    npm = made(config, "weather-npm", values={"WEATHER_API_KEY": "w-1", "city": "Oslo"}).target
    assert npm is not None
    assert [reveal(a) for a in npm.argv] == ["WEATHER_API_KEY=w-1", "UNITS=metric", "npx", "-y",
                                             "@someone/weather@1.2.0", "--port", "8080", "Oslo"]
    assert "env:WEATHER_API_KEY" in (npm.secret or ())
    pypi = made(config, "weather-pypi").target
    assert pypi is not None and [reveal(a) for a in pypi.argv] == ["uvx", "weather-mcp==1.2.0"]
    oci = made(config, "weather-oci").target
    assert oci is not None and [reveal(a) for a in oci.argv] == [
        "UNITS=metric", "docker", "run", "-i", "--rm", "-e", "UNITS", "ghcr.io/someone/weather:1.2.0"]
    remote = made(config, "weather-remote", values={"X-Weather-Key": "xk-1"}).target
    assert remote is not None and reveal(remote.url) == "https://eu.weather.example/mcp"
    assert isinstance(remote.headers["X-Weather-Key"], Secret)
    assert kept_original(config.entries[0], config) is None  # a package is no mcpServers entry


def test_registry_server_json_in_snake_case_reads_the_same() -> None:
    snake = {"name": "io.github.someone/old", "version_detail": {"version": "0.9"},
             "packages": [{"registry_type": "npm", "identifier": "old-srv", "runtime_hint": "npx",
                           "environment_variables": [{"name": "OLD_TOKEN", "is_secret": True, "value": "v"}]}]}
    config = parse_config(snake)
    target = made(config, "old").target
    assert target is not None
    assert [reveal(a) for a in target.argv] == ["OLD_TOKEN=v", "npx", "-y", "old-srv@0.9"]
    assert "env:OLD_TOKEN" in (target.secret or ())


def test_an_mcpb_package_is_said_not_to_be_understood() -> None:
    config = parse_config({"name": "x/y", "packages": [{"registryType": "mcpb", "identifier": "https://x/y.mcpb"}]})
    assert config.entries[0].kind is None and "no runtime" in config.entries[0].problems[0]


# --- export and round trips ---------------------------------------------------------------------------------------


def test_export_masks_secret_values_unless_asked_to_include_them() -> None:
    config = parse_config({"mcpServers": {"remote": HTTP, "local": {"command": "srv", "env": {"API_KEY": "k-1"}}}})
    remote, local = made(config, "remote").target, made(config, "local").target
    assert remote is not None and local is not None
    assert export_entry(remote)["headers"]["Authorization"] == f"Bearer {MASK}"
    assert export_entry(remote, include_secrets=True)["headers"]["Authorization"] == "Bearer tok-123"
    assert export_entry(local) == {"command": "srv", "args": [], "env": {"API_KEY": MASK}}
    assert export_entry(local, include_secrets=True)["env"] == {"API_KEY": "k-1"}


def test_a_round_trip_keeps_unknown_fields_and_the_originals_env_references() -> None:
    original = {"command": "srv", "args": ["--x"], "env": {"API_TOKEN": "${env:TOKEN}"}, "disabled": True,
                "autoApprove": ["read"], "x-team": {"owner": "ops"}}
    config = parse_config({"mcpServers": {"s": original}})
    target = made(config, "s", environ={"TOKEN": "t-9"}).target
    assert target is not None
    out = export_entry(target, original, target.revealed())
    assert out == original  # unchanged since the import: written back as it was, the reference kept
    assert "t-9" not in json.dumps(export_entry(target, original, target.revealed()))


def test_a_changed_target_is_written_from_the_target_with_the_originals_unknown_fields() -> None:
    original = {"type": "http", "url": "https://a/mcp", "headers": {"Authorization": "Bearer a"}, "x-note": "keep"}
    config = parse_config({"mcpServers": {"s": original}})
    target = made(config, "s").target
    assert target is not None
    before = target.revealed()
    target.headers["Authorization"] = Secret("Bearer b", f"Bearer {MASK}")
    out = export_entry(target, original, before)
    assert out == {"type": "http", "url": "https://a/mcp", "headers": {"Authorization": f"Bearer {MASK}"},
                   "x-note": "keep"}


def test_a_literal_secret_in_an_unchanged_original_is_masked_on_export() -> None:
    original = {"command": "srv", "env": {"GITHUB_TOKEN": "ghp_abcdef"}, "x": 1}
    config = parse_config({"mcpServers": {"s": original}})
    target = made(config, "s").target
    assert target is not None
    assert export_entry(target, original, target.revealed())["env"] == {"GITHUB_TOKEN": MASK}
    assert export_entry(target, original, target.revealed(), include_secrets=True) == original


def test_oauth_settings_round_trip_as_the_inspectors_fields_with_the_client_secret_masked() -> None:
    original = {"type": "http", "url": "https://a/mcp", "oauth": {"clientId": "c", "clientSecret": "s3",
                                                                   "scopes": ["x"], "enterpriseManaged": False}}
    config = parse_config({"mcpServers": {"s": original}})
    entry = config.entry("s")
    target = made(config, "s").target
    assert entry is not None and target is not None
    out = export_entry(target, original, target.revealed(), oauth=entry.oauth)
    assert out["oauth"] == {"enterpriseManaged": False, "clientId": "c", "clientSecret": MASK, "scopes": ["x"]}
    assert export_entry(target, original, None, include_secrets=True)["oauth"]["clientSecret"] == "s3"


def test_an_sse_target_exports_as_type_sse_and_an_era_as_protocol_era() -> None:
    config = parse_config({"mcpServers": {"s": {"type": "sse", "url": "http://h/sse"},
                                          "m": {"url": "http://h/mcp", "protocolEra": "modern"}}})
    sse, modern = made(config, "s").target, made(config, "m").target
    assert sse is not None and modern is not None
    assert export_entry(sse) == {"type": "sse", "url": "http://h/sse"}
    assert export_entry(modern) == {"type": "http", "url": "http://h/mcp", "protocolEra": "modern"}


def test_vs_code_comments_and_trailing_commas_are_dropped_but_not_inside_strings() -> None:
    config = read_config('{"servers": {"s": {"url": "http://h/a//b", "headers": {"X-A": "x,}/*"},},}, // end\n}')
    entry = config.entry("s")
    assert entry is not None and entry.url == "http://h/a//b" and entry.headers == {"X-A": "x,}/*"}


def test_a_header_that_cannot_be_sent_is_left_out_without_quoting_its_value() -> None:
    config = parse_config({"mcpServers": {"s": {"url": "https://h/mcp",
                                                "headers": {"Bad Name": "v", "X-Key": "line\nbreak-secret"}}}})
    result = made(config, "s")
    assert result.target is not None and result.target.headers == {}
    assert len(result.problems) == 2 and "break-secret" not in " ".join(result.problems)


def test_a_url_that_is_no_http_url_once_its_variables_are_filled_makes_no_target() -> None:
    config = parse_config({"mcpServers": {"s": {"url": "${env:WHERE}"}}})
    result = made(config, "s", environ={"WHERE": "file:///etc/passwd"})
    assert result.target is None and "does not start with http" in result.problems[0]


def test_a_file_of_more_servers_than_anyone_keeps_is_refused() -> None:
    with pytest.raises(ConfigError, match="at most 200"):
        parse_config({"mcpServers": {f"s{i}": {"command": "x"} for i in range(201)}})


def test_the_config_core_reads_no_files_and_knows_no_web_app() -> None:
    from tests.unit.test_import_boundaries import ROOT, imports_in_source, module_name

    forbidden = ("fastapi", "starlette", "jinja2", "httpx", "app.web", "app.headless", "os", "pathlib", "io")
    for path in sorted((ROOT / "app" / "workspace").glob("*.py")):
        source = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(ROOT))
        found = imports_in_source(source, rel, module_name(path), path.name == "__init__.py")
        assert not [i.module for i in found if any(i.touches(f) for f in forbidden)], rel
        assert "open(" not in source, rel
