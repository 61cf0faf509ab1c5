"""Which algorithm family a flow belongs to: a documented rule table over flow names.

A flow name is first reduced to its *principal learner* (:func:`principal`):

1. a trailing OpenML flow version, ``weka.BayesNet_K2(1)``, is dropped;
2. a composite flow (``sklearn.pipeline.Pipeline(imputer=...,clf=sklearn.ensemble.RandomForestClassifier)``,
   a search wrapper around a pipeline, ...) is reduced to its last component, the estimator;
3. the library is read from the prefix (``sklearn.`` scikit-learn, ``weka.`` Weka, ``mlr.`` or
   ``classif.`` mlr, ``h2o`` H2O, ``moa.`` MOA, ``xgboost`` / ``lightgbm`` / ``catboost``);
4. Weka names join a classifier and its components with ``_`` (``weka.Bagging_REPTree``): the first
   part is the learner, except for pre-processing wrappers (``FilteredClassifier``,
   ``AttributeSelectedClassifier``, ``InputMappedClassifier``, ...), whose learner is the last part
   (``weka.FilteredClassifier_Discretize_J48`` is a J48);
5. of a dotted name the last part is the learner (``sklearn.ensemble.RandomForestClassifier``).

Then the rules of :data:`RULES` are tried in order on the learner's lower-cased name; the first
that matches the whole name gives the family. No match: family ``other``. An ensemble wrapper
decides the family (AdaBoost of decision stumps is ``boosting``), AutoML systems are ``automl``
and constant predictors are ``baseline``. docs/openml.md prints this table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    name: str
    paradigm: str
    description: str


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("baseline", "baseline", "constant or majority-class predictors used as a floor"),
        Family(
            "automl",
            "automl",
            "AutoML systems that search over pipelines, models and hyperparameters (auto-sklearn, TPOT, "
            "H2O AutoML, Auto-WEKA...)",
        ),
        Family(
            "boosting",
            "ensemble",
            "boosted ensembles that fit learners sequentially on reweighted data or residuals (AdaBoost, "
            "gradient boosting, XGBoost, LightGBM, CatBoost)",
        ),
        Family(
            "random_forest",
            "ensemble",
            "random forests and related randomised tree ensembles (extra trees, rotation forest)",
        ),
        Family(
            "bagging",
            "ensemble",
            "bagging, random subspaces and other ensembles of learners trained on resampled data",
        ),
        Family("stacking", "ensemble", "stacking, grading and voting over several base learners"),
        Family(
            "decision_tree",
            "tree",
            "single decision trees (C4.5/J48, CART, REPTree, Hoeffding trees, model trees)",
        ),
        Family("rule_based", "rules", "rule learners and decision tables (RIPPER/JRip, PART, OneR)"),
        Family("bayesian", "probabilistic", "naive Bayes and Bayesian network classifiers"),
        Family("discriminant_analysis", "probabilistic", "linear and quadratic discriminant analysis"),
        Family("svm", "kernel", "support vector machines and other kernel methods"),
        Family(
            "linear",
            "linear",
            "linear models: logistic regression, linear SVM solvers, perceptrons, SGD, ridge",
        ),
        Family("neural_network", "neural network", "multilayer perceptrons and other neural networks"),
        Family("nearest_neighbors", "instance-based", "k-nearest neighbours and other lazy learners"),
        Family("other", "other", "learners no rule of the family table matches"),
    )
}


@dataclass(frozen=True)
class Rule:
    name: str  # a short label, cited in the trace and the docs
    pattern: str  # a regular expression matched against the whole lower-cased learner name
    family: str


#: The rule table, tried in order; the first rule whose pattern matches the learner wins.
RULES: tuple[Rule, ...] = (
    Rule(
        "constant predictors",
        r"constantpredictor.*|zeror|dummy(classifier|regressor)|featureless|majority.*",
        "baseline",
    ),
    Rule(
        "AutoML systems",
        r"auto-?sklearn.*|autosklearn.*|tpot.*|auto-?weka.*|oboe.*|h2o-?automl.*|autogluon.*|flaml.*"
        r"|gama.*|mljar.*|lightautoml.*|hyperopt-?sklearn.*|autoxgboost.*|ml-?plan.*|autokeras.*"
        r"|automl.*|autoprognosis.*|mlr3automl.*",
        "automl",
    ),
    Rule(
        "boosting",
        r"adaboost.*|logitboost.*|multiboostab|realadaboost|racedincrementallogitboost|gentleboost"
        r"|(hist)?gradientboosting.*|xgboost.*|xgb.*|lightgbm.*|lgbm.*|catboost.*|gbm|h2o\.gbm"
        r"|additiveregression|boosting.*",
        "boosting",
    ),
    Rule(
        "random forests",
        r"(tuned)?randomforest.*|extratrees.*|ranger|rotationforest|rfsrc|randomforestsrc",
        "random_forest",
    ),
    Rule(
        "bagging",
        r"bagging.*|randomsubspace|dagging|decorate|end|randomcommittee|ordinalclassclassifier",
        "bagging",
    ),
    Rule("stacking and voting", r"stacking.*|grading|vote|voting.*|multischeme|superlearner", "stacking"),
    Rule(
        "decision trees",
        r"j48.*|reptree|randomtree|decisionstump|simplecart|bftree|ladtree|adtree|ft|lmt|nbtree|id3"
        r"|hoeffdingtree|extratree|decisiontree.*|extratreeclassifier|extratreeregressor|rpart|c50"
        r"|ctree|m5p|cart|evtree|j48graft",
        "decision_tree",
    ),
    Rule(
        "rule learners",
        r"jrip|part|ridor|oner|prism|conjunctiverule|decisiontable|furia|nnge|olm|m5rules|dtnb"
        r"|ripper|jrip.*",
        "rule_based",
    ),
    Rule(
        "Bayesian classifiers",
        r"naivebayes.*|naive_?bayes|bayesnet.*|a1de|a2de|aode|waode|hnb|lbr|(gaussian|bernoulli|multinomial"
        r"|complement|categorical)nb",
        "bayesian",
    ),
    Rule(
        "discriminant analysis",
        r"(linear|quadratic)discriminantanalysis|lda|qda|rda",
        "discriminant_analysis",
    ),
    Rule(
        "support vector machines and kernel methods",
        r"smo.*|libsvm|svc.*|nusvc|svm|ksvm|spegasos|kernellogisticregression.*|svr|nusvr|gaussianprocess.*",
        "svm",
    ),
    Rule(
        "linear models",
        r"logistic|simplelogistic|liblinear|sgd.*|winnow|logisticregression.*|ridge.*|perceptron"
        r"|votedperceptron|passiveaggressive.*|glmnet|cv\.glmnet|linearregression|lasso.*|elasticnet.*"
        r"|linearsvc|glm",
        "linear",
    ),
    Rule(
        "neural networks",
        r"multilayerperceptron|mlp.*|rbfclassifier|rbfnetwork|nnet|deepnet|keras.*|neuralnet.*|deeplearning",
        "neural_network",
    ),
    Rule(
        "nearest neighbours and lazy learners",
        r"ibk|ib1|kstar|lwl|kneighbors.*|knn|kknn|radiusneighbors.*|nearestcentroid|lazy.*",
        "nearest_neighbors",
    ),
)
_COMPILED = tuple((rule, re.compile(rule.pattern)) for rule in RULES)

#: Weka meta-classifiers that only pre-process: their learner is the last ``_`` part.
WEKA_WRAPPERS = frozenset(
    {
        "filteredclassifier",
        "attributeselectedclassifier",
        "inputmappedclassifier",
        "cvparameterselection",
        "multisearch",
        "gridsearch",
        "classificationviaregression",
    }
)
_LIBRARIES = (
    ("sklearn.", "scikit-learn"),
    ("weka.", "Weka"),
    ("mlr.", "mlr"),
    ("mlr3.", "mlr3"),
    ("classif.", "mlr"),
    ("regr.", "mlr"),
    ("h2o", "H2O"),
    ("moa.", "MOA"),
    ("xgboost", "XGBoost"),
    ("lightgbm", "LightGBM"),
    ("catboost", "CatBoost"),
    ("keras", "Keras"),
)
_AUTOML_LIBRARIES = (
    ("autosklearn", "auto-sklearn"),
    ("auto-sklearn", "auto-sklearn"),
    ("tpot", "TPOT"),
    ("autoweka", "Auto-WEKA"),
    ("auto-weka", "Auto-WEKA"),
    ("oboe", "OBOE"),
    ("h2oautoml", "H2O"),
    ("autogluon", "AutoGluon"),
    ("flaml", "FLAML"),
    ("gama", "GAMA"),
)


@dataclass(frozen=True)
class FamilyMatch:
    family: str
    paradigm: str
    library: str
    learner: str  # the principal learner the rules saw
    rule: str  # the rule that matched ("" for other)


def _top_level_split(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def principal(name: str) -> tuple[str, str]:
    """``(library, learner)`` of a flow name (see the module docstring)."""
    text = re.sub(r"\(\d+\)\s*$", "", name.strip())
    # A composite flow: Outer(step=inner,step=inner...) -> its last component, recursively.
    while "(" in text and text.endswith(")"):
        inside = text[text.index("(") + 1 : -1]
        last = _top_level_split(inside)[-1]
        inner = last.split("=", 1)[1] if "=" in last.split("(", 1)[0] else last
        if not inner.strip() or inner.strip() == text:
            break
        text = re.sub(r"\(\d+\)\s*$", "", inner.strip())
    lower = text.lower()
    library = next((lib for prefix, lib in _LIBRARIES if lower.startswith(prefix)), "")
    if lower.startswith("weka."):
        parts = text[len("weka.") :].split("_")
        learner = parts[-1] if parts[0].lower() in WEKA_WRAPPERS and len(parts) > 1 else parts[0]
        return library, learner.split(".")[-1]
    if lower.startswith(("mlr.", "mlr3.", "classif.", "regr.")):
        return library, text.split(".")[-1]
    if "." in text:
        return library, text.rstrip(".").split(".")[-1]
    return library, text


def classify(name: str) -> FamilyMatch:
    """The family of the flow called ``name`` by the first matching rule, else ``other``."""
    library, learner = principal(name)
    key = learner.strip().lower().replace(" ", "")
    for rule, pattern in _COMPILED:
        if pattern.fullmatch(key):
            family = FAMILIES[rule.family]
            if family.name == "automl" and not library:
                library = next((lib for prefix, lib in _AUTOML_LIBRARIES if key.startswith(prefix)), "")
            return FamilyMatch(family.name, family.paradigm, library, learner, rule.name)
    return FamilyMatch("other", FAMILIES["other"].paradigm, library, learner, "")
