"""The family rule table: flow names from sklearn, Weka, mlr, H2O and AutoML systems."""

from __future__ import annotations

from pathlib import Path

import pytest

from wikigr.openml.families import FAMILIES, RULES, classify, principal

CASES = [
    # (flow name, family, library, principal learner)
    ("weka.J48", "decision_tree", "Weka", "J48"),
    ("weka.BayesNet_K2(1)", "bayesian", "Weka", "BayesNet"),
    ("weka.AdaBoostM1_DecisionStump", "boosting", "Weka", "AdaBoostM1"),
    ("weka.Bagging_REPTree", "bagging", "Weka", "Bagging"),
    ("weka.RotationForest_PrincipalComponents_J48", "random_forest", "Weka", "RotationForest"),
    ("weka.FilteredClassifier_Discretize_J48", "decision_tree", "Weka", "J48"),
    ("weka.AttributeSelectedClassifier_CfsSubsetEval_BestFirst_J48", "decision_tree", "Weka", "J48"),
    ("weka.InputMappedClassifier_ZeroR", "baseline", "Weka", "ZeroR"),
    ("weka.LWL_DecisionStump", "nearest_neighbors", "Weka", "LWL"),
    ("weka.SMO_PolyKernel", "svm", "Weka", "SMO"),
    ("weka.Grading_ZeroR", "stacking", "Weka", "Grading"),
    ("weka.JRip", "rule_based", "Weka", "JRip"),
    ("weka.Logistic", "linear", "Weka", "Logistic"),
    ("weka.RBFClassifier", "neural_network", "Weka", "RBFClassifier"),
    ("weka.HyperPipes", "other", "Weka", "HyperPipes"),
    ("sklearn.ensemble.RandomForestClassifier", "random_forest", "scikit-learn", "RandomForestClassifier"),
    ("sklearn.ensemble.GradientBoostingClassifier", "boosting", "scikit-learn", "GradientBoostingClassifier"),
    ("sklearn.tree.DecisionTreeClassifier", "decision_tree", "scikit-learn", "DecisionTreeClassifier"),
    ("sklearn.neighbors.KNeighborsClassifier", "nearest_neighbors", "scikit-learn", "KNeighborsClassifier"),
    ("sklearn.naive_bayes.BernoulliNB", "bayesian", "scikit-learn", "BernoulliNB"),
    (
        "sklearn.discriminant_analysis.QuadraticDiscriminantAnalysis",
        "discriminant_analysis",
        "scikit-learn",
        "QuadraticDiscriminantAnalysis",
    ),
    ("sklearn.neural_network.MLPClassifier", "neural_network", "scikit-learn", "MLPClassifier"),
    ("sklearn.dummy.DummyClassifier", "baseline", "scikit-learn", "DummyClassifier"),
    (
        "sklearn.pipeline.Pipeline(imputation=sklearn.preprocessing.imputation.Imputer,"
        "hotencoding=sklearn.preprocessing.data.OneHotEncoder,"
        "estimator=sklearn.ensemble.forest.RandomForestClassifier)(1)",
        "random_forest",
        "scikit-learn",
        "RandomForestClassifier",
    ),
    (
        "sklearn.model_selection._search.RandomizedSearchCV(estimator=sklearn.pipeline.Pipeline("
        "imputer=sklearn.impute.SimpleImputer,classifier=sklearn.svm.classes.SVC))",
        "svm",
        "scikit-learn",
        "SVC",
    ),
    ("mlr.classif.ranger", "random_forest", "mlr", "ranger"),
    ("mlr.classif.xgboost", "boosting", "mlr", "xgboost"),
    ("classif.glmnet", "linear", "mlr", "glmnet"),
    ("mlr.classif.svm", "svm", "mlr", "svm"),
    ("h2o.gbm", "boosting", "H2O", "gbm"),
    ("H2OAutoML", "automl", "H2O", "H2OAutoML"),
    ("autosklearn", "automl", "auto-sklearn", "autosklearn"),
    ("TPOT", "automl", "TPOT", "TPOT"),
    ("AutoWEKA", "automl", "Auto-WEKA", "AutoWEKA"),
    ("oboe", "automl", "OBOE", "oboe"),
    ("constantpredictor_enc", "baseline", "", "constantpredictor_enc"),
    ("TunedRandomForest", "random_forest", "", "TunedRandomForest"),
    ("SVC_rbf", "svm", "", "SVC_rbf"),
    ("xgboost.XGBClassifier", "boosting", "XGBoost", "XGBClassifier"),
    ("lightgbm.LGBMClassifier", "boosting", "LightGBM", "LGBMClassifier"),
    ("my.own.Wonderlearner", "other", "", "Wonderlearner"),
    ("", "other", "", ""),
]


@pytest.mark.parametrize(("name", "family", "library", "learner"), CASES)
def test_classify(name: str, family: str, library: str, learner: str) -> None:
    match = classify(name)
    assert (match.family, match.library, match.learner) == (family, library, learner)
    assert match.paradigm == FAMILIES[family].paradigm
    assert (match.rule == "") == (family == "other")


def test_every_rule_is_exercised_and_every_family_described() -> None:
    used = {classify(name).rule for name, *_ in CASES}
    assert {rule.name for rule in RULES} <= used
    assert {rule.family for rule in RULES} | {"other"} == set(FAMILIES)
    assert all(f.description and f.paradigm for f in FAMILIES.values())


def test_the_docs_print_the_rule_table() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "openml.md").read_text(encoding="utf-8")
    for number, rule in enumerate(RULES, 1):
        assert f"| {number} | {rule.name} | `{rule.family}` ({FAMILIES[rule.family].paradigm}) |" in docs


def test_rules_apply_in_order() -> None:
    # "ZeroR" would also be a rule learner in Weka's menus; the baseline rule comes first.
    assert classify("weka.ZeroR").family == "baseline"
    # "LogitBoost" ends in "boost": boosting, before "logistic" (linear) is tried.
    assert classify("weka.LogitBoost_DecisionStump").family == "boosting"


def test_principal_strips_versions_and_wrappers() -> None:
    assert principal("weka.BayesNet_K2(12)") == ("Weka", "BayesNet")
    assert principal("sklearn.pipeline.Pipeline(clf=sklearn.linear_model.LogisticRegression)") == (
        "scikit-learn",
        "LogisticRegression",
    )
