"""What a call to Claude fails with: one small hierarchy of :class:`~wikigr.errors.WikigrError`
(exit code 1), each with a one-line message and the last HTTP status when there was one."""

from __future__ import annotations

from wikigr.errors import WikigrError

__all__ = ["LLMAuthError", "LLMError", "LLMRequestError", "LLMResponseError", "LLMUnavailableError"]


class LLMError(WikigrError):
    """Claude could not give an answer. ``status`` is the last HTTP status, when there was one."""

    exit_code = 1

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LLMAuthError(LLMError):
    """The API rejected the key (HTTP 401 or 403). Never retried."""


class LLMUnavailableError(LLMError):
    """The API stayed unreachable, overloaded, rate-limited or slow through every retry."""


class LLMRequestError(LLMError):
    """The API rejected the request itself (HTTP 400, 404, 413...): retrying cannot help."""


class LLMResponseError(LLMError):
    """The API answered 2xx with something that is not a Messages API response."""
