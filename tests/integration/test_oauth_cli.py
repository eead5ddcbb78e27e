"""`mcp-console call|list|check --oauth …` against a real authorization server with a person's login.

The provider is oidc-provider (tests/oauth_services.py); the person is `login_with_httpx`, which walks its login and
consent pages and hands back the callback URL; the test then plays the browser's last hop and GETs that URL, which
points at the command's own loopback listener. The command runs as a process, as a person or a CI job runs it.
"""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from app.mcp.secret import MASK
from tests.integration.conftest import REPO_ROOT, child_env, mcp_console
from tests.oauth_services import OidcProvider, callback_params, free_port, login_with_httpx

pytestmark = pytest.mark.processes

RUN_TIMEOUT_S = 60.0
ANNOUNCED = "· mcp-console: open this URL in a browser to authorize (waiting for the callback):"
JWT = re.compile(r"eyJ[\w-]+\.eyJ[\w-]+\.")
STEPS = ("resource metadata", "server metadata", "registration", "authorization", "callback", "token")


@dataclass
class Cli:
    """One `mcp-console` process whose stderr is read line by line while it runs."""

    proc: subprocess.Popen[str]
    lines: queue.Queue[str | None] = field(default_factory=queue.Queue)
    seen: list[str] = field(default_factory=list)
    stdout: list[str] = field(default_factory=list)
    callbacks: list[str] = field(default_factory=list)  # each brought to the listener

    def __post_init__(self) -> None:
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.lines), daemon=True).start()
        self._reader = threading.Thread(target=lambda: self.stdout.append(self._read(self.proc.stdout)), daemon=True)
        self._reader.start()

    @staticmethod
    def _pump(stream: IO[str] | None, lines: queue.Queue[str | None]) -> None:
        assert stream is not None
        for line in stream:
            lines.put(line)
        lines.put(None)

    @staticmethod
    def _read(stream: IO[str] | None) -> str:
        assert stream is not None
        return stream.read()

    def _next_line(self, deadline: float) -> str | None:
        try:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            pytest.fail(f"mcp-console said nothing more in time; its stderr so far: {''.join(self.seen)}")
        if line is not None:
            self.seen.append(line)
        return line

    def authorization_url(self) -> str:
        """The URL printed after the announcement (fails if the process ends first)."""
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while (line := self._next_line(deadline)) is not None:
            if line.rstrip("\n") == ANNOUNCED:
                url = self._next_line(deadline)
                assert url is not None
                return url.strip()
        pytest.fail(f"mcp-console ended without printing an authorization URL; its stderr: {''.join(self.seen)}")

    def authorize_as_a_person(self) -> str:
        """Log in and consent at the printed URL, then bring the callback to the listener; the URL."""
        url = self.authorization_url()
        callback = login_with_httpx(url)
        answered = httpx.get(callback, timeout=10)
        assert answered.status_code == 200 and "you may close this tab" in answered.text, answered.text
        self.callbacks.append(callback)
        return url

    def finish(self) -> tuple[int, str, str]:
        try:
            code = self.proc.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            # A hang says where it hangs: SIGABRT makes faulthandler (PYTHONFAULTHANDLER, set by `cli`) print every
            # thread's stack on stderr before the process dies.
            self.proc.send_signal(signal.SIGABRT)
            self.proc.wait(timeout=10)
            self._reader.join(timeout=5)
            rest = []
            while not self.lines.empty():
                rest.append(self.lines.get_nowait() or "")
            pytest.fail(f"mcp-console did not end in {RUN_TIMEOUT_S:g} s; its stderr: {''.join(self.seen + rest)}")
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while self._next_line(deadline) is not None:
            pass
        self._reader.join(timeout=max(0.0, deadline - time.monotonic()))
        assert self.stdout, "stdout was not read to its end in time"
        return code, self.stdout[0], "".join(self.seen)


def _as_from_a_terminal() -> None:
    """The child starts with Ctrl-C's default meaning, as a shell gives it. It inherits an ignored SIGINT otherwise
    (exec keeps SIG_IGN), and then Python installs no handler and asyncio none either: in the full suite the child of
    the Ctrl-C test once sat idle in its loop for the whole 60 s, its SIGINT ignored (faulthandler's stack showed
    the loop's select and nothing else)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def env_of(extra: dict[str, str] | None) -> dict[str, str]:
    return {**child_env(), "PYTHONFAULTHANDLER": "1", **(extra or {})}  # see Cli.finish


@pytest.fixture
def cli() -> Iterator[Any]:
    started: list[subprocess.Popen[str]] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Cli:
        proc = subprocess.Popen([sys.executable, "-m", "app", *args], cwd=REPO_ROOT, env=env_of(env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=_as_from_a_terminal)
        started.append(proc)
        return Cli(proc)

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def redirect(path: str = "/callback") -> str:
    return f"http://127.0.0.1:{free_port()}{path}"


def interactive(*args: str) -> list[str]:
    return ["--oauth", "interactive", "--redirect-uri", redirect(), *args]


def scope_of(url: str) -> set[str]:
    return set(parse_qs(urlsplit(url).query)["scope"][0].split())


def leaked(texts: list[str], *secrets: str) -> list[str]:
    """Which of the secrets (and any JWT) appear in any of the texts."""
    found = [s for s in secrets if s and any(s in text for text in texts)]
    return found + [m.group(0) for text in texts for m in JWT.finditer(text)]


def har_requests(path: Path) -> list[dict[str, Any]]:
    return [entry["request"] for entry in json.loads(path.read_text())["log"]["entries"]]


def test_call_authorizes_interactively_and_keeps_every_secret_out_of_its_output(
        cli: Any, protected_demo: str, tmp_path: Path) -> None:
    har = tmp_path / "call.har"
    run = cli("call", protected_demo, "echo", "--arg", "text=behind oauth", "--har", str(har), *interactive())
    url = run.authorize_as_a_person()
    code, stdout, stderr = run.finish()
    assert code == 0, stderr
    assert json.loads(stdout)["result"]["content"][0]["text"] == "behind oauth"
    said = [stderr.index(f"OAuth {step}:") for step in STEPS]
    assert said == sorted(said), stderr
    assert scope_of(url) >= {"mcp:read"}
    assert leaked([stdout, stderr, har.read_text()], callback_params(run.callbacks[0])["code"]) == []
    token = next(r for r in har_requests(har) if r["url"].endswith("/token"))
    assert parse_qs(token["postData"]["text"])["code_verifier"] == [MASK]


def test_a_write_asks_again_with_the_union_of_the_scopes_and_completes(cli: Any, protected_demo: str) -> None:
    run = cli("call", protected_demo, "write_note", "--arg", "text=stepped up", *interactive())
    first = run.authorize_as_a_person()
    second = run.authorize_as_a_person()
    code, stdout, stderr = run.finish()
    assert code == 0, stderr
    assert "mcp:write" not in scope_of(first) and scope_of(second) >= {"mcp:read", "mcp:write"}
    assert "note saved" in json.loads(stdout)["result"]["content"][0]["text"]
    assert "step-up 1 of 3" in stderr


def test_a_pre_registered_confidential_client_skips_registration_and_authenticates_at_the_token_endpoint(
        cli: Any, protected_demo: str, oidc_provider: OidcProvider, tmp_path: Path) -> None:
    har = tmp_path / "pre.har"  # the provider registered this client for /oauth/callback on any loopback port
    run = cli("call", protected_demo, "echo", "--arg", "text=confidential", "--har", str(har), "--oauth",
              "interactive", "--redirect-uri", redirect("/oauth/callback"), "--client-id", oidc_provider.client_id,
              env={"MCP_CONSOLE_CLIENT_SECRET": oidc_provider.client_secret})
    run.authorize_as_a_person()
    code, stdout, stderr = run.finish()
    assert code == 0, stderr
    assert f"pre-registered client id {oidc_provider.client_id}" in stderr and "with a client secret" in stderr
    requests = har_requests(har)
    assert not [r for r in requests if r["url"].endswith("/reg")]
    token = next(r for r in requests if r["url"] == f"{oidc_provider.issuer}/token")
    methods = oidc_provider.metadata()["token_endpoint_auth_methods_supported"]
    headers = {h["name"].lower(): h["value"] for h in token["headers"]}
    if "client_secret_basic" in methods:
        assert headers["authorization"].startswith("Basic ")
    else:
        assert "client_secret" in token["postData"]["text"]
    assert leaked([stdout, stderr, har.read_text()], oidc_provider.client_secret,
                  callback_params(run.callbacks[0])["code"]) == []


def test_follow_stops_at_the_login_page_and_names_interactive_mode(protected_demo: str) -> None:
    done = mcp_console("call", protected_demo, "echo", "--arg", "text=x", "--oauth", "follow")
    assert done.returncode == 2, done.stderr
    # The login page itself (its hops carry the provider's interaction cookie), not an error on the way to it.
    assert "OAuth stopped at authorization: the authorization server answered HTTP 200 (text/html) instead of " \
           "redirecting: it wants a person" in done.stderr, done.stderr
    assert "run with --oauth interactive" in done.stderr
    assert "the server refused the request: HTTP 401; WWW-Authenticate: Bearer" in done.stderr


def test_the_har_shows_an_oauth_metadata_fetch_as_the_get_of_json_it_was(protected_demo: str, tmp_path: Path) -> None:
    har = tmp_path / "follow.har"
    mcp_console("call", protected_demo, "echo", "--arg", "text=x", "--oauth", "follow", "--har", str(har))
    entry = next(e for e in json.loads(har.read_text())["log"]["entries"]
                 if "/.well-known/oauth-protected-resource" in e["request"]["url"])
    assert entry["request"]["method"] == "GET"
    assert entry["response"]["content"]["mimeType"].startswith("application/json")
    assert json.loads(entry["response"]["content"]["text"])["resource"] == protected_demo


@pytest.mark.parametrize("mode", ["off", "auto"])
def test_without_oauth_the_401_and_its_challenge_end_the_run(mode: str, protected_demo: str, tmp_path: Path) -> None:
    har = tmp_path / "off.har"
    done = mcp_console("call", protected_demo, "echo", "--arg", "text=x", "--oauth", mode, "--har", str(har))
    assert done.returncode == 2, done.stderr
    assert "HTTP 401" in done.stderr and 'WWW-Authenticate: Bearer resource_metadata="' in done.stderr
    assert "OAuth resource metadata" not in done.stderr and "run with --oauth interactive" in done.stderr
    assert len(har_requests(har)) == 1


def test_an_unknown_client_id_fails_at_the_authorization_step_with_the_servers_error_and_a_fix(
        protected_demo: str) -> None:
    done = mcp_console("call", protected_demo, "echo", "--arg", "text=x", "--oauth", "follow",
                       "--client-id", "nobody-registered-this")
    assert done.returncode == 2, done.stderr
    assert "pre-registered client id nobody-registered-this" in done.stderr
    assert "OAuth stopped at authorization: the authorization server refused the authorization request with HTTP " \
           "400 (text/html), invalid_client: check --client-id" in done.stderr, done.stderr


def test_check_authorizes_interactively_and_reports_the_flows_findings(cli: Any, protected_demo: str) -> None:
    run = cli("check", protected_demo, "--json", "--listen-wait", "0.2", "--settle", "0.05", *interactive())
    run.authorize_as_a_person()
    code, stdout, stderr = run.finish()
    assert code == 0, stderr
    findings = json.loads(stdout)["findings"]
    loopback = [f for f in findings if f["rule"] == "oauth.loopback-http"]
    assert loopback and {f["severity"] for f in loopback} == {"note"}, findings
    assert any("token_endpoint http://127.0.0.1:" in f["message"] for f in loopback), loopback


def test_a_refusal_brought_back_is_not_called_authorized_and_ends_at_the_callback_step(
        cli: Any, protected_demo: str, oidc_provider: OidcProvider) -> None:
    run = cli("call", protected_demo, "echo", "--arg", "text=x", *interactive())
    asked = {k: v[0] for k, v in parse_qs(urlsplit(run.authorization_url()).query).items()}
    refused = httpx.get(asked["redirect_uri"], params={"error": "access_denied", "state": asked["state"],
                                                       "iss": oidc_provider.issuer}, timeout=10)
    assert refused.status_code == 200 and "Not authorized" in refused.text, refused.text
    code, _stdout, stderr = run.finish()
    assert code == 2, stderr
    assert "OAuth stopped at callback: the authorization server refused: access_denied" in stderr, stderr


def test_ctrl_c_while_waiting_for_the_callback_ends_with_130_and_no_traceback(cli: Any, protected_demo: str) -> None:
    run = cli("call", protected_demo, "echo", "--arg", "text=x", *interactive())
    run.authorization_url()
    run.proc.send_signal(signal.SIGINT)
    code, _stdout, stderr = run.finish()
    assert code == 130 and "Traceback" not in stderr, stderr
    assert stderr.rstrip().endswith("· mcp-console: interrupted"), stderr


def test_list_tools_authorizes_interactively_too(cli: Any, protected_demo: str) -> None:
    run = cli("list", "tools", protected_demo, "--json", *interactive())
    run.authorize_as_a_person()
    code, stdout, stderr = run.finish()
    assert code == 0, stderr
    assert {"echo", "write_note"} <= {tool["name"] for tool in json.loads(stdout)["tools"]}
    assert leaked([stdout, stderr], callback_params(run.callbacks[0])["code"]) == []
