"""A config section checked against its JSON Schema: defaults filled in place, integers
only where the schema says integer, and one message per problem naming its key as a dotted
path (``variants.two_layer.n_heads``) with what is allowed."""
from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import jsonschema

from .config_files import load_yaml_text


def _strict_integer(checker, instance) -> bool:
    """Integers only: ``64.0`` and ``True`` are not integers here."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _with_defaults(cls):
    """A validator class that fills in ``default`` values of missing properties and takes
    only Python ints as integers."""
    validate_properties = cls.VALIDATORS["properties"]
    checker = cls.TYPE_CHECKER.redefine("integer", _strict_integer)

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(cls, {"properties": set_defaults}, type_checker=checker)


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _describe(error: jsonschema.ValidationError, prefix: tuple = ()) -> str:
    path = list(prefix) + list(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, dict) else []
        where = _key(path) if path else "top level"
        return (f"unknown key(s) {', '.join(_key(path + [e]) for e in extra)} in {where}; "
                f"allowed: {', '.join(allowed)}")
    if error.validator == "type" and error.validator_value == "integer" and isinstance(error.instance, float):
        return f"{_key(path)}: {error.instance!r} is a float; write an integer ({error.instance:.0f})" \
            if error.instance.is_integer() else f"{_key(path)}: {error.instance!r} is not an integer"
    written = _as_yaml_number(error.instance) if error.validator == "type" else None
    if written is not None and "number" in error.validator_value:
        return (f"{_key(path)}: {error.instance!r} is text, not a number: YAML reads an exponent "
                f"as a number only with a decimal point and a sign; write {written}")
    why = error.schema.get(f"why_{error.validator}") or (
        error.schema.get("why") if error.validator in ("maximum", "maxLength") else None)
    return f"{_key(path)}: {error.message}" + (f" ({why})" if why else "")


def _as_yaml_number(text) -> str | None:
    """``text`` written so that YAML reads it as a number (``1e-3`` -> ``0.001``), when it
    is a number with an exponent that YAML 1.1 reads as text; else None."""
    if not isinstance(text, str) or not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+", text.strip()):
        return None
    written = repr(float(text))
    if "e" in written:
        mantissa, exponent = written.split("e")
        written = f"{mantissa if '.' in mantissa else mantissa + '.0'}e{exponent}"
    return written


def non_finite_numbers(instance, path=()) -> list[str]:
    """A message for every NaN or infinite number anywhere in ``instance``."""
    if isinstance(instance, float) and not math.isfinite(instance):
        return [f"{_key(path)}: {instance} is not a finite number"]
    if isinstance(instance, dict):
        return [m for k, v in instance.items() for m in non_finite_numbers(v, (*path, k))]
    if isinstance(instance, list):
        return [m for k, v in enumerate(instance) for m in non_finite_numbers(v, (*path, k))]
    return []


def non_string_keys(instance, path=()) -> list[str]:
    """A message for every mapping key in ``instance`` that is not a string (YAML reads
    ``1:`` as an integer, which no name or file may be)."""
    problems = []
    if isinstance(instance, dict):
        for k, v in instance.items():
            if not isinstance(k, str):
                kind = {int: "an integer", float: "a number", bool: "a boolean"}.get(type(k), f"a {type(k).__name__}")
                problems.append(f"{_key(path)}: key {k!r} is {kind}, not a name; "
                                f"quote it ('{k}') or rename it")
            problems += non_string_keys(v, (*path, k))
    elif isinstance(instance, list):
        for k, v in enumerate(instance):
            problems += non_string_keys(v, (*path, k))
    return problems



def read_schema(schema_path: str | Path) -> dict:
    """A JSON Schema document. One marked ``stage_sections: true`` (the workflow's) takes the
    section of every stage folder that has one (``stages/<stage>/schema.yaml``) as its
    property of the stage's name, and that part's definitions as its own."""
    schema = load_yaml_text(Path(schema_path).read_text())
    if not schema.pop("stage_sections", False):
        return schema
    from . import stages

    for name, stage in stages.available(load=False).items():
        if stage.problem is None and stage.schema.is_file():
            part = load_yaml_text(stage.schema.read_text())
            schema.setdefault("definitions", {}).update(part.pop("definitions", {}))
            schema["properties"][name] = part
    return schema


def schema_problems(instance: dict, schema_path: str | Path, prefix: tuple = ()) -> list[str]:
    """Check ``instance`` against a JSON Schema, filling its defaults in place.

    One message per problem, naming the key; ``prefix`` is where ``instance`` sits
    in the config (e.g. ``("experiments", "positional_shortcut")``).
    """
    schema = read_schema(schema_path)
    validator_cls = _with_defaults(jsonschema.validators.validator_for(schema))
    errors = sorted(validator_cls(schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [_describe(e, prefix) for e in errors]
