"""Whether a question asked of several packs is meant for an OpenML pack among them.

``wikigr query docs,amlb2019 "..."`` (or ``all``) answers from the document packs' passages; an
OpenML pack has none, and answers instead, alone, the questions it claims (wikigr.packset). It
claims a question that

- is Cypher over its tables (``MATCH (a:Algorithm) ...``), or
- counts or ranks (the rules' intent: not a description), and says enough of the pack: its
  algorithms by name (any spelling: :mod:`wikigr.openml.names`), a count of its runs, algorithms
  or families, or two of: a dataset of the pack, a measure (accuracy, AUC, F1, log-loss), an
  algorithm family by its words ("random forest", "gradient boosting", "algorithm family"),
  "AutoML" or "OpenML", a setting of experiments (imbalanced, classification, regression,
  multiclass, high-dimensional), and words of experiments (algorithm, framework, classifier,
  learner, run, dataset, benchmark...), of which at least one is not one of those words.

"Which algorithm is best for sorting a list?" names an algorithm of none of the pack's, and no
measure: the documents answer it. The score is how many of these the question has, so that of two
OpenML packs the one whose names it gives answers.
"""

from __future__ import annotations

import re

from wikigr.openml.names import Vocabulary, family_spans, mentions, present
from wikigr.question import Question

MEASURES = {"accuracy": "accuracy", "auc": "AUC", "f1": "F1", "log_loss": "log-loss"}
FAMILY = re.compile(
    r"algorithm famil(y|ies)|random forests?|gradient boost\w*|\bboosting\b|\bbagging\b|\bstacking\b"
    r"|decision trees?|naive bayes|support vector|\bsvms?\b|neural networks?|nearest neighbou?rs?"
    r"|\bknn\b|logistic regression|rule learners?|\bauto-?ml\b|\bopenml\b",
    re.IGNORECASE,
)
EXPERIMENT_WORDS = re.compile(
    r"\b(algorithms?|frameworks?|classifiers?|learners?|famil(?:y|ies)|runs?|data ?sets?|benchmarks?"
    r"|flows?|hyperparameters?)\b",
    re.IGNORECASE,
)
SETTING = re.compile(  # the experiments' settings the rules filter on
    r"\b(im|un)?balanced\b|\bclassification\b|\bregression\b|multi-?class|high-dimensional", re.IGNORECASE
)
TABLES = re.compile(r":\s*`?(Run|Algorithm|AlgorithmFamily|Dataset|Task|Date)\b")
COUNTED = ("run", "algorithm", "flow", "framework", "famil")


def claim(question: str, vocab: Vocabulary) -> tuple[float, str] | None:
    """How strongly an OpenML pack of ``vocab`` claims ``question``, and why ("names the algorithm
    TPOT, asks for accuracy"); None when it does not (see the module docstring)."""
    if Question.of(question).intent == "cypher":
        tables = sorted(set(TABLES.findall(question)))
        return (3.0, f"is Cypher over {', '.join(tables)}") if tables else None
    asked = Question.of(present(question))
    if asked.intent == "describe":
        return None
    q = asked.stripped
    families_at = family_spans(q)
    algorithms = mentions(
        q, vocab.algorithms, skip=lambda s, e: any(fs <= s and e <= fe for _, fs, fe in families_at)
    )
    datasets = mentions(
        q, vocab.datasets, skip=lambda s, e: any(m.start < e and s < m.end for m in algorithms)
    )
    strong: list[tuple[float, str]] = []
    if algorithms:
        names = list(dict.fromkeys(m.name for m in algorithms))
        strong.append((2.0, f"names the algorithm{'s' * (len(names) > 1)} {', '.join(names)}"))
    counted = asked.counted
    if counted and counted.group(1).lower().startswith(COUNTED):
        strong.append((2.0, f"counts {counted.group(1).lower()}"))
    if datasets:
        names = list(dict.fromkeys(m.name for m in datasets))
        strong.append((1.0, f"names the dataset{'s' * (len(names) > 1)} {', '.join(names)}"))
    if asked.measure in MEASURES:
        strong.append((1.0, f"asks for {MEASURES[asked.measure]}"))
    phrases = list(dict.fromkeys(m.group(0).lower() for m in FAMILY.finditer(q)))
    if phrases:
        strong.append((float(len(phrases)), f"speaks of {', '.join(phrases)}"))
    settings = list(dict.fromkeys(m.group(0).lower() for m in SETTING.finditer(q)))
    if settings:
        strong.append((1.0, f"filters on {', '.join(settings)}"))
    if not strong:
        return None
    words = list(dict.fromkeys(m.group(0).lower() for m in EXPERIMENT_WORDS.finditer(q)))
    weak = [(float(min(2, len(words))), f"of {', '.join(words)}")] if words else []
    score = sum(s for s, _ in strong + weak)
    if score < 2:
        return None
    return score, ", ".join(why for _, why in strong + weak)
