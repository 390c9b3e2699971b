"""Typed configuration fields: values from the command line or a ``config.json`` coerced to each field's type."""

from __future__ import annotations

import dataclasses
import types
import typing

__all__ = ["coerce_fields", "require_positive"]

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _coerce(where: str, name: str, typ, value):
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(typ) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in {"none", "null"}):
            return None
        return _coerce(where, name, args[0], value)
    bad = ValueError(f"{where}: field '{name}' expects {getattr(typ, '__name__', typ)}, got {value!r}")
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise bad
    if typ is int:
        if isinstance(value, bool):
            raise bad
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                raise bad from None
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise bad
    if typ is float:
        if isinstance(value, bool):
            raise bad
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                raise bad from None
        raise bad
    if typ is str:
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):  # `--set screen_after=2` parses as a number
            return str(value)
        raise bad
    return value


def coerce_fields(cls, values: dict, where: str) -> dict:
    """Check ``values`` against the dataclass ``cls`` and convert each to its field's type.

    Strings are parsed (``"3"`` -> 3, ``"1e-3"`` -> 0.001, ``"False"``/``"false"``/``"0"``/``0`` -> False,
    ``"none"`` -> None for optional fields); an int is accepted where a float or a text is expected.

    Args:
        cls: a dataclass type.
        values: field name -> value.
        where: prefix of error messages (e.g. ``"model 'born-lm'"``).

    Returns:
        A new dict with converted values.

    Raises:
        ValueError: an unknown field (the message lists the fields) or a value of the wrong type.
    """
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ValueError(f"{where} has no config field(s) {', '.join(unknown)}; fields: {', '.join(sorted(fields))}")
    return {k: _coerce(where, k, hints[k], v) for k, v in values.items()}


def require_positive(where: str, **values: float) -> None:
    """Raise ``ValueError`` unless every named value is > 0."""
    for name, v in values.items():
        if not v > 0:
            raise ValueError(f"{where}: '{name}' must be > 0, got {v}")
