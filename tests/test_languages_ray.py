"""A distributed build (``--ray``) without a chosen embedder embeds each chunk once, with the model
the documents' languages call for (wikigr/build/ray.py: the workers parse, the languages choose,
then the workers embed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.test_ray import ray_cluster  # noqa: F401 - the session's local Ray
from wikigr.build import build_pack
from wikigr.build.languages import MULTILINGUAL
from wikigr.build.options import BuildOptions
from wikigr.embed import DEFAULT_EMBEDDER, get_embedder
from wikigr.errors import EmbedderUnavailableError
from wikigr.pack.store import Store
from wikigr.progress import ProgressEvent

RUSSIAN = {
    "Чай": "Зелёный чай заваривают водой не горячее восьмидесяти градусов, чтобы листья не горчили. "
    "Чайник перед заваркой прогревают кипятком, а первую заварку сливают.",
    "Кофе": "Кофе мелют непосредственно перед приготовлением: молотые зёрна быстро теряют аромат. Турку "
    "ставят на слабый огонь и снимают, как только поднимется пенка.",
}
ENGLISH = {
    "Kettles": "An electric kettle boils water quickly; descale it with vinegar every month so that the "
    "heating element keeps working well.",
    "Teapots": "A teapot is warmed with hot water before the leaves go in, and the first brew of some "
    "teas is poured away.",
}


def _corpus(tmp_path: Path, pages: dict[str, str]) -> Path:
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"title": title, "text": text} for title, text in pages.items()]
    corpus.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return corpus


def _embedded(events: list[ProgressEvent]) -> int:
    """The chunks a build embedded, by its progress: the workers' count as they parse (total 0),
    and the total of each later round of embedding."""
    embed = [e for e in events if e.stage == "embed"]
    on_workers = max((e.done for e in embed if e.total == 0), default=0)
    return on_workers + sum(e.total for e in embed if e.done == 0 and e.total > 0)


def _vectors(pack: Path) -> np.ndarray:
    with Store.open(pack / "pack.db") as store:
        ids, _, matrix = store.chunk_matrix()
    return np.asarray(matrix[np.argsort(ids)])


@pytest.mark.usefixtures("ray_cluster")
@pytest.mark.parametrize("language", ["ru", "en"])
def test_a_ray_build_without_a_chosen_embedder_embeds_each_chunk_once(
    language: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wikigr.build.ray import RayOptions

    monkeypatch.delenv("WIKIGR_EMBEDDER", raising=False)
    pages = {**RUSSIAN, **ENGLISH} if language == "ru" else ENGLISH
    expected = MULTILINGUAL if language == "ru" else DEFAULT_EMBEDDER
    try:
        expected_name = get_embedder(expected).name
    except EmbedderUnavailableError as exc:
        pytest.skip(f"the multilingual embedder cannot be loaded here: {exc}")
    corpus = _corpus(tmp_path, pages)
    local = build_pack("local", [], out=tmp_path / "local", corpus=corpus, options=BuildOptions(graph=False))
    events: list[ProgressEvent] = []
    distributed = build_pack(
        "ray",
        [],
        out=tmp_path / "ray",
        corpus=corpus,
        options=BuildOptions(graph=False, ray=RayOptions(batch_chunks=1)),
        on_progress=events.append,
    )
    assert local.manifest.embedder == distributed.manifest.embedder
    assert distributed.manifest.embedder.name == expected_name
    assert local.notes == distributed.notes
    chunks = distributed.manifest.stats.chunks
    assert _embedded(events) == chunks == len(pages)  # once each: not with one model, then the other
    np.testing.assert_allclose(_vectors(local.path), _vectors(distributed.path), atol=1e-4)
