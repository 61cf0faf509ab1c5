"""Fixtures for the source-side tests: a real local HTTP server and fast fetch options."""

from __future__ import annotations

import pytest

from wikigr.sources.fetch import FetchOptions


@pytest.fixture
def fast() -> FetchOptions:
    """Near-zero backoff, so failure paths run in milliseconds (a test of a slow server sets its
    own short timeout; this one only catches a hang, on a machine however busy)."""
    return FetchOptions(workers=4, timeout=60.0, retries=2, backoff_base=0.01, retry_after_cap=0.05)
