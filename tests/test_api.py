"""The public API: what `import wikigr` promises."""

from __future__ import annotations

import subprocess
import sys

import wikigr


def test_all_exports_resolve() -> None:
    for name in wikigr.__all__:
        assert getattr(wikigr, name) is not None, name


def test_import_is_light() -> None:
    heavy = "('ladybug', 'onnxruntime', 'httpx', 'pyarrow')"
    code = f"import sys, wikigr; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_all_is_pinned() -> None:
    assert sorted(wikigr.__all__) == sorted(["__version__", *wikigr._EXPORTS])


def test_every_module_imports_on_its_own() -> None:
    """Each module imported first, with no wikigr module loaded yet (in one fresh interpreter, the
    wikigr modules dropped before each): an import cycle (a module importing one whose package
    imports it back) fails only when that module comes first."""
    code = """
import importlib, pkgutil, sys, wikigr
names = [m.name for m in pkgutil.walk_packages(wikigr.__path__, "wikigr.") if not m.name.endswith("__main__")]
cycles = []
for name in names:
    for loaded in [m for m in sys.modules if m == "wikigr" or m.startswith("wikigr.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except ImportError as exc:
        if "partially initialized" in str(exc):
            cycles.append(name)
print(len(names), cycles)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    count, cycles = out.split(" ", 1)
    assert int(count) > 50 and cycles.strip() == "[]", out
