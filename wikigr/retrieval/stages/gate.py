"""gate: when even the best passage is far from the question, say so instead of pretending."""

from __future__ import annotations

from dataclasses import dataclass

from wikigr.retrieval.stage import QueryState, Stage, register


@dataclass
class GateOptions:
    threshold: float = 0.3  # on the best cosine similarity between the question and a chunk


@register
class GateStage(Stage):
    name = "gate"
    summary = "flag low confidence when the best similarity is below a threshold"
    Options = GateOptions

    def run(self, state: QueryState) -> None:
        if not state.confidence and state.candidates:
            vectors = state.ctx.store.chunk_vectors([c.chunk_id for c in state.candidates[:10]])
            question = state.vector()
            state.confidence = max((float(v @ question) for v in vectors.values()), default=0.0)
        state.low_confidence = state.confidence < self.options.threshold
        state.note(self.name, confidence=round(state.confidence, 4), threshold=self.options.threshold)
