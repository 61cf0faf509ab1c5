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
