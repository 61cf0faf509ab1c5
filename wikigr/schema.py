"""Strict loading of JSON data into typed dataclasses.

Unknown keys are rejected (a typo or a tampered file fails loudly), missing keys without a default
are rejected, and every value is checked against its annotation. Small on purpose: it covers the
types wikigr's files use (str, int, float, bool, None, Literal, list, dict, nested dataclasses)
and imports nothing heavy, so reading a manifest costs nothing on the query path.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import types
import typing
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

T = TypeVar("T")


class SchemaError(ValueError):
    """A value does not fit its schema; ``str(err)`` names where (``stats.chunks: ...``)."""


class JSONError(ValueError):
    """Text no JSON parser reads, said in one line (see :func:`parse_json`)."""


def is_unicode(value: object) -> bool:
    """Whether the strings of ``value`` (JSON data, or a string) are Unicode text: JSON can spell
    a lone surrogate (``"\\udcff"``), which no reply can encode."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` of untrusted text. It refuses in four ways — a decode error, bytes that are
    not UTF-8, an integer of over 4,300 digits (a plain ValueError), nesting deeper than the stack
    (RecursionError) —, each a :class:`JSONError` here: "not JSON (Expecting value at character
    0)", "not UTF-8 (...)", "a number too long", "nested too deeply"."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = "" if exc.msg.endswith(" at") else " at"  # "Unterminated string starting at"
        raise JSONError(f"not JSON ({exc.msg}{at} character {exc.pos})") from exc
    except UnicodeDecodeError as exc:
        raise _not_utf8(exc) from exc
    except ValueError as exc:
        raise JSONError("a number too long") from exc
    except RecursionError as exc:
        raise JSONError("nested too deeply") from exc


def _not_utf8(exc: UnicodeDecodeError) -> JSONError:
    return JSONError(f"not UTF-8 ({exc.reason} at byte {exc.start})")


def decode_utf8(data: bytes) -> str:
    """``data`` as text: bytes that are not UTF-8 are a :class:`JSONError`, "not UTF-8 (invalid
    start byte at byte 0)", as :func:`parse_json` says it (for a file read in lines,
    :func:`json_lines`). A leading byte-order mark is dropped, as ``json.loads`` of bytes and
    pip's reading of a requirements file drop it (a Windows editor writes one)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _not_utf8(exc) from exc


_LINE_END = re.compile(r"\r\n?|\n")


def json_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text: split at "\\n", "\\r\\n" or "\\r" only. ``str.splitlines``
    also splits at U+2028, U+2029, U+0085 and others, which a JSON string may hold unescaped
    (``json.dumps(..., ensure_ascii=False)`` writes them so)."""
    return _LINE_END.split(text)


def _where(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _check(value: Any, tp: Any, path: str) -> Any:
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin is Literal:
        if value not in get_args(tp):
            allowed = ", ".join(repr(a) for a in get_args(tp))
            raise SchemaError(f"{path}: must be one of {allowed}, not {value!r}")
        return value
    if origin in (Union, types.UnionType):
        errors = []
        for option in get_args(tp):
            try:
                return _check(value, option, path)
            except SchemaError as exc:
                errors.append(str(exc))
        raise SchemaError(errors[-1] if len(errors) == 1 else f"{path}: unexpected value {value!r}")
    if tp is type(None):
        if value is not None:
            raise SchemaError(f"{path}: must be null")
        return None
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return load(tp, value, path)
    if origin is list:
        if not isinstance(value, list):
            raise SchemaError(f"{path}: must be a list")
        (item,) = get_args(tp) or (Any,)
        return [_check(v, item, _where(path, i)) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise SchemaError(f"{path}: must be an object")
        key_tp, value_tp = get_args(tp) or (str, Any)
        return {_check(k, key_tp, path): _check(v, value_tp, _where(path, k)) for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise SchemaError(f"{path}: must be true or false")
        return value
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise SchemaError(f"{path}: must be an integer")
        return value
    if tp is float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise SchemaError(f"{path}: must be a number")
        if not math.isfinite(value):  # JSON has none, but Python reads 1e400, NaN and Infinity
            raise SchemaError(f"{path}: must be a finite number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise SchemaError(f"{path}: must be a string")
        return value
    raise TypeError(f"schema: unsupported annotation {tp!r} at {path}")


@functools.cache
def _schema_of(cls: type[Any]) -> tuple[dict[str, Any], dict[str, dataclasses.Field[Any]]]:
    """A dataclass's resolved annotations and init fields, worked out once per class
    (``get_type_hints`` evaluates every annotation string each time: most of a manifest's load)."""
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    return typing.get_type_hints(cls), fields


def load(cls: type[T], data: Any, path: str = "") -> T:
    """Build ``cls`` (a dataclass) from ``data`` (parsed JSON), checking every field."""
    if not isinstance(data, dict):
        raise SchemaError(f"{path or cls.__name__}: must be an object")
    hints, fields = _schema_of(typing.cast(Any, cls))
    unknown = [k for k in data if k not in fields]
    if unknown:
        raise SchemaError(f"{_where(path, unknown[0])}: unknown field")
    values: dict[str, Any] = {}
    for name, f in fields.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise SchemaError(f"{_where(path, name)}: missing")
            continue
        values[name] = _check(data[name], hints[name], _where(path, name))
    try:
        return cls(**values)
    except ValueError as exc:  # a __post_init__ check
        raise SchemaError(f"{path or cls.__name__}: {exc}") from exc


def dump(obj: Any) -> Any:
    """A dataclass (or nested structure of them) as plain JSON-ready data."""
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) and not isinstance(obj, type) else obj
