"""Layer boundaries, checked on the source: app/mcp knows nothing of the web app, and nobody imports the demo."""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
CORE_FORBIDDEN = ("fastapi", "starlette", "jinja2", "uvicorn", "app.web", "app.console", "app.demo")


@dataclass(frozen=True)
class Import:
    path: str  # relative to the repository root
    module: str  # absolute dotted name (for `from X import a, b`: X)
    names: tuple[str, ...]  # the a, b of `from X import a, b`; empty for `import X`
    function: str | None  # the innermost enclosing function, if any
    guards: tuple[str, ...]  # source of every enclosing `if` test

    def touches(self, prefix: str) -> bool:
        """True when this statement loads `prefix` or a module under it (`from app import demo` counts)."""
        return is_under(self.module, prefix) or any(is_under(f"{self.module}.{n}", prefix) for n in self.names)


def is_under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a (possibly relative) `from … import` names, seen from `module`."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_in_source(source: str, rel: str, module: str, is_package: bool = False) -> list[Import]:
    found: list[Import] = []

    def visit(node: ast.AST, function: str | None, guards: tuple[str, ...]) -> None:
        if isinstance(node, ast.Import):
            found.extend(Import(rel, alias.name, (), function, guards) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names)
            found.append(Import(rel, resolve(module, is_package, node), names, function, guards))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("import_module", "__import__"):
                found.append(Import(rel, node.args[0].value, (), function, guards))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.If):
            guards = (*guards, ast.get_source_segment(source, node.test) or "")
        for child in ast.iter_child_nodes(node):
            visit(child, function, guards)

    visit(ast.parse(source, filename=rel), None, ())
    return found


def imports_in(path: Path) -> list[Import]:
    return imports_in_source(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), module_name(path),
                             is_package=path.name == "__init__.py")


SAMPLE = """
import os, starlette.requests as sr
from . import sse
from ..web import app as web_app
from app import demo

def later(command):
    if command == "x":
        import jinja2
    importlib.import_module("uvicorn")
"""


def test_the_import_walker_sees_absolute_relative_nested_and_dynamic_imports() -> None:
    # The boundary tests below are only as good as this walker, so check it on a known sample.
    found = imports_in_source(SAMPLE, "app/mcp/sample.py", "app.mcp.sample")
    assert [(i.module, i.names, i.function) for i in found] == [
        ("os", (), None), ("starlette.requests", (), None), ("app.mcp", ("sse",), None),
        ("app.web", ("app",), None), ("app", ("demo",), None), ("jinja2", (), "later"), ("uvicorn", (), "later")]
    assert found[5].guards == ('command == "x"',)
    assert [any(i.touches(bad) for bad in CORE_FORBIDDEN) for i in found] == [
        False, True, False, True, True, True, True]


def test_relative_imports_in_a_package_init_resolve_against_the_package_itself() -> None:
    found = imports_in_source("from . import sse\nfrom .. import web", "app/mcp/__init__.py", "app.mcp",
                              is_package=True)
    assert [(i.module, i.names) for i in found] == [("app.mcp", ("sse",)), ("app", ("web",))]
    assert found[1].touches("app.web")


def test_no_module_under_app_mcp_imports_the_web_stack_or_other_layers() -> None:
    core = sorted(APP.joinpath("mcp").rglob("*.py"))
    assert len(core) >= 10  # the walk really found the core
    offenders = [f"{i.path}: {i.module} {i.names}" for path in core for i in imports_in(path)
                 if any(i.touches(bad) for bad in CORE_FORBIDDEN)]
    assert offenders == []


def test_importing_every_core_module_loads_no_web_framework() -> None:
    modules = [module_name(p) for p in sorted(APP.joinpath("mcp").rglob("*.py"))]
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            f"forbidden = {CORE_FORBIDDEN!r}\n"
            "bad = sorted(m for m in sys.modules if any(m == b or m.startswith(b + '.') for b in forbidden))\n"
            "print(','.join(bad))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_the_headless_commands_and_the_argument_checks_load_no_web_server() -> None:
    # `call`, `check` and a refused `serve` run as processes in many tests and in CI scripts: uvicorn, FastAPI and
    # the console's app loaded up front cost each one about a second before its first line of work.
    code = ("import sys\n"
            "import app.cli\n"
            "app.cli.parser().parse_args(['check', 'http://127.0.0.1:9/mcp'])\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('uvicorn', 'fastapi')\n"
            "             or m in ('app.web.app', 'app.serving'))\n"
            "print(','.join(bad))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_only_the_cli_demo_server_command_imports_app_demo() -> None:
    outside = sorted(p for p in APP.rglob("*.py") if APP / "demo" not in p.parents)
    assert len(outside) >= 20  # the walk really found the rest of the app
    found = [i for path in outside for i in imports_in(path) if i.touches("app.demo")]
    # The launcher of `demo --oauth`'s authorization server (a Node program) is the one other door: it loads none of
    # the demo server (test below).
    server = [i for i in found if not i.touches("app.demo.oauth_provider")]
    described = [(i.path, i.module, i.names, i.function) for i in server]
    assert described == [("app/cli.py", "app.demo.run", ("main",), "main")]
    assert any('"demo-server"' in guard for guard in server[0].guards), server[0].guards
    launcher = [i for i in found if i not in server]
    # Only when `demo --oauth` starts it, and for its type (a TYPE_CHECKING import, never run).
    assert all(i.path == "app/cli.py" and (i.function == "start_demo_provider" or "TYPE_CHECKING" in i.guards)
               for i in launcher), launcher


def test_the_oauth_provider_launcher_loads_none_of_the_demo_server() -> None:
    code = ("import sys\n"
            "import app.demo.oauth_provider\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'uvicorn', 'starlette')\n"
            "             or (m.startswith('app.demo.') and not m.startswith('app.demo.oauth_provider')))\n"
            "print(','.join(bad))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
