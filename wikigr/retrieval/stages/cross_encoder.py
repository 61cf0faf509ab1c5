"""cross_encoder: rescore the top candidates with a sentence-transformers CrossEncoder.

The model must be available offline (a local folder, or already in the Hugging Face cache); it is
never downloaded. Where sentence-transformers or the model is missing, the stage is skipped and
the trace says why. torch is imported only when this stage actually runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from wikigr.retrieval.stage import QueryState, Skip, Stage, register

_MODELS: dict[str, Any] = {}


@dataclass
class CrossEncoderOptions:
    model: str = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    top_n: int = 20


def _load(name: str) -> Any:
    if name in _MODELS:
        return _MODELS[name]
    try:
        import importlib.util

        if importlib.util.find_spec("sentence_transformers") is None:
            raise Skip("sentence-transformers is not installed")
    except ValueError as exc:
        raise Skip("sentence-transformers is not installed") from exc
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download a model at query time
    from sentence_transformers import CrossEncoder

    try:
        model = CrossEncoder(name, local_files_only=True)
    except Exception as exc:
        raise Skip(f"cross-encoder model {name!r} is not available offline") from exc
    _MODELS[name] = model
    return model


@register
class CrossEncoderStage(Stage):
    name = "cross_encoder"
    summary = "rescore the top candidates with a cross-encoder (skipped when no model is available)"
    Options = CrossEncoderOptions

    def run(self, state: QueryState) -> None:
        if not state.candidates:
            raise Skip("no candidates")
        model = _load(self.options.model)
        head = state.candidates[: self.options.top_n]
        scores = model.predict([(state.question, c.text) for c in head])
        for candidate, score in zip(head, scores, strict=True):
            candidate.scores["cross_encoder"] = float(score)
        head.sort(key=lambda c: -c.scores["cross_encoder"])
        floor = (
            state.candidates[self.options.top_n].score if len(state.candidates) > self.options.top_n else 0.0
        )
        for rank, candidate in enumerate(head):  # the rescored head stays above the tail
            candidate.score = floor + len(head) - rank
        state.candidates = head + state.candidates[self.options.top_n :]
        state.note(self.name, model=self.options.model, rescored=len(head))
