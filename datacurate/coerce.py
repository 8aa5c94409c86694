"""Typed coercion of plain data (YAML, ``--set``, keyword arguments) into config
dataclasses: the leaf module both :mod:`datacurate.config` and the stages use, so that
neither imports the other."""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from typing import Any, Literal, Union


class ConfigError(ValueError):
    """A configuration problem, reported as one line before any work starts."""



def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def coerce(value: Any, tp: Any, where: str) -> Any:
    """Check ``value`` against the annotation ``tp`` and convert what is safe (int->float)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(value, arg, where)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0] if errors else f"{where}: invalid value {value!r}")
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{where}: {value!r} is not one of {list(args)}")
        return value
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
        return from_dict(tp, value, where)
    if origin is list:
        if isinstance(value, (str, int, float)) and args and args[0] is str:
            value = [value]  # a single path or language is a one-element list
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {type(value).__name__}")
        return [coerce(v, args[0] if args else Any, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
        kt, vt = args if args else (Any, Any)
        return {coerce(k, kt, where): coerce(v, vt, f"{where}.{k}") for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    raise ConfigError(f"{where}: unsupported type {_type_name(tp)}")


def unknown_key(key: str, known: list[str], where: str, what: str = "key") -> ConfigError:
    near = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean '{near[0]}'?)" if near else f" (known: {', '.join(known)})"
    return ConfigError(f"{where}: unknown {what} '{key}'{hint}")


def from_dict(cls: type, data: dict, where: str) -> Any:
    """Build dataclass ``cls`` from ``data``; unknown keys and wrong types are errors."""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in data.items():
        if key not in names:
            raise unknown_key(str(key), names, where)
        kwargs[key] = coerce(value, hints[key], f"{where}.{key}" if where else key)
    try:
        obj = cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {e}") from None
    validate = getattr(obj, "validate", None)
    if validate:
        try:
            validate()
        except ValueError as e:
            raise ConfigError(f"{where}: {e}") from None
    return obj
