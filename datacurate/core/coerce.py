"""Typed coercion of plain data (YAML, ``--set``, keyword arguments) into config
dataclasses: the leaf module every config (pipeline, stages, training, ablation) uses, so
that none imports another to read its YAML, merge ``--set key=value`` or document a field."""

from __future__ import annotations

import copy
import dataclasses
import difflib
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

import yaml


class ConfigError(ValueError):
    """A configuration problem, reported as one line before any work starts."""


def opt(default: Any, help: str, **meta) -> Any:
    """A config field and its help text (``datacurate stages``, ``--help``): ``x: int = opt(3, "what x is")``.
    A list or dict default is copied per instance, a callable one (``list``, a dataclass) called."""
    if not (callable(default) or isinstance(default, (list, dict))):
        return dataclasses.field(default=default, metadata={"help": help, **meta})
    make = default if callable(default) else lambda: copy.deepcopy(default)
    return dataclasses.field(default_factory=make, metadata={"help": help, **meta})


_SCALARS = {bool: (bool, "true/false"), int: (int, "an integer"), float: ((int, float), "a number"), str: (str, "a string")}


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
    if tp in _SCALARS:
        kinds, what = _SCALARS[tp]
        if not isinstance(value, kinds) or (isinstance(value, bool) and tp is not bool):  # YAML's true is no number
            raise ConfigError(f"{where}: expected {what}, got {value!r}")
        return float(value) if tp is float else value
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


def read_yaml(source: str | Path, what: str) -> dict:
    """A YAML file whose top level is a mapping, or a one-line :class:`ConfigError`."""
    p = Path(source)
    if not p.is_file():
        raise ConfigError(f"{what} file not found: {source}")
    try:
        raw = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark else ""
        raise ConfigError(f"{source}: invalid YAML{at}: {getattr(e, 'problem', e)}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    return raw


def parse_override(item: str) -> tuple[list[str], Any]:
    """``a.b.c=value`` -> (["a","b","c"], value parsed as a YAML scalar or list)."""
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected KEY=VALUE")
    key, raw = item.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise ConfigError(f"--set {item!r}: empty key")
    return parts, value


def set_key(raw: dict, parts: list[str], value: Any, tp: Any = Any, where: str = "--set") -> None:
    """The one ``--set`` merge of every config: ``parts`` (a dotted key) set to ``value`` in ``raw``,
    the YAML of dataclass ``tp``, walking its tree. A section given as a path is ``{path: ...}``;
    a list of ``{name: params}`` (stages) takes a name or index; a field with ``whole_keys`` takes
    the rest of the key whole (an arm's ``set: {stage.key: v}``). Keys are checked on coercion."""
    node, key = raw, ".".join(parts)
    for i, p in enumerate(parts):
        if isinstance(node, list):  # named entries: node becomes the entry {name: params}
            names = [next(iter(e)) if isinstance(e, dict) and e else str(e) for e in node]
            j = names.index(p) if p in names else int(p) if p.isdigit() and int(p) < len(node) else None
            if j is None:
                raise ConfigError(f"{where} {key}: no entry '{p}' (entries: {', '.join(names)})")
            node[j], p = node[j] if isinstance(node[j], dict) and node[j] else {names[j]: None}, names[j]
            node = node[j]
        tp, meta = _field_of(tp, p)
        if i == len(parts) - 1 or meta.get("whole_keys"):
            if i < len(parts) - 1:  # {stage.key: value}
                node[p] = node = node.get(p) or {}
                p = ".".join(parts[i + 1:])
            node[p] = value
            return
        child = node.get(p)
        if isinstance(child, (str, list)) and "path" in getattr(tp, "__dataclass_fields__", ()):
            child = {"path": child}  # input: data.jsonl
        elif child is None:
            child = {}
        elif not isinstance(child, (dict, list)):
            raise ConfigError(f"{where} {key}: '{p}' is not a section")
        node[p] = node = child


def _field_of(tp: Any, name: str) -> tuple[Any, Any]:
    """(type, metadata) of field ``name`` of ``tp`` (a dataclass or ``dict[str, X]``), optional
    or not; (Any, {}) where the tree says nothing (a free-form mapping)."""
    f = next((f for f in dataclasses.fields(tp) if f.name == name), None) if dataclasses.is_dataclass(tp) else None
    if f is not None:
        tp, meta = typing.get_type_hints(tp)[name], f.metadata
    else:
        tp, meta = (typing.get_args(tp)[1] if typing.get_origin(tp) is dict and typing.get_args(tp) else Any), {}
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return (args[0] if typing.get_origin(tp) in (Union, types.UnionType) and len(args) == 1 else tp), meta
