"""Fixtures of the OpenML tests: the sample exports and a pack built from them once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES

OPENML = FIXTURES / "openml"
AMLB = OPENML / "amlb2019_sample.csv"
STUDY1 = OPENML / "study_1_sample.arff"
QUALITIES = OPENML / "study_14_qualities_sample.arff"


@pytest.fixture(scope="session")
def openml_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An OpenML pack built once per session (per worker, as the tests run in parallel) from the two
    sample exports and the qualities."""
    from wikigr.openml.build import OpenMLBuildOptions, build_openml_pack

    out = tmp_path_factory.mktemp("openml") / "sample"
    # No embedding cache: a session fixture runs before the per-test WIKIGR_HOME is set.
    options = OpenMLBuildOptions(embedding_cache=False)
    build_openml_pack("sample", exports=[AMLB, STUDY1], qualities=[QUALITIES], out=out, options=options)
    return out
