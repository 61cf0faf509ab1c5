"""Fixtures for the source-side tests: a real local HTTP server and fast fetch options."""

from __future__ import annotations

import pytest

from wikigr.sources.fetch import FetchOptions


@pytest.fixture
def fast() -> FetchOptions:
    """Short timeouts and near-zero backoff, so failure paths run in milliseconds."""
    return FetchOptions(workers=4, timeout=2.0, retries=2, backoff_base=0.01, retry_after_cap=0.05)
