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
    """Each module imported first, in a fresh interpreter: an import cycle (a module importing one
    whose package imports it back) fails only when that module comes first."""
    import pkgutil
    from concurrent.futures import ThreadPoolExecutor

    names = [m.name for m in pkgutil.walk_packages(wikigr.__path__, "wikigr.")]
    assert "wikigr.retrieval.short_answer" in names and len(names) > 50

    def imports(name: str) -> str:
        run = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True)
        return "" if run.returncode == 0 or "partially initialized" not in run.stderr else name

    with ThreadPoolExecutor(4) as pool:
        cycles = [name for name in pool.map(imports, names) if name]
    assert cycles == []
