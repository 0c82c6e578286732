"""The package's shape: layers without upward imports, a small public surface, no lazy imports.

``.importlinter`` declares the layers (docs/architecture.md, "Layers"); ``lint-imports`` checks
them. These tests run it, make sure no package or top-level module escapes the contract, and
keep the public ``__all__`` lists short and importable.
"""

from __future__ import annotations

import ast
import configparser
import importlib
import inspect
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "llamon_agent"
CONTRACT = ROOT / ".importlinter"
#: the entry point of the import-linter installed next to the Python running the tests
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

MAX_TOP_LEVEL = 30
#: modules whose ``__all__`` is public API: every name in it must import
PUBLIC = (
    "llamon_agent",
    "llamon_agent.errors",
    "llamon_agent.client",
    "llamon_agent.stores",
    "llamon_agent.tool_review",
    "llamon_agent.human_review",
    "llamon_agent.orchestrator",
    "llamon_agent.core.hitl",
    "llamon_agent.core.deadlines",
)


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    assert LINT_IMPORTS.exists(), f"{LINT_IMPORTS} is missing: install the test extra"
    # no cache: the run writes nothing into the repository
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache", ".importlinter"],
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
    )


def _layers() -> list[list[str]]:
    """The package's layers, top to bottom, each a list of its sibling modules: the one layers
    contract of ``.importlinter`` over whole packages (contracts inside a package, with
    ``containers``, order that package's own modules)."""
    config = configparser.ConfigParser()
    config.read(CONTRACT)
    contracts = [config[s] for s in config.sections()
                 if config[s].get("type") == "layers" and "containers" not in config[s]]
    assert len(contracts) == 1, "expected one package-level layers contract in .importlinter"
    lines = [line.strip() for line in contracts[0]["layers"].splitlines() if line.strip()]
    # ``|`` separates independent siblings, ``:`` dependent ones; ``(name)`` marks an optional layer
    return [[m.strip().strip("()") for m in re.split(r"[|:]", line)] for line in lines]


def test_imports_follow_the_layers() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, f"lint-imports failed:\n{result.stdout}\n{result.stderr}"
    assert "0 broken" in result.stdout, result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The check above can fail: in a copy of the package, ``core`` importing ``server`` (the
    bottom reaching for the top) is reported as a broken contract."""
    shutil.copytree(PACKAGE, tmp_path / "llamon_agent",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(CONTRACT, tmp_path / ".importlinter")
    clock = tmp_path / "llamon_agent" / "core" / "clock.py"
    clock.write_text(clock.read_text() + "\nfrom ..server import app  # noqa: E402\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout
    assert "llamon_agent.core.clock -> llamon_agent.server.app" in result.stdout, result.stdout


def test_every_package_and_module_is_in_the_layers() -> None:
    """A new subpackage or top-level module cannot escape the contract by not being listed."""
    declared = {module for layer in _layers() for module in layer}
    found = {f"llamon_agent.{info.name}" for info in pkgutil.iter_modules([str(PACKAGE)])}
    assert found - declared == set(), "add these to the layers in .importlinter"
    assert declared - found == set(), "these layers name nothing that exists"


def test_the_top_level_exports_what_an_author_uses() -> None:
    import llamon_agent

    assert len(llamon_agent.__all__) <= MAX_TOP_LEVEL, (
        f"{len(llamon_agent.__all__)} top-level names: give the new one a home in a subpackage"
    )


@pytest.mark.parametrize("module_name", PUBLIC)
def test_public_names_import(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = module.__all__
    assert len(names) == len(set(names)), f"{module_name}.__all__ repeats a name"
    missing = [name for name in names if not hasattr(module, name)]
    assert missing == [], f"{module_name}.__all__ names what it does not have"


def test_every_error_is_exported_from_errors() -> None:
    from llamon_agent import errors

    defined = {name for name, obj in vars(errors).items()
               if inspect.isclass(obj) and obj.__module__ == errors.__name__
               and issubclass(obj, Exception)}
    assert defined == set(errors.__all__)


def test_no_module_level_getattr() -> None:
    """No lazy-import workarounds: a cycle is fixed by moving code down a layer, not hidden."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            defined = (
                [node.name] if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                else [t.id for t in node.targets if isinstance(t, ast.Name)]
                if isinstance(node, ast.Assign) else []
            )
            if "__getattr__" in defined:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
