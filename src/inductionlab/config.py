"""Validation of config.yaml: JSON Schema with defaults, then the cross-field rules.

Errors name the offending key as a dotted path (``variants.two_layer.n_heads``)
and say what is allowed, before any job starts.
"""
from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import yaml


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key."""


def _with_defaults(cls):
    """A validator class that fills in ``default`` values of missing properties."""
    validate_properties = cls.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(cls, {"properties": set_defaults})


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
    return f"{_key(path)}: {error.message}"


def validate_config(config: dict, schema_path: str | Path) -> dict:
    """Validate ``config`` in place (filling defaults) and return it.

    Raises :class:`ConfigError` listing every problem, each naming its key.
    """
    problems = schema_problems(config, schema_path)
    if not problems:
        problems = check_semantics(config)
    if problems:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(problems))
    return config


def schema_problems(instance: dict, schema_path: str | Path, prefix: tuple = ()) -> list[str]:
    """Check ``instance`` against a JSON Schema, filling its defaults in place.

    One message per problem, naming the key; ``prefix`` is where ``instance`` sits
    in the config (e.g. ``("experiments", "positional_shortcut")``).
    """
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator_cls = _with_defaults(jsonschema.validators.validator_for(schema))
    errors = sorted(validator_cls(schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [_describe(e, prefix) for e in errors]


def check_semantics(config: dict) -> list[str]:
    """Rules JSON Schema does not express; one message per problem."""
    problems = []
    for name, spec in config["variants"].items():
        where = f"variants.{name}"
        if spec["d_model"] % spec["n_heads"]:
            problems.append(f"{where}.d_model: {spec['d_model']} is not divisible by "
                            f"{where}.n_heads = {spec['n_heads']}")
        bad = [l for l in spec["smear_layers"] if l >= spec["n_layers"]]
        if bad:
            problems.append(f"{where}.smear_layers: layer(s) {bad} do not exist with "
                            f"n_layers = {spec['n_layers']} (layers are 0-based)")
    problems += _check_behaviour(config)
    problems += _check_ablations(config)
    train = config["train"]
    if train["eval_every"] > train["steps"]:
        problems.append(f"train.eval_every: {train['eval_every']} exceeds train.steps = "
                        f"{train['steps']}; the log would hold only the first and last step")
    return problems


def _check_ablations(config: dict) -> list[str]:
    """Every ablation entry against every variant (a named layer or head must exist)."""
    from .ablations import config_problems

    return config_problems(config)


def _check_behaviour(config: dict) -> list[str]:
    from .behaviour import check_prompt
    from .data import TaskConfig

    task = TaskConfig.from_dict(config["task"])
    behaviour = config["behaviour"]
    problems = []
    for k, item in enumerate(behaviour["prompts"]):
        try:
            check_prompt(item["prompt"], task)
        except ValueError as err:
            problems.append(f"behaviour.prompts.{k}.prompt: {err}")
    for key in ("failure_prompt_len",):
        if not task.block_len <= behaviour[key] < task.seq_len:
            problems.append(f"behaviour.{key}: {behaviour[key]} must be at least task.block_len "
                            f"= {task.block_len} and below the sequence length {task.seq_len}")
    for L in behaviour["random_prompt_lengths"]:
        if L >= task.seq_len:
            problems.append(f"behaviour.random_prompt_lengths: {L} leaves nothing to complete "
                            f"(sequence length {task.seq_len})")
    return problems


def extra_rule_files(paths: list[str], workflow_dir: str | Path,
                     cwd: str | Path | None = None) -> list[str]:
    """The files of ``extra_rules`` as absolute paths.

    An absolute path is taken as it is; a relative one is looked up in the working
    directory ``cwd`` first, then in the workflow's own folder ``workflow_dir`` (the
    Snakefile's), so ``workflow/rules/extra/x.smk`` works with ``snakemake -s .../Snakefile
    -d elsewhere``. A file found nowhere raises :class:`ConfigError` naming the entry.
    """
    cwd = Path(cwd) if cwd is not None else Path.cwd()
    found, problems = [], []
    for k, entry in enumerate(paths):
        path = Path(entry)
        candidates = [path] if path.is_absolute() else [cwd / path, Path(workflow_dir) / path]
        hit = next((c for c in candidates if c.is_file()), None)
        if hit is None:
            problems.append(f"extra_rules.{k}: {entry!r} is not a file (looked in "
                            + " and ".join(str(c.parent.resolve()) for c in candidates) + ")")
        else:
            found.append(str(hit.resolve()))
    if problems:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(problems))
    return found


def validate_experiment(config: dict, name: str, schema_path: str | Path, check=None) -> dict:
    """Validate the settings ``config["experiments"][name]`` of an extra experiment.

    They are checked against the experiment's own schema, whose defaults are filled
    in place (an experiment without settings gets them all), then by ``check``
    (settings, config) -> list of problems, for rules a schema does not express.
    Returns the settings; raises :class:`ConfigError` naming every bad key from the
    top of the config (``experiments.<name>.<key>``).
    """
    experiments = config.setdefault("experiments", {})
    settings = experiments.setdefault(name, {})
    problems = schema_problems(settings, schema_path, prefix=("experiments", name))
    if not problems and check is not None:
        problems = check(settings, config)
    if problems:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(problems))
    return settings


def load_config(path: str | Path, schema_path: str | Path) -> dict:
    """Read a YAML config file and validate it."""
    config = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: the config must be a mapping of keys to values")
    return validate_config(config, schema_path)
