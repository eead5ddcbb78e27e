"""A registry `server.json` (modelcontextprotocol.io/registry) read into config entries.

Each of `packages` becomes a stdio command by its runtime (`runtimeHint`, else the one its registry implies: npm →
npx, pypi → uvx, oci → docker, nuget → dnx); each of `remotes` an HTTP server. Its environment variables, headers
and `{var}` variables take their `value`, else their `default`; one with neither is asked of the person as an input
(a secret one, `isSecret`, as a password). Older files and the REST API spell the fields in snake_case: both are
read.
"""

from __future__ import annotations

import re
from typing import Any

from app.workspace.configs import ConfigFile, Entry, Input

RUNTIMES = {"npm": "npx", "pypi": "uvx", "oci": "docker", "nuget": "dnx"}
VARIABLE = re.compile(r"\{([A-Za-z0-9_.-]+)\}")


def _get(raw: dict[str, Any], camel: str) -> Any:
    """A field in camelCase or snake_case (`registryType` or `registry_type`)."""
    if camel in raw:
        return raw[camel]
    return raw.get(re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel))


def read_server_json(data: dict[str, Any]) -> ConfigFile:
    full = str(data["name"]) if isinstance(data.get("name"), str) else "server"
    base = full.rsplit("/", 1)[-1] or "server"
    version = _version(data)
    packages = [p for p in data.get("packages") or [] if isinstance(p, dict)]
    remotes = [r for r in data.get("remotes") or [] if isinstance(r, dict)]
    inputs: list[Input] = []
    entries: list[Entry] = []
    names: set[str] = set()
    for package in packages:
        entries.append(_package(package, _name(base, _get(package, "registryType") or "package", names,
                                               len(packages) + len(remotes)), version, inputs))
    for remote in remotes:
        entries.append(_remote(remote, _name(base, "remote", names, len(packages) + len(remotes)), inputs))
    problems = [] if entries else ["the server.json has no packages and no remotes: nothing to connect to"]
    return ConfigFile("server.json", entries, inputs, problems)


def _version(data: dict[str, Any]) -> str:
    version = data.get("version")
    if isinstance(version, str):
        return version
    detail = _get(data, "versionDetail")
    return str(detail.get("version") or "") if isinstance(detail, dict) else ""


def _name(base: str, suffix: str, taken: set[str], count: int) -> str:
    name = base if count == 1 else f"{base}-{suffix}"
    n, unique = 2, name
    while unique in taken:
        unique, n = f"{name}-{n}", n + 1
    taken.add(unique)
    return unique


def _package(raw: dict[str, Any], name: str, version: str, inputs: list[Input]) -> Entry:
    entry = Entry(name, "stdio", dict(raw))
    registry = str(_get(raw, "registryType") or "")
    identifier = str(_get(raw, "identifier") or _get(raw, "name") or "")
    version = str(raw.get("version") or version or "")
    runtime = str(_get(raw, "runtimeHint") or RUNTIMES.get(registry, ""))
    transport: dict[str, Any] = raw["transport"] if isinstance(raw.get("transport"), dict) else {}
    kind = transport.get("type") or _get(raw, "transportType") or "stdio"
    if kind != "stdio":
        entry.problems.append(f"the package serves {kind} (at {transport.get('url') or 'a URL it prints'}): start it "
                              "yourself and connect to its URL; its command is imported as a stdio server")
    if not identifier or runtime not in ("npx", "uvx", "docker", "dnx"):
        entry.kind = None
        entry.problems.append(f"a {registry or 'package'} package ({identifier or 'no identifier'}) with no runtime "
                              "the console knows how to run (npx, uvx, docker, dnx)")
        return entry
    env = {}
    for var in _list(raw, "environmentVariables"):
        value = _value(var, inputs, entry)
        if value is not None:
            env[str(var["name"])] = value
    runtime_args = _arguments(_list(raw, "runtimeArguments"), inputs, entry)
    package_args = _arguments(_list(raw, "packageArguments"), inputs, entry)
    entry.command, entry.env = runtime, env
    if runtime == "npx":
        spec = f"{identifier}@{version}" if version else identifier
        entry.args = [*(runtime_args or ["-y"]), spec, *package_args]
    elif runtime == "uvx":
        spec = f"{identifier}=={version}" if version else identifier
        entry.args = [*runtime_args, spec, *package_args]
    elif runtime == "docker":
        image = f"{identifier}:{version}" if version and ":" not in identifier.rsplit("/", 1)[-1] else identifier
        passed = [arg for name in env for arg in ("-e", name)]  # docker passes the variable from its own environment
        entry.args = [*(runtime_args or ["run", "-i", "--rm"]), *passed, image, *package_args]
    else:
        spec = f"{identifier}@{version}" if version else identifier
        entry.args = [*runtime_args, spec, "--yes", *package_args]
    entry.notes.append(f"a {registry or 'registry'} package run with {runtime}: started only when you click Connect")
    return entry


def _remote(raw: dict[str, Any], name: str, inputs: list[Input]) -> Entry:
    entry = Entry(name, "http", dict(raw))
    kind = raw.get("type") or _get(raw, "transportType") or "streamable-http"
    if kind == "sse":
        entry.era = "sse-2024"
    elif kind != "streamable-http":
        entry.problems.append(f"remote type {kind!r} not understood: read as Streamable HTTP")
    url = str(raw.get("url") or "")
    variables: dict[str, Any] = raw["variables"] if isinstance(raw.get("variables"), dict) else {}

    def fill(match: re.Match[str]) -> str:
        spec = variables.get(match.group(1))
        value = _value({"name": match.group(1), **spec}, inputs, entry) if isinstance(spec, dict) else None
        if value is None:
            inputs.append(Input(match.group(1), f"{{{match.group(1)}}} in the URL of {name}"))
            value = "${input:" + match.group(1) + "}"
        return value

    entry.url = VARIABLE.sub(fill, url)
    if not entry.url.startswith(("http://", "https://")):
        entry.kind = None
        entry.problems.append(f"the remote's URL must start with http:// or https:// (got {url[:60]!r})")
    for header in _list(raw, "headers"):
        value = _value(header, inputs, entry)
        if value is not None:
            entry.headers[str(header["name"])] = value
    entry.notes.append("an HTTP server (2024-11-05 HTTP+SSE)" if entry.era == "sse-2024" else
                       "a Streamable HTTP server")
    return entry


def _list(raw: dict[str, Any], camel: str) -> list[dict[str, Any]]:
    value = _get(raw, camel)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _value(var: dict[str, Any], inputs: list[Input], entry: Entry) -> str | None:
    """A variable's value or default; else an input asked of the person (None: no name, nothing to set)."""
    name = var.get("name")
    if not isinstance(name, str) or not name:
        return None
    secret = _get(var, "isSecret") is True
    if secret:
        entry.secret_names.add(name)
    for key in ("value", "default"):
        if isinstance(var.get(key), str | int | float) and not isinstance(var.get(key), bool):
            return _filled(str(var[key]), var, inputs, entry)
    if _get(var, "isRequired") is not True and not secret:
        return None  # optional and unset: left out, as a client would
    if not any(i.id == name for i in inputs):
        inputs.append(Input(name, str(var.get("description") or ""), secret))
    return "${input:" + name + "}"


def _filled(value: str, var: dict[str, Any], inputs: list[Input], entry: Entry) -> str:
    """A value's `{var}` placeholders from the variable's own `variables` (their defaults, else inputs)."""
    variables: dict[str, Any] = var["variables"] if isinstance(var.get("variables"), dict) else {}
    if not variables:
        return value

    def fill(match: re.Match[str]) -> str:
        spec = variables.get(match.group(1))
        if not isinstance(spec, dict):
            return match.group(0)
        return _value({"name": match.group(1), **spec, "isRequired": True}, inputs, entry) or match.group(0)

    return VARIABLE.sub(fill, value)


def _arguments(args: list[dict[str, Any]], inputs: list[Input], entry: Entry) -> list[str]:
    out: list[str] = []
    for arg in args:
        kind = arg.get("type")
        value = next((str(arg[k]) for k in ("value", "default") if isinstance(arg.get(k), str | int | float)
                      and not isinstance(arg.get(k), bool)), None)
        if value is not None:
            value = _filled(value, arg, inputs, entry)
        if kind == "named":
            name = str(arg.get("name") or "")
            if value is None and _get(arg, "isRequired") is True and _get(arg, "valueHint"):
                value = _asked(str(_get(arg, "valueHint")), arg, inputs)
            if value is None and _get(arg, "isRequired") is not True:
                continue
            out += [name] if value is None else [name, value]
        elif value is not None:
            out.append(value)
        elif _get(arg, "isRequired") is True:
            out.append(_asked(str(_get(arg, "valueHint") or arg.get("name") or f"argument-{len(out)}"), arg, inputs))
    return out


def _asked(hint: str, arg: dict[str, Any], inputs: list[Input]) -> str:
    """A required argument without a value: an input asked of the person, by its hint."""
    if not any(i.id == hint for i in inputs):
        inputs.append(Input(hint, str(arg.get("description") or ""), _get(arg, "isSecret") is True))
    return "${input:" + hint + "}"
