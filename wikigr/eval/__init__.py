"""Evaluation: questions, metrics, judges, the runner."""
