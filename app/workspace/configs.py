"""Server config files as clients keep them, read into entries: what each server is, and what was not understood.

Shapes (docs/guide.md, "Import and export server configs"):
- `{"mcpServers": {name: entry}}` (Claude Desktop, Cursor, Cline, Claude Code, the Inspector's catalog),
  `{"mcp_servers": {…}}`, or a bare map `{name: entry}`; both wrappers at once is an error, and so is one bare
  server object (a top-level `command` or `url`) — it has no name;
- VS Code's `{"servers": {…}, "inputs": [...]}`, its values referring to inputs as `${input:id}`;
- a registry `server.json` (`packages` become stdio commands, `remotes` HTTP servers; camelCase or snake_case).

An entry is read by the Inspector's per-server fields: `type` (stdio, http, streamable-http, sse), `url`, `headers`,
`command`, `args`, `env`, `cwd`, `protocolEra`, `oauth`. Every other field is kept (the original entry travels with
the server and comes back on export) and named as not understood. Nothing here expands a variable or reads a file:
app/workspace/config_targets.py turns an entry into the console's `Target`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["http", "stdio"]
Shape = Literal["mcpServers", "mcp_servers", "bare", "vscode", "server.json"]
KNOWN = frozenset({"type", "transport", "url", "serverUrl", "headers", "command", "args", "env", "cwd",
                   "protocolEra", "oauth"})
# Fields a client writes that change nothing of what the console connects to: kept, named, not a problem.
IGNORED = frozenset({"disabled", "autoApprove", "alwaysAllow", "description", "timeout", "enabled"})
OAUTH_FIELDS = {"clientId": "client_id", "clientSecret": "client_secret", "authorizationUrl": "authorization_endpoint",
                "tokenUrl": "token_endpoint"}
# Authorization request parameters the flow sets itself (the Inspector's reserved list).
RESERVED_PARAMS = frozenset({"client_id", "code_challenge", "code_challenge_method", "redirect_uri", "resource",
                             "response_type", "scope", "state"})
ERAS = {"legacy": "legacy", "modern": "modern", "auto": "auto"}
REFERENCE = re.compile(r"\$\{(env|input):([^}]*)\}")
MAX_SERVERS = 200  # a file of more is no one's client config (and each would become a session)


class ConfigError(ValueError):
    """The text is no config file the console reads (not JSON, both wrappers, a lone server, no servers)."""


@dataclass(frozen=True, slots=True)
class Input:
    """A value the file asks the person for (VS Code `inputs`; a registry variable without a value)."""

    id: str
    description: str = ""
    password: bool = False
    default: str = ""


@dataclass(slots=True)
class Entry:
    """One server of a config file, as the console reads it; `original` is the entry as the file has it."""

    name: str
    kind: Kind | None  # None: neither a command nor a URL was understood
    original: dict[str, Any]
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    era: str = "auto"
    oauth: dict[str, Any] = field(default_factory=dict)  # the console's OAuth settings (app/mcp/oauth/steps.py)
    secret_names: set[str] = field(default_factory=set)  # env or header names the file says are secret
    unknown: list[str] = field(default_factory=list)  # fields kept, not understood
    ignored: list[str] = field(default_factory=list)  # fields kept, meaning nothing to the console
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the entry became, said for the preview

    def references(self) -> list[tuple[str, str]]:
        """Every `${env:X}` and `${input:X}` its values use, in order, each once."""
        values = [self.url, self.command, *self.args, *self.headers.values(), *self.env.values(), self.cwd or ""]
        found: list[tuple[str, str]] = []
        for value in values:
            for match in REFERENCE.finditer(value):
                if (pair := (match.group(1), match.group(2))) not in found:
                    found.append(pair)
        return found


@dataclass(slots=True)
class ConfigFile:
    shape: Shape
    entries: list[Entry]
    inputs: list[Input] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # of the file, not of one entry

    def entry(self, name: str) -> Entry | None:
        return next((e for e in self.entries if e.name == name), None)


def read_config(text: str) -> ConfigFile:
    """A config file's text (JSON, or VS Code's JSON with comments and trailing commas) read into entries."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise ConfigError(f"nested deeper than a config file is (more than {MAX_DEPTH} levels)") from None
    except ValueError:
        try:
            data = json.loads(_without_comments(text))
        except RecursionError:
            raise ConfigError(f"nested deeper than a config file is (more than {MAX_DEPTH} levels)") from None
        except ValueError as exc:
            raise ConfigError(f"not JSON: {exc}") from None
    if _depth(data) > MAX_DEPTH:
        # Past this nothing of a server's entry is meaningful, and a deep value makes the export's walk recurse.
        raise ConfigError(f"nested deeper than a config file is (more than {MAX_DEPTH} levels)")
    return parse_config(data)


MAX_DEPTH = 32


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def parse_config(data: Any) -> ConfigFile:
    config = _parse(data)
    if len(config.entries) > MAX_SERVERS:
        raise ConfigError(f"the file names {len(config.entries)} servers: at most {MAX_SERVERS} are imported at once")
    return config


def _parse(data: Any) -> ConfigFile:
    if not isinstance(data, dict):
        raise ConfigError("a config file is a JSON object")
    if "mcpServers" in data and "mcp_servers" in data:
        raise ConfigError("the file has both mcpServers and mcp_servers: say which servers are meant by keeping one")
    if isinstance(data.get("packages"), list) or isinstance(data.get("remotes"), list):
        from app.workspace.registry import read_server_json  # one shape, its own module
        return read_server_json(data)
    for wrapper in ("mcpServers", "mcp_servers", "servers"):
        if wrapper in data:
            servers = data[wrapper]
            if not isinstance(servers, dict):
                raise ConfigError(f"{wrapper} must be an object of servers by name")
            shape: Shape = "vscode" if wrapper == "servers" else wrapper  # type: ignore[assignment]
            inputs, problems = _inputs(data.get("inputs")) if wrapper == "servers" else ([], [])
            others = sorted(k for k in data if k not in (wrapper, "inputs", "$schema"))
            if others:
                problems.append(f"top-level fields not read: {', '.join(others)}")
            return ConfigFile(shape, [read_entry(str(k), v) for k, v in servers.items()], inputs, problems)
    if "command" in data or "url" in data or "serverUrl" in data:
        raise ConfigError("this is one server, not a file of servers: wrap it as {\"mcpServers\": {\"NAME\": …}}")
    if not data:
        raise ConfigError("the file names no servers")
    if not all(isinstance(v, dict) for v in data.values()):
        raise ConfigError("no mcpServers, mcp_servers or servers, and not a map of servers by name")
    return ConfigFile("bare", [read_entry(str(k), v) for k, v in data.items()])


def read_entry(name: str, raw: Any) -> Entry:
    """One server entry by the Inspector's fields; everything else kept and named."""
    if not isinstance(raw, dict):
        return Entry(name, None, {"value": raw}, problems=["the entry is not an object"])
    entry = Entry(name, None, dict(raw))
    kind = _type_of(entry, raw)
    entry.unknown = [k for k in raw if k not in KNOWN and k not in IGNORED]
    entry.ignored = [k for k in raw if k in IGNORED]
    if kind == "stdio":
        entry.kind = "stdio"
        entry.command = _string(entry, raw, "command")
        entry.args = _strings(entry, raw.get("args"), "args")
        entry.env = _string_map(entry, raw.get("env"), "env")
        cwd = raw.get("cwd")
        entry.cwd = cwd if isinstance(cwd, str) and cwd else None
        if not entry.command:
            entry.kind, entry.problems = None, [*entry.problems, "a stdio server needs a command"]
        for unused in ("url", "headers"):
            if unused in raw:
                entry.problems.append(f"{unused} is for an HTTP server: not used for a command")
    elif kind == "http":
        entry.kind = "http"
        entry.url = _string(entry, raw, "url") or _string(entry, raw, "serverUrl")
        entry.headers = _string_map(entry, raw.get("headers"), "headers")
        if not entry.url.startswith(("http://", "https://")) and not entry.url.startswith("${"):
            entry.kind = None
            entry.problems.append(f"the URL must start with http:// or https:// (got {entry.url[:60]!r})")
        for unused in ("command", "args", "env", "cwd"):
            if unused in raw:
                entry.problems.append(f"{unused} is for a stdio server: not used for a URL")
    era = raw.get("protocolEra")
    if era is not None:
        if era in ERAS and entry.era != "sse-2024":
            entry.era = ERAS[era]
        else:
            entry.problems.append(f"protocolEra {era!r} not understood (auto, modern or legacy): auto is used")
    if "oauth" in raw:
        entry.oauth = read_oauth(entry, raw["oauth"])
    _say_what_it_became(entry)
    return entry


def _type_of(entry: Entry, raw: dict[str, Any]) -> Kind | None:
    kind = raw.get("type", raw.get("transport"))
    if kind is None:
        if "command" in raw:
            return "stdio"
        if "url" in raw or "serverUrl" in raw:
            return "http"
        entry.problems.append("neither a command nor a url: nothing to connect to")
        return None
    if kind == "stdio":
        return "stdio"
    if kind in ("http", "streamable-http", "streamableHttp"):
        return "http"
    if kind == "sse":  # the 2024-11-05 HTTP+SSE transport: a console target speaks it as the sse-2024 era
        entry.era = "sse-2024"
        return "http"
    entry.problems.append(f"type {kind!r} not understood (stdio, http, streamable-http or sse)")
    return None


def read_oauth(entry: Entry, raw: Any) -> dict[str, Any]:
    """The Inspector's `oauth` object as the console's OAuth settings (client_id, client_secret, scope,
    extra_params, authorization_endpoint, token_endpoint)."""
    if not isinstance(raw, dict):
        entry.problems.append("oauth is not an object: not used")
        return {}
    settings: dict[str, Any] = {}
    for name, value in raw.items():
        if name in OAUTH_FIELDS and isinstance(value, str):
            settings[OAUTH_FIELDS[name]] = value
        elif name == "scopes" and (isinstance(value, str) or _all_strings(value)):
            settings["scope"] = value if isinstance(value, str) else " ".join(value)
        elif name == "authorizationParams" and isinstance(value, dict):
            params = {str(k): str(v) for k, v in value.items() if isinstance(v, str | int | float | bool)}
            reserved = sorted(k for k in params if k in RESERVED_PARAMS)
            if reserved:
                entry.problems.append(f"oauth.authorizationParams {', '.join(reserved)}: set by the flow itself, "
                                      "not used")
            settings["extra_params"] = {k: v for k, v in params.items() if k not in RESERVED_PARAMS}
        else:
            entry.unknown.append(f"oauth.{name}")
    return settings


def _say_what_it_became(entry: Entry) -> None:
    if entry.kind == "stdio":
        entry.notes.append("a stdio server: started only when you click Connect")
    elif entry.kind == "http":
        entry.notes.append("an HTTP server (2024-11-05 HTTP+SSE)" if entry.era == "sse-2024"
                           else "a Streamable HTTP server")
    if entry.oauth:
        entry.notes.append("OAuth settings: " + ", ".join(sorted(entry.oauth)))
    if entry.unknown:
        entry.notes.append("kept, not understood: " + ", ".join(entry.unknown))
    if entry.ignored:
        entry.notes.append("kept, not used by the console: " + ", ".join(entry.ignored))


def _inputs(raw: Any) -> tuple[list[Input], list[str]]:
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], ["inputs is not a list: not read"]
    found, problems = [], []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            problems.append("an input without an id: not read")
            continue
        if item.get("type", "promptString") != "promptString":
            problems.append(f"input {item['id']!r}: type {item.get('type')!r} is asked as a string")
        default = item.get("default")
        found.append(Input(item["id"], str(item.get("description") or ""), item.get("password") is True,
                           default if isinstance(default, str) else ""))
    return found, problems


def _string(entry: Entry, raw: dict[str, Any], name: str) -> str:
    value = raw.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        entry.problems.append(f"{name} is not a string: not used")
        return ""
    return value


def _strings(entry: Entry, value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        entry.problems.append(f"{name} is not a list: not used")
        return []
    out = []
    for item in value:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, int | float) and not isinstance(item, bool):
            out.append(json.dumps(item))  # `"args": [8080]` means the argument 8080
        else:
            entry.problems.append(f"{name}: {json.dumps(item)[:40]} is not a string: left out")
    return out


def _string_map(entry: Entry, value: Any, name: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        entry.problems.append(f"{name} is not an object: not used")
        return {}
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, str):
            out[str(key)] = item
        elif isinstance(item, int | float | bool):
            out[str(key)] = json.dumps(item)
        else:
            entry.problems.append(f"{name}.{key} is not a string: left out")
    return out


def _all_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _without_comments(text: str) -> str:
    """JSON with `//` and `/* */` comments and trailing commas (VS Code's mcp.json) as plain JSON; what is inside a
    string is left as it is."""
    return _outside_strings(_outside_strings(text, _comment), _trailing_comma)


def _comment(text: str, i: int) -> int:
    """Where the comment starting at i ends (i: none starts there)."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    return i


def _trailing_comma(text: str, i: int) -> int:
    """Past a comma before a closing bracket (i: not one)."""
    if text[i] != ",":
        return i
    j = i + 1
    while j < len(text) and text[j] in " \t\r\n":
        j += 1
    return i + 1 if j < len(text) and text[j] in "}]" else i


def _outside_strings(text: str, skip: Any) -> str:
    """The text with what `skip(text, i)` jumps over, outside JSON strings, left out."""
    out: list[str] = []
    i, n, in_string = 0, len(text), False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\" and i + 1 < n:
                out.append(text[i:i + 2])
                i += 2
                continue
            in_string = c != '"'
        elif c == '"':
            in_string = True
        elif (end := skip(text, i)) != i:
            i = end
            continue
        out.append(c)
        i += 1
    return "".join(out)
