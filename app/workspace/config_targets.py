"""Config entries to the console's targets and back.

`target_of` expands an entry's `${env:NAME}` (from the environment given), `${input:id}` (from the values the person
gave) and `${userHome}`, and makes the `Target`: a stdio entry's `env` become the leading `NAME=value` assignments
of its command line (the transport gives them to the server as its environment), its `cwd` the working directory.
What is secret is the console's default (credential-shaped names, app/console/secrecy.py) and, beyond it, every
value the file says is secret: one taken from a `password: true` input, or a registry variable with `isSecret`.

`export_entry` writes a target as an `mcpServers` entry: the fields of the original entry the console does not
read are kept; when the target is still what the original made, the original's own values (with their
`${env:…}` references) are written back as they were. Secret values are masked unless the owner asks for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.console.target import Target
from app.mcp.headers import typed_header
from app.mcp.secret import MASK, Secret, reveal
from app.mcp.secret import MASK as MASKED
from app.mcp.stdio import is_assignment, leading_assignments
from app.workspace.configs import KNOWN, OAUTH_FIELDS, REFERENCE, ConfigFile, Entry, Input, read_oauth

OAUTH_BACK = {v: k for k, v in OAUTH_FIELDS.items()}


@dataclass(slots=True)
class Made:
    """What an entry became: its target (None: it could not become one) and the problems of its values."""

    entry: Entry
    target: Target | None
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # `${env:X}` / `${input:X}` with no value

    @property
    def ok(self) -> bool:
        return self.target is not None and not self.missing


def target_of(entry: Entry, config: ConfigFile, environ: Mapping[str, str],
              values: Mapping[str, str] | None = None) -> Made:
    """The entry as a target, its references expanded (`${env:…}` from `environ`, which the caller chooses: the
    command line's environment, or the console's without its own settings); what has no value is named in
    `missing`."""
    made = Made(entry, None)
    if entry.kind is None:
        return made
    values = values or {}
    inputs = {i.id: i for i in config.inputs}

    def expand(text: str) -> str:
        def one(match: Any) -> str:
            source, name = match.group(1), match.group(2)
            if source == "env":
                if name in environ:
                    return environ[name]
            else:
                given = values.get(name)
                if given is None and name in inputs and inputs[name].default:
                    given = inputs[name].default
                if given is not None:
                    return given
            said = f"${{{source}:{name}}}"
            if said not in made.missing:
                made.missing.append(said)
            return str(match.group(0))
        text = REFERENCE.sub(one, text)
        if MASKED in text and "a masked value (••••••)" not in made.missing:
            # An export without secrets writes masks: imported as they are, the server would get the bullets.
            made.missing.append("a masked value (••••••)")
        return text.replace("${userHome}", environ.get("HOME", "~"))

    secret = _secret_names(entry, inputs)
    if entry.kind == "http":
        url = expand(entry.url)
        if not url.startswith(("http://", "https://")):
            made.problems.append("the URL, its variables filled, does not start with http:// or https://")
            return made
        headers: dict[str, str | Secret] = {}
        for name, value in entry.headers.items():
            try:
                name, headers[name] = typed_header(f"{name}: {expand(value)}")
            except ValueError as exc:  # (never quoting the value: it may be a key)
                made.problems.append(f"header {name[:40]!r}: {exc}: left out")
        target = Target(kind="http", url=url, headers=headers, era=_era(entry.era))
        chosen = set(target.secret or ()) | {f"header:{k}" for k in headers if k in secret}
    else:
        env: list[str] = []
        for name, value in entry.env.items():
            line = f"{name}={expand(value)}"
            if is_assignment(line):
                env.append(line)
            else:
                made.problems.append(f"env {name[:40]!r} is not a variable name (letters, digits and _): left out")
        argv = [*env, expand(entry.command), *(expand(a) for a in entry.args)]
        cwd = expand(entry.cwd) if entry.cwd else None
        target = Target(kind="stdio", argv=list(argv), cwd=cwd, era=_era(entry.era))
        chosen = set(target.secret or ()) | {f"env:{line.partition('=')[0]}" for line in env
                                             if line.partition("=")[0] in secret}
        first = len(env) + 1
        chosen |= {f"arg:{first + i}" for i, raw in enumerate(entry.args) if _asks_password(raw, inputs)}
    if "${workspaceFolder}" in str(target.revealed()):
        made.problems.append("${workspaceFolder} is left as it is: the console has no workspace folder")
    target.seal(chosen)
    made.target = target
    return made


def _era(era: str) -> Any:
    return era if era in ("auto", "modern", "legacy", "sse-2024") else "auto"


def _secret_names(entry: Entry, inputs: Mapping[str, Input]) -> set[str]:
    """The env and header names whose values the file says are secret."""
    named = {**entry.env, **entry.headers}
    return set(entry.secret_names) | {k for k, v in named.items() if _asks_password(v, inputs)}


def _asks_password(value: str, inputs: Mapping[str, Input]) -> bool:
    return any(m.group(1) == "input" and m.group(2) in inputs and inputs[m.group(2)].password
               for m in REFERENCE.finditer(value))


def kept_original(entry: Entry, config: ConfigFile) -> dict[str, Any] | None:
    """The entry to keep beside a target for a round trip (a registry package is no `mcpServers` entry: none)."""
    return None if config.shape == "server.json" else dict(entry.original)


# --- export ----------------------------------------------------------------------------------------------------


def export_entry(target: Target, original: dict[str, Any] | None = None, made: dict[str, Any] | None = None,
                 oauth: Mapping[str, Any] | None = None, include_secrets: bool = False) -> dict[str, Any]:
    """A target as an `mcpServers` entry. `original` is the imported entry and `made` the target it made
    (`Target.revealed()` then): when the target is unchanged since, the original's values are written back as they
    were (its `${env:…}` references kept), else the target's own; unknown fields of the original are kept either
    way. `oauth` is the session's OAuth settings (app/mcp/oauth/steps.py names)."""
    original = dict(original or {})
    verbatim = made is not None and made == target.revealed() and "${input:" not in str(original)
    out = {k: v for k, v in original.items() if k not in KNOWN}
    if verbatim:
        out = {**original}
        out = _masked_values(out, target) if not include_secrets else out
    else:
        out.update(_fields(target, original, include_secrets))
    out.pop("oauth", None)
    kept: dict[str, Any] = original["oauth"] if isinstance(original.get("oauth"), dict) else {}
    if oauth is None and kept:  # the session has none of its own: the original's, read as the import read it
        oauth = read_oauth(Entry("", None, {}), kept)
    mapped = (*OAUTH_FIELDS, "scopes", "authorizationParams")
    written = {k: v for k, v in kept.items() if k not in mapped} | _oauth(oauth or {}, include_secrets)
    if written:
        out["oauth"] = written
    return out


def export_file(entries: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    return {"mcpServers": dict(entries)}


def _fields(target: Target, original: dict[str, Any], include_secrets: bool) -> dict[str, Any]:
    def value(v: str | Secret) -> str:
        return reveal(v) if include_secrets else str(v)

    out: dict[str, Any] = {}
    if target.kind == "http":
        out["type"] = "sse" if target.era == "sse-2024" else (
            original["type"] if original.get("type") in ("http", "streamable-http") else "http")
        out["url"] = value(target.url)
        if target.headers:
            out["headers"] = {k: value(v) for k, v in target.headers.items()}
    else:
        argv = target.argv
        lead = leading_assignments([reveal(a) for a in argv])
        if "type" in original:
            out["type"] = "stdio"
        out["command"] = value(argv[lead]) if lead < len(argv) else ""
        out["args"] = [value(a) for a in argv[lead + 1:]]
        env = {}
        for a in argv[:lead]:
            name, _, plain = reveal(a).partition("=")
            env[name] = plain if include_secrets or not isinstance(a, Secret) else MASK
        if env:
            out["env"] = env
        if target.cwd is not None:
            out["cwd"] = value(target.cwd)
    if target.era in ("modern", "legacy") or (target.era == "auto" and "protocolEra" in original):
        out["protocolEra"] = target.era
    return out


def _masked_values(data: Any, target: Target) -> Any:
    """The original's strings with the target's secret values masked in them (a literal key in `env`)."""
    secrets = sorted((v for v in target.secret_values().values() if len(v) >= 3), key=len, reverse=True)
    secrets += [line.partition("=")[2] for line in secrets if is_assignment(line)]
    if not secrets:
        return data

    def mask(value: Any) -> Any:
        if isinstance(value, str):
            for secret in secrets:
                if secret and secret in value:
                    value = value.replace(secret, MASK)
            return value
        if isinstance(value, list):
            return [mask(v) for v in value]
        if isinstance(value, dict):
            return {k: mask(v) for k, v in value.items()}
        return value

    return {k: (mask(v) if k in KNOWN else v) for k, v in data.items()}


def _oauth(settings: Mapping[str, Any], include_secrets: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in settings.items():
        if name in OAUTH_BACK and isinstance(value, str) and value:
            out[OAUTH_BACK[name]] = value if include_secrets or name != "client_secret" else MASK
        elif name == "scope" and isinstance(value, str) and value:
            out["scopes"] = value.split()
        elif name == "extra_params" and isinstance(value, dict) and value:
            out["authorizationParams"] = dict(value)
    return out
