"""``pack validate``: check that a folder is a sound pack, without changing it, with the agent's
own code. It sits above the agent (it opens the pack and answers a question), so ``wikigr.pack``
never imports it.

- :mod:`wikigr.validate.checks`: the checks and :func:`validate_pack`;
- :mod:`wikigr.validate.child`: the child process that runs the checks opening the store.
"""

from __future__ import annotations

from wikigr.validate.checks import Check, ValidationReport, validate_pack

__all__ = ["Check", "ValidationReport", "validate_pack"]
