"""cross_encoder: rescore the top candidates with a sentence-transformers CrossEncoder.

The model is configured, never assumed: ``stages.cross_encoder.model`` in kg_config.json, the
``options`` of :class:`~wikigr.KnowledgeGraphAgent`, or ``WIKIGR_CROSS_ENCODER`` — a local folder,
or a Hugging Face name found in the Hugging Face cache (never downloaded at query time: one that is
not on this machine is known at once; ``hf download NAME`` fetches it). It needs the optional
``models`` extra (sentence-transformers + torch); torch is imported only when this stage runs with
a model. Where no model is configured, the stage is skipped and the trace says so. Where a model is
configured but sentence-transformers is missing or the model is not here or cannot be loaded, it is
skipped too, and its trace entry carries ``notice`` (``detail.notice``: true): ``wikigr query``
then says why in one line on stderr, without ``--trace``. When it runs, the trace names the model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from wikigr.errors import WikigrError
from wikigr.retrieval.stage import QueryState, Skip, Stage, register

ENV_MODEL = "WIKIGR_CROSS_ENCODER"


@dataclass
class CrossEncoderOptions:
    # e.g. "cross-encoder/ms-marco-MiniLM-L-6-v2" or a folder; "" (default): $WIKIGR_CROSS_ENCODER
    model: str = field(default_factory=lambda: os.environ.get(ENV_MODEL, ""))
    top_n: int = 20
    batch_size: int = 32


@register
class CrossEncoderStage(Stage):
    name = "cross_encoder"
    summary = "rescore the top candidates with a configured cross-encoder (sentence-transformers)"
    Options = CrossEncoderOptions

    def run(self, state: QueryState) -> None:
        if not self.options.model.strip():
            raise Skip(
                f"no cross-encoder model configured (stages.cross_encoder.model in kg_config.json, "
                f"or {ENV_MODEL})"
            )
        if not state.candidates:
            raise Skip("no candidates")
        if self.options.top_n < 1:
            raise Skip("top_n is below 1")
        from wikigr.models.st import load_cross_encoder

        try:
            model_name, model = load_cross_encoder(self.options.model)
        except WikigrError as exc:
            state.note(self.name, notice=True)  # the user asked for this stage: say it did not run
            raise Skip(str(exc)) from exc
        head = state.candidates[: self.options.top_n]
        scores = model.predict(
            [(state.question, c.text) for c in head],
            batch_size=max(1, self.options.batch_size),
            show_progress_bar=False,
        )
        for candidate, score in zip(head, scores, strict=True):
            candidate.scores["cross_encoder"] = float(score)
        head.sort(key=lambda c: -c.scores["cross_encoder"])
        floor = (
            state.candidates[self.options.top_n].score if len(state.candidates) > self.options.top_n else 0.0
        )
        for rank, candidate in enumerate(head):  # the rescored head stays above the tail
            candidate.score = floor + len(head) - rank
        state.candidates = head + state.candidates[self.options.top_n :]
        state.note(self.name, model=model_name, rescored=len(head))
