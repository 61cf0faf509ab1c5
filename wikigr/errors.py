"""The exception tree. Each error knows its exit code; the CLI maps them in one place.

Exit codes: 1 for runtime failures (a pack that cannot be read, a build in which no document
succeeded, an embedder that is not installed), 2 for usage errors (a bad argument, a malformed
URL, an empty question, an unknown pack name, a path that is not a pack at all).
"""

from __future__ import annotations

MAX_MESSAGE = 1000  # characters of an error's message: what it quotes from its input may be huge


def shown(value: object, limit: int = 80) -> str:
    """``value`` as an error message quotes it: at most ``limit`` characters, cut with "…"."""
    text = str(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its whitespace collapsed), or its type's name when it
    has none: how an error from a library is quoted inside a message of ours."""
    return " ".join(str(exc).split()) or type(exc).__name__


class WikigrError(Exception):
    """Base class of every error wikigr raises on purpose. The message is one line, of at most
    :data:`MAX_MESSAGE` characters (a longer one is cut in the middle)."""

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        line = " ".join(str(message).split())
        if len(line) > MAX_MESSAGE:
            half = MAX_MESSAGE // 2 - 1
            line = f"{line[:half]} … {line[-half:]}"
        super().__init__(line)

    @property
    def message(self) -> str:
        return str(self)


class UsageError(WikigrError):
    """The caller asked for something malformed: exit 2."""

    exit_code = 2


class PackNotFoundError(UsageError):
    """No pack by that name or path."""


class InvalidPackError(WikigrError):
    """A pack that cannot be read: its manifest missing, corrupt or from a newer wikigr, a file
    or shard missing or damaged."""


class NotAPackError(PackNotFoundError, InvalidPackError):
    """What was given for a pack is not one at all: a file, or a folder without manifest.json.
    A usage error (exit 2), as a path that does not exist is; a pack that is there but damaged is
    an :class:`InvalidPackError` (exit 1). Still an InvalidPackError, so a folder of the packs
    home that is not a pack is listed as broken, as before."""

    exit_code = 2


class StoreError(WikigrError):
    """The pack's LadybugDB store cannot be opened or queried."""


class EmbedderUnavailableError(WikigrError):
    """The embedder a pack records is not installed here."""


class SourceError(WikigrError):
    """A source (URL, file, directory) could not be fetched or parsed."""


class BuildError(WikigrError):
    """A build failed as a whole (for example: no document could be fetched)."""


class ShareError(WikigrError):
    """An export, install or removal refused or failed (an unsafe archive, a checksum mismatch...)."""


def seconds_setting(name: str, raw: str) -> float:
    """The seconds an environment variable ``name`` sets (``raw``, its text); anything but a
    positive finite number is a usage error naming the variable."""
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise UsageError(f"{name} must be a positive number of seconds, not {raw!r}")
    return value
