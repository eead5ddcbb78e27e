"""Builds the FastAPI application around one SessionManager."""

from __future__ import annotations

import inspect
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import Receive, Scope, Send

from app.console.cluster import Cluster
from app.console.manager import SessionManager
from app.console.session import Target
from app.console.store import Store
from app.console.team_checks import team_problems
from app.settings import Settings
from app.web import (
    actions,
    app_routes,
    auth_routes,
    config_routes,
    export_routes,
    form_routes,
    live_routes,
    op_routes,
    ping_routes,
    routes,
    share_routes,
    surface_routes,
    task_routes,
    workspace_routes,
    ws,
)
from app.web.app_routes import sandbox_host
from app.web.deps import (
    LinkEnded,
    TargetHTMLResponse,
    TargetJSONResponse,
    Web,
)
from app.web.limits import BodyLimitMiddleware
from app.web.public_host import resolve_public_host
from app.web.render import STATIC, EventRenderer, make_env
from app.web.routing import RouteToOwner
from app.web.security import Guard, GuardMiddleware, token_problem

# FastAPI (0.16x) asks on every request whether OpenTelemetry providers are configured (env and provider
# lookups, in the profile of every call). The console configures none and exports no telemetry: say so once.
_NO_TELEMETRY: dict[str, Any] = (
    {"telemetry": {"tracing": False, "metrics": False, "logs": False}}
    if "telemetry" in inspect.signature(FastAPI.__init__).parameters else {})


class PagesGZipMiddleware(GZipMiddleware):
    """Compresses what is fetched (pages, JSON twins, exports, static files), never the answer to a POST.

    A POST's answer is a call's result or a fragment for the one tab that asked, read at once, mostly over
    loopback; compressing it cost each call a fresh zlib state (about 0.15–0.2 ms, measured in
    bench.latency's profile), more than its few kilobytes take to send.
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST":
            await self.app(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def create_app(settings: Settings, store: Store | None = None, initial_targets: list[Target] | None = None,
               cluster: Cluster | None = None) -> FastAPI:
    problem = token_problem(settings.token)
    if problem:
        raise ValueError(problem)
    refused = team_problems(settings)
    if refused:
        raise ValueError(" ".join(refused))
    token = settings.token or secrets.token_urlsafe(24)
    settings.token = token
    settings.public_host = resolve_public_host(settings)
    env = make_env(settings.public_host)
    renderer = EventRenderer(env)
    manager = SessionManager(settings, renderer, store, cluster)
    renderer.manager = manager
    extra = {h.strip() for h in settings.allowed_hosts.split(",") if h.strip()}
    # The advertise host is for the team's own signed requests: no team key, no such host.
    internal = {urlsplit(settings.advertise_url).hostname or ""} if settings.advertise_url and settings.team_secret \
        else set()
    sandbox = sandbox_host(settings)
    if sandbox is not None and sandbox == settings.public_host.lower():
        raise ValueError(f"sandbox_origin names the console's own host {sandbox!r}: MCP Apps' views must run under "
                         "another host name (MCP_CONSOLE_SANDBOX_ORIGIN).")
    guard = Guard(token, extra | ({sandbox} if sandbox else set()), settings.public_host, settings.port,
                  internal_hosts=internal)
    guard.sandbox_host = sandbox

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await manager.start_services()
        manager.restore()
        for target in initial_targets or []:
            # The session a restart brought back for this very target is taken up again (`mcp-console demo` started
            # twice on one data directory: what waited for input there can still be answered), else a new one.
            session = manager.restored_for(target) or manager.create(target)
            await manager.settle(session)
            app.state.initial_sessions.append(session.id)
            manager.start(session)
        yield
        await manager.shutdown()

    app = FastAPI(title="MCP Console", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None,
              **_NO_TELEMETRY)
    app.state.web = Web(manager, env, guard)
    app.state.initial_sessions = []
    app.include_router(actions.router)  # first: the calls from tabs and scripts are matched before any page
    app.include_router(task_routes.router)
    app.include_router(form_routes.router)
    app.include_router(routes.router)
    app.include_router(ping_routes.router)
    app.include_router(auth_routes.router)
    app.include_router(op_routes.router)
    app.include_router(live_routes.router)
    app.include_router(share_routes.router)
    app.include_router(export_routes.router)
    app.include_router(surface_routes.router)
    app.include_router(config_routes.router)
    app.include_router(ws.router)
    app.include_router(app_routes.router)
    app.include_router(workspace_routes.router)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if "hx-request" in request.headers:
            fragment = env.get_template("_error.html").render(status=exc.status_code, detail=exc.detail)
            return TargetHTMLResponse(fragment, status_code=exc.status_code)
        if "text/html" in request.headers.get("accept", "") and isinstance(exc, LinkEnded):
            return TargetHTMLResponse(env.get_template("link_ended.html").render(state=exc.state, role=exc.role,
                                                                            detail=exc.detail), status_code=401)
        if "text/html" in request.headers.get("accept", ""):
            template = "unauthorized.html" if exc.status_code == 401 else "error.html"
            return TargetHTMLResponse(env.get_template(template).render(status=exc.status_code, detail=exc.detail),
                                status_code=exc.status_code)
        return TargetJSONResponse({"error": exc.detail}, status_code=exc.status_code)

    app.add_exception_handler(HTTPException, http_error)  # type: ignore[arg-type]
    # Inside the guard (Host and Origin checked, cookies dropped off the public host) and before every route.
    app.add_middleware(RouteToOwner, web=app.state.web)
    # Small JSON replies go uncompressed: on loopback compressing them costs more than it saves.
    app.add_middleware(PagesGZipMiddleware, minimum_size=2048)
    app.add_middleware(GuardMiddleware, guard=guard)
    app.add_middleware(BodyLimitMiddleware, settings=settings)  # outermost: bodies bounded before anything reads them

    return app
