"""Import a config file (paste or upload): a preview of what each server would become, then sessions for the
chosen ones; export a session's target, or every session's, as an `mcpServers` file. Owner only.

A created session is not connected by the import: a stdio entry starts its process only when the owner clicks
Connect on its page (a POST), and an HTTP entry connects at once only when the owner ticked that. `${env:NAME}` is
read from the console's environment without its own settings (MCP_CONSOLE_…: a file must not send the owner token
to a server), `${input:ID}` from the preview's form.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from app.console.session import MAX_NAME as SESSION_NAME_MAX
from app.console.session import ConsoleSession
from app.console.target import readable_quote
from app.mcp.secret import reveal
from app.mcp.stdio import inherited_env
from app.web.deps import Owner, TargetJSONResponse, principal, respond, session_or_404
from app.workspace.config_targets import export_entry, export_file, kept_original, target_of
from app.workspace.configs import ConfigError, ConfigFile, read_config

router = APIRouter()
MAX_CONFIG_BYTES = 1024 * 1024


async def _config_text(request: Request) -> tuple[str, Any]:
    """The pasted text, else the uploaded file's; and the whole form."""
    form = await request.form()
    text = form.get("text")
    upload = form.get("file")
    if upload is not None and not isinstance(upload, str) and upload.filename:
        data = await upload.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise HTTPException(413, "A config file is at most 1 MB")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise HTTPException(400, "The config file is not UTF-8 text") from exc
    if not isinstance(text, str) or not text.strip():
        raise HTTPException(400, "Paste a config file's text or choose a file")
    return text, form


def _read(text: str) -> ConfigFile:
    try:
        return read_config(text)
    except ConfigError as exc:
        raise HTTPException(400, f"Cannot import this config: {exc}") from exc


ENDPOINT_KEYS = ("authorization_endpoint", "token_endpoint")  # where the owner's code and verifier would go


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _runs(target: Any) -> str:
    """The command a click would start, exactly: only the leading NAME=value assignments keep their secret values
    masked (what a server is given, not what runs)."""
    words, leading = [], True
    for arg in target.argv:
        text = reveal(arg)
        if leading and _ASSIGNMENT.match(text):
            words.append(readable_quote(str(arg)))
            continue
        leading = False
        words.append(readable_quote(text))
    return " ".join(words)


def preview(config: ConfigFile, values: dict[str, str] | None = None, reveal_commands: bool = True) -> dict[str, Any]:
    """What each entry would become, its secret values masked: the preview page and its JSON twin. A stdio entry's
    command is also shown exactly as it would run (`runs`) to the owner outside presenter mode: a value masked as a
    secret is still a command a click would start."""
    environ = inherited_env()
    rows: list[dict[str, Any]] = []
    for entry in config.entries:
        made = target_of(entry, config, environ, values or {})
        target = made.target
        secret = set(target.secret or ()) if target is not None else set()
        env_missing = [m for m in made.missing if m.startswith("${env:")]
        masked = [m for m in made.missing if not m.startswith("${")]
        rows.append({
            "name": entry.name, "kind": entry.kind or "not understood", "era": entry.era,
            "target": target.shown() if target is not None else "",
            "headers": [{"name": k, "secret": f"header:{k}" in secret} for k in entry.headers],
            "env": [{"name": k, "secret": f"env:{k}" in secret} for k in entry.env],
            "runs": _runs(target) if reveal_commands and target is not None and target.kind == "stdio" else "",
            "oauth": sorted(entry.oauth),
            "endpoints": [{"name": k, "value": str(entry.oauth[k])} for k in ENDPOINT_KEYS if entry.oauth.get(k)],
            "unknown": entry.unknown, "ignored": entry.ignored,
            "reads_env": [name for source, name in entry.references() if source == "env"],
            # Every input the entry uses, a default or not: a default fills it silently otherwise.
            "inputs": sorted({name for source, name in entry.references() if source == "input"}),
            "problems": [*entry.problems, *made.problems,
                         *(f"{m} is not set in the console's environment" for m in env_missing),
                         *(f"{m}: an export without secrets; type the real value in the file" for m in masked)],
            "notes": entry.notes, "ok": target is not None and not env_missing and not masked})
    asked = {i for row in rows for i in row["inputs"]}
    inputs = [{"id": i.id, "description": i.description, "password": i.password, "default": i.default}
              for i in config.inputs if i.id in asked]
    return {"shape": config.shape, "servers": rows, "inputs": inputs, "problems": config.problems}


@router.post("/configs/preview")
async def config_preview(request: Request, w: Owner) -> Response:
    text, _form = await _config_text(request)
    data = preview(_read(text), reveal_commands=principal(request).sees_secrets)
    page = w.render("configs_preview.html", preview=data, text=text, me=principal(request), here="/")
    return respond(request, False, data, page)


@router.post("/configs/create")
async def config_create(request: Request, w: Owner) -> Response:
    """Sessions for the chosen servers, none started (a stdio process starts on the owner's Connect)."""
    text, form = await _config_text(request)
    config = _read(text)
    chosen = [str(n) for n in form.getlist("server")]
    values = {k[len("input:"):]: v for k, v in form.multi_items() if k.startswith("input:") and isinstance(v, str)}
    connect_http = form.get("connect_http") == "1"
    created, skipped = [], []
    for name in chosen:
        entry = config.entry(name)
        if entry is None:
            skipped.append({"name": name, "why": "not in the file"})
            continue
        made = target_of(entry, config, inherited_env(), values)
        if made.target is None or made.missing:
            why = "; ".join(entry.problems) if made.target is None else f"no value for {', '.join(made.missing)}"
            skipped.append({"name": name, "why": why})
            continue
        session = w.manager.create(made.target)
        session.rename("".join(c for c in entry.name if c.isprintable()).strip()[:SESSION_NAME_MAX])
        oauth = dict(entry.oauth)
        if form.get("oauth_endpoints") != "1":
            # A file's endpoint overrides receive the owner's authorization code and PKCE verifier: used only when
            # the owner ticked that they trust them, having seen them in the preview.
            for key in ENDPOINT_KEYS:
                oauth.pop(key, None)
        session.keep_config(kept_original(entry, config), made.target.revealed(), oauth)
        await w.manager.settle(session)
        if connect_http and made.target.kind == "http":
            w.manager.start(session)
        created.append({"name": entry.name, "id": session.id, "kind": made.target.kind,
                        "url": f"/sessions/{session.id}"})
    if not created:
        raise HTTPException(400, "No session created: " + ("; ".join(f"{s['name']}: {s['why']}" for s in skipped)
                                                           or "choose at least one server"))
    workspace = str(form.get("workspace") or "").strip()
    ws = w.manager.workspaces.create(workspace, [c["id"] for c in created]) if workspace else None
    if "application/json" in request.headers.get("accept", ""):
        return TargetJSONResponse({"created": created, "skipped": skipped, "workspace": ws.id if ws else None})
    if ws is not None:
        return RedirectResponse(f"/workspaces/{ws.id}", status_code=303)
    return RedirectResponse(created[0]["url"] if len(created) == 1 else "/", status_code=303)


def _include_secrets(request: Request) -> bool:
    return principal(request).sees_secrets and request.query_params.get("secrets") == "1"


def _entry_of(s: ConsoleSession, include_secrets: bool) -> dict[str, Any]:
    original, made, oauth = s.config_entry()
    return export_entry(s.target, original, made, oauth or None, include_secrets)


def _download(data: dict[str, Any], filename: str) -> Response:
    return Response(json.dumps(data, indent=2, ensure_ascii=False) + "\n", media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})


def _file_name(s: ConsoleSession, taken: set[str]) -> str:
    base = s.name.strip() or s.id
    name, n = base, 2
    while name in taken:
        name, n = f"{base} ({n})", n + 1
    taken.add(name)
    return name


@router.get("/sessions/{session_id}/config.json")
async def session_config(request: Request, session_id: str, w: Owner) -> Response:
    s = session_or_404(w, session_id)
    if s.read_only:
        raise HTTPException(409, "An imported session file's copy has no target of its own to export")
    secrets = _include_secrets(request)
    data = export_file({_file_name(s, set()): _entry_of(s, secrets)})
    return _download(data, f"mcp-servers-{s.id}{'-with-secrets' if secrets else ''}.json")


@router.get("/configs/export.json")
async def all_configs(request: Request, w: Owner) -> Response:
    secrets, taken = _include_secrets(request), set[str]()
    sessions = sorted((s for s in w.manager.sessions.values() if not s.read_only), key=lambda s: s.created)
    data = export_file({_file_name(s, taken): _entry_of(s, secrets) for s in sessions})
    return _download(data, f"mcp-servers{'-with-secrets' if secrets else ''}.json")
