"""How the ONNX embedders batch texts: by their number of word pieces (each batch is padded to its
longest), so that a build's definitions — short texts whose names split into many pieces
(``decimal.ROUND_HALF_DOWN``: 9) — are not padded to the longest of texts of the same number of
characters; the vectors are each text's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

import wikigr.embed
from wikigr.embed import OnnxMiniLM

TOKENIZER = Path(wikigr.embed.__file__).parent / "models" / "minilm" / "tokenizer.json"

# Few characters, many pieces; many characters, few pieces.
TEXTS = [
    "xq_vz_kp_wy_jj",
    "internationalization",
    "zq_xv_kp_wy_jj_rr_tt_mm",
    "information about the government",
]


class Recorded:
    """An onnxruntime session that records the width of each batch it runs."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.shapes: list[tuple[int, int]] = []

    def run(self, names: Any, feeds: dict[str, np.ndarray]) -> Any:
        self.shapes.append(feeds["input_ids"].shape)
        return self.session.run(names, feeds)


def test_texts_are_batched_by_their_word_pieces_and_embedded_as_alone() -> None:
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_padding()
    count = {text: len(tokenizer.encode(text).ids) for text in TEXTS}
    embedder = OnnxMiniLM(batch_size=2)
    alone = np.vstack([embedder.embed([text]) for text in TEXTS])
    pieces = set(count.values())
    assert len(pieces) == len(TEXTS)
    least = sorted(pieces)
    by_chars = sorted(TEXTS, key=len)
    by_chars_width = sum(2 * max(count[t] for t in by_chars[i : i + 2]) for i in (0, 2))
    recorded = Recorded(embedder._session)
    embedder._session = recorded
    vectors = embedder.embed(TEXTS)
    assert np.allclose(vectors, alone, atol=1e-5)
    padded = sum(rows * width for rows, width in recorded.shapes)
    assert padded == 2 * least[1] + 2 * least[3] < by_chars_width
