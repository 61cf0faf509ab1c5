"""The names of an OpenML pack that a question mentions, however it spells them, and the names it
gives that the pack does not hold.

- A name matches whatever its case, spaces, hyphens, dots and underscores: "H2O AutoML",
  "h2o-automl" and "H2OAutoML" are one framework, "auto sklearn" is ``autosklearn``, "Fashion
  MNIST" is ``Fashion-MNIST``; a Weka flow also answers to its learner (``weka.J48``: "J48").
  Words that spell a family ("random forest", "gradient boosting") name the family, not an
  algorithm whose name is those words run together (``RandomForest``: written so, it is the
  algorithm).
- Past tenses read as the present ("How did TPOT do?" asks what "How does TPOT do?" asks).
- :func:`unknown_names`: the words of a question that look like a name (capitals inside or after its
  first word, letters with digits: "XGBoost", "Xyz", "kc2") and that nothing of the pack or the
  rules' vocabulary covers: the answer says the pack holds nothing by that name, rather than
  answer for everything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

FAMILY_WORDS: dict[str, str] = {
    "automl": r"\bauto-?ml\b",
    "baseline": r"\bbaselines?\b|constant predictors?",
    "boosting": r"\bboost(ing|ed)?\b|gradient boost",
    "random_forest": r"random forests?|\bforests?\b",
    "bagging": r"\bbagging\b|\bbagged\b",
    "stacking": r"\bstacking\b|\bstacked\b|\bvoting\b",
    "decision_tree": r"decision trees?|\btrees?\b",
    "rule_based": r"rule[- ]based|rule learners?|\brules\b",
    "bayesian": r"naive bayes|bayesian",
    "discriminant_analysis": r"discriminant",
    "svm": r"\bsvms?\b|support vector|kernel methods?",
    "linear": r"linear models?|logistic regression|\blinear\b",
    "neural_network": r"neural (net|network)s?|\bmlps?\b|deep learning",
    "nearest_neighbors": r"nearest neighbou?rs?|\bknn\b|k-nn",
}

#: Past forms read as the present, so that "How did X do?" is "How does X do?".
PRESENT = {
    "did": "does",
    "was": "is",
    "were": "are",
    "had": "has",
    "performed": "performs",
    "fared": "fares",
    "scored": "scores",
    "worked": "works",
    "won": "wins",
    "ranked": "ranks",
    "got": "gets",
    "achieved": "achieves",
    "compared": "compares",
    "outperformed": "outperforms",
    "handled": "handles",
}
_PAST = re.compile(r"\b(" + "|".join(PRESENT) + r")\b", re.IGNORECASE)
TOKEN = re.compile(r"\w+(?:[.\-]\w+)*")  # "weka.J48", "credit-g", "numerai28.6", "H2O"
_JOIN = re.compile(r"[\s\-]*")  # what may stand between the words of one name
MAX_WORDS = 6  # the most words a name of the pack is matched over
#: Words that look like names but are the vocabulary of questions about runs.
KNOWN = frozenset(
    """i openml automl amlb ml cypher roc auc id ids cpu gpu csv arff api supervised classification
    regression clustering benchmark
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday""".split()  # noqa: SIM905
)


def key(text: str) -> str:
    """``text`` as names are compared: case-folded, letters and digits only."""
    return re.sub(r"[\W_]+", "", text.casefold())


def present(text: str) -> str:
    """``text`` with past forms of the verbs questions about runs use put in the present."""

    def swap(m: re.Match[str]) -> str:
        word = PRESENT[m.group(0).lower()]
        return word.capitalize() if m.group(0)[0].isupper() else word

    return _PAST.sub(swap, text)


def aliases(name: str) -> list[str]:
    """The keys ``name`` answers to: itself, and the learner of a dotted flow name without
    its version (``weka.J48(1)``: ``j48``)."""
    plain = re.sub(r"\(\d+\)\s*$", "", name.strip())
    found = [key(name), key(plain)]
    if re.fullmatch(r"[A-Za-z]\w*(?:\.\w+)+", plain):
        found.append(key(plain.rsplit(".", 1)[1]))
    return [k for k in dict.fromkeys(found) if len(k) >= 3]


@dataclass(frozen=True)
class Mention:
    name: str  # as the pack spells it
    start: int  # where the question spells it
    end: int


def mentions(
    question: str, names: Iterable[str], skip: Callable[[int, int], bool] | None = None
) -> list[Mention]:
    """Where ``question`` mentions one of ``names`` (see the module docstring): the longest
    matches first, none overlapping; ``skip(start, end)`` refuses a match."""
    index: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        for alias in aliases(name):
            index.setdefault(alias, []).append(name)
    tokens = list(TOKEN.finditer(question))
    spans: list[tuple[int, int, int]] = []  # (start token, end token exclusive, length in chars)
    for i in range(len(tokens)):
        for j in range(i + 1, min(len(tokens), i + MAX_WORDS) + 1):
            if j > i + 1 and not _JOIN.fullmatch(question[tokens[j - 2].end() : tokens[j - 1].start()]):
                break
            spans.append((i, j, tokens[j - 1].end() - tokens[i].start()))
    found: list[Mention] = []
    taken: set[int] = set()
    for i, j, _ in sorted(spans, key=lambda s: (-s[2], s[0])):
        if taken & set(range(i, j)):
            continue
        start, end = tokens[i].start(), tokens[j - 1].end()
        matched = index.get(key(question[start:end]))
        if not matched or (skip is not None and skip(start, end)):
            continue
        taken |= set(range(i, j))
        found += [Mention(name, start, end) for name in matched]
    return sorted(found, key=lambda m: m.start)


def family_spans(question: str) -> list[tuple[str, int, int]]:
    """The families ``question`` names by their words, with where."""
    return [
        (family, m.start(), m.end())
        for family, pattern in FAMILY_WORDS.items()
        for m in re.finditer(pattern, question, re.IGNORECASE)
    ]


def _shaped_like_a_name(token: str, first: bool) -> bool:
    """Capitals inside ("XGBoost", "AutoML"), letters with digits ("kc2"), or a capital after the
    question's first word ("Xyz")."""
    if not re.search(r"[^\W\d_]", token):
        return False
    return (
        bool(re.search(r"\d", token))
        or any(c.isupper() for c in token[1:])
        or (token[0].isupper() and not first)
    )


def unknown_names(question: str, known: list[tuple[int, int]], names: list[tuple[int, int]]) -> list[str]:
    """The names ``question`` gives that nothing covers: words shaped like names outside the
    ``known`` spans (the rules' words) and the ``names`` spans (the pack's names), and not words of
    questions about runs (:data:`KNOWN`), each with the words shaped like names next to it ("Xyz
    AutoML")."""

    def inside(token: re.Match[str], spans: list[tuple[int, int]]) -> bool:
        return any(s < token.end() and token.start() < e for s, e in spans)

    def joined(a: re.Match[str], b: re.Match[str]) -> bool:
        return bool(_JOIN.fullmatch(question[a.end() : b.start()]))

    tokens = list(TOKEN.finditer(question))
    shaped = [_shaped_like_a_name(t.group(0), i == 0) and not inside(t, names) for i, t in enumerate(tokens)]
    unknown = [
        shaped[i] and not inside(t, known) and t.group(0).casefold() not in KNOWN
        for i, t in enumerate(tokens)
    ]
    found: list[str] = []
    i = 0
    while i < len(tokens):
        if not unknown[i]:
            i += 1
            continue
        start = end = i
        while start > 0 and shaped[start - 1] and joined(tokens[start - 1], tokens[start]):
            start -= 1
        while end + 1 < len(tokens) and shaped[end + 1] and joined(tokens[end], tokens[end + 1]):
            end += 1
        found.append(question[tokens[start].start() : tokens[end].end()])
        i = end + 1
    return list(dict.fromkeys(found))


#: What a filter on a dimension's attribute needs the pack to know, as the answer names it.
KNOWN_ATTRIBUTES: dict[str, str] = {
    "Dataset.imbalance_bucket": "class balance",
    "Dataset.size_bucket": "size",
    "Dataset.dimension_bucket": "number of features",
    "Dataset.classes": "number of classes",
    "Task.type": "task type",
}


@dataclass
class Vocabulary:
    """The names in a pack that a question may mention."""

    datasets: list[str] = field(default_factory=list)
    algorithms: list[str] = field(default_factory=list)
    families: list[str] = field(default_factory=list)
    years: list[int] = field(default_factory=list)
    measure: str = "accuracy"  # the pack's primary measure
    #: The values the pack holds of the attributes of KNOWN_ATTRIBUTES ("unknown" and null left
    #: out); None: not read (every filter is tried).
    values: dict[str, list[Any]] | None = None


def load_vocabulary(rows: Callable[[str], list[list[Any]]], measure: str = "accuracy") -> Vocabulary:
    """The vocabulary of the OpenML store whose ``rows(cypher)`` reads it."""
    values: dict[str, list[Any]] = {}
    for attribute in KNOWN_ATTRIBUTES:
        table, column = attribute.split(".")
        found = rows(f"MATCH (n:{table}) RETURN DISTINCT n.{column}")
        values[attribute] = sorted((r[0] for r in found if r[0] is not None and r[0] != "unknown"), key=str)
    return Vocabulary(
        datasets=[r[0] for r in rows("MATCH (d:Dataset) RETURN d.name")],
        algorithms=[r[0] for r in rows("MATCH (a:Algorithm) RETURN a.name")],
        families=[r[0] for r in rows("MATCH (f:AlgorithmFamily) RETURN f.name")],
        years=[int(r[0]) for r in rows("MATCH (d:Date) RETURN DISTINCT d.year")],
        measure=measure,
        values=values,
    )


def satisfiable(condition: Any, known: list[Any]) -> bool:
    """Whether one of the ``known`` values passes a filter's ``condition`` (a value, a list, or
    ``{op: operand}``; strings compare case-insensitively)."""

    def norm(x: Any) -> Any:
        return x.casefold() if isinstance(x, str) else x

    if isinstance(condition, list):
        return any(satisfiable(c, known) for c in condition)
    if isinstance(condition, dict):
        checks = {
            "gte": lambda a, b: a >= b,
            "gt": lambda a, b: a > b,
            "lte": lambda a, b: a <= b,
            "lt": lambda a, b: a < b,
            "eq": lambda a, b: a == b,
            "ne": lambda a, b: a != b,
        }
        try:
            return any(all(checks[op](norm(v), norm(b)) for op, b in condition.items()) for v in known)
        except (KeyError, TypeError):
            return True  # not a condition these checks know: the tool decides
    return norm(condition) in {norm(v) for v in known}
