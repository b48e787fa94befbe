"""Validation of config.yaml: JSON Schema with defaults, then the cross-field rules.

Errors name the offending key as a dotted path (``variants.two_layer.n_heads``)
and say what is allowed, before any job starts.
"""
from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Callable

import jsonschema
import yaml


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key."""


# Folders of results/ that the workflow writes itself: a model of that name would put its
# results/{model}/ folder among them ("models": results/figures/models/, the figures of
# every model side by side, beside each model's results/figures/{model}/).
RESULT_FOLDERS = ("settings", "tables", "figures", "benchmarks", "report", "models")

# A model's name is a folder name and part of file names (results/{model}/, logs/...);
# every file system takes names of 255 bytes, and derived models add a suffix.
MAX_NAME_LENGTH = 100


# ---------------------------------------------------------------- registered checks
# The cross-field check of an experiment's settings is registered by the experiment's own
# package (inductionlab/experiments/<name>/), with @settings_check(name), when the loader
# (inductionlab.experiments.available) imports it; this module imports nothing by name.

SETTINGS_CHECKS: dict[str, Callable] = {}


def settings_check(name: str):
    """Register the decorated ``check(settings, config) -> list of problems`` as the
    settings check of experiment ``name``."""
    def register(check):
        if SETTINGS_CHECKS.setdefault(name, check) is not check:
            raise ValueError(f"settings check {name!r} is registered twice")
        return check
    return register


# ---------------------------------------------------------------- YAML without duplicates

class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (the second would
    silently replace the first)."""


def _mapping_without_duplicates(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.setdefault(key, key_node.start_mark.line)
        except TypeError:
            continue  # an unhashable key: the constructor below refuses it
        if first != key_node.start_mark.line:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first given on line {first + 1}); the second "
                "would silently replace the first", key_node.start_mark)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _mapping_without_duplicates)


def load_yaml_text(text: str):
    """YAML ``text`` as data, with the safe loader; a key given twice is an error."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


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
    why = error.schema.get("why") if error.validator in ("maximum", "maxLength") else None
    return f"{_key(path)}: {error.message}" + (f" ({why})" if why else "")


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


def validate_config(config: dict, schema_path: str | Path) -> dict:
    """Validate ``config`` in place (filling defaults) and return it.

    Raises :class:`ConfigError` listing every problem, each naming its key.
    """
    problems = non_string_keys(config) + non_finite_numbers(config)
    if not problems:
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
    schema = load_yaml_text(Path(schema_path).read_text())
    validator_cls = _with_defaults(jsonschema.validators.validator_for(schema))
    errors = sorted(validator_cls(schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [_describe(e, prefix) for e in errors]


def check_semantics(config: dict) -> list[str]:
    """Rules JSON Schema does not express; one message per problem."""
    problems = []
    task = config["task"]
    if task["vocab_size"] < task["block_len"]:
        problems.append(f"task.vocab_size: {task['vocab_size']} letters are fewer than "
                        f"task.block_len = {task['block_len']}: the failure-mode suite's repetition "
                        "patterns need up to block_len distinct letters; use vocab_size >= block_len")
    for name, spec in config["variants"].items():
        where = f"variants.{name}"
        if name in RESULT_FOLDERS:
            problems.append(f"{where}: {name!r} is reserved (results/{name}/ holds the workflow's "
                            f"own files: reserved are {', '.join(RESULT_FOLDERS)}); rename the variant")
        if spec["d_model"] % spec["n_heads"]:
            problems.append(f"{where}.d_model: {spec['d_model']} is not divisible by "
                            f"{where}.n_heads = {spec['n_heads']}")
        bad = [l for l in spec["smear_layers"] if l >= spec["n_layers"]]
        if bad:
            problems.append(f"{where}.smear_layers: layer(s) {bad} do not exist with "
                            f"n_layers = {spec['n_layers']} (layers are 0-based)")
    problems += _check_tasks(config)
    problems += _check_behaviour(config)
    problems += _check_ablations(config)
    train = config["train"]
    if train["eval_every"] > train["steps"]:
        problems.append(f"train.eval_every: {train['eval_every']} exceeds train.steps = "
                        f"{train['steps']}; the log would hold only the first and last step")
    return problems


def _check_tasks(config: dict) -> list[str]:
    """Every entry of ``tasks:`` (a declared kind, settings it takes, within the context)
    and every variant's ``task`` (a known name)."""
    from .core.tasks import tasks_problems

    return tasks_problems(config)


def _check_ablations(config: dict) -> list[str]:
    """Every ablation entry against every variant (a named layer or head must exist)."""
    from .core.ablation_plan import config_problems

    return config_problems(config)


def _check_behaviour(config: dict) -> list[str]:
    from .core.data import TaskConfig, check_prompt

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
    return problems + behaviour_settings_problems(behaviour, task)


def behaviour_settings_problems(settings: dict, task) -> list[str]:
    """What is wrong with ``period_lengths`` and ``shared_prefix_len`` of the behaviour
    settings for ``task``, one line per problem naming the key (none: an empty list).

    A period needs its distinct letters in the vocabulary and a prediction after the
    letter that first repeats: 2 <= p <= min(vocab_size, seq_len - 2). The shared prefix
    leaves each block a letter of its own: 1 <= prefix_len <= block_len - 1.
    """
    problems = []
    top = min(task.vocab_size, task.seq_len - 2)
    for p in settings["period_lengths"]:
        if not 2 <= p <= top:
            problems.append(f"behaviour.period_lengths: {p} must be between 2 and {top} (the "
                            f"block's distinct letters among vocab_size = {task.vocab_size}, and "
                            f"a prediction after its first repeat in {task.seq_len} tokens)")
    prefix = settings["shared_prefix_len"]
    if not 1 <= prefix <= task.block_len - 1:
        problems.append(f"behaviour.shared_prefix_len: {prefix} must be between 1 and "
                        f"task.block_len - 1 = {task.block_len - 1} (each block keeps a letter "
                        "of its own)")
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
        elif str(hit.resolve()) in found:
            problems.append(f"extra_rules.{k}: {entry!r} is the same file as extra_rules."
                            f"{found.index(str(hit.resolve()))}; give each rule file once")
        else:
            found.append(str(hit.resolve()))
            problem = rule_file_problem(hit)
            if problem:
                problems.append(f"extra_rules.{k}: {entry!r} {problem}")
    if problems:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(problems))
    return found


def rule_file_problem(path) -> str | None:
    """What makes ``path`` no Snakemake rule file (not ``.smk``, not text, a syntax error
    at a line), or None. Parsed as Snakemake parses an included file; nothing is run."""
    path = Path(path)
    if path.suffix != ".smk":
        return "is not a rule file (a rule file is named <experiment>.smk)"
    try:
        path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return "is not a text file, so not a rule file"
    from snakemake import parser
    from snakemake.sourcecache import LocalSourceFile

    class _Sources:
        @staticmethod
        def open(source):
            return open(source.get_path_or_uri(secret_free=True), encoding="utf-8")

    class _Workflow:
        sourcecache = _Sources()

    try:
        code, _ = parser.parse(LocalSourceFile(str(path)), _Workflow(), {})
        compile(code, str(path), "exec")
    except SyntaxError as err:
        return f"does not parse: {err.msg}" + (f" (line {err.lineno})" if err.lineno else "")
    except Exception as err:  # noqa: BLE001 - Snakemake's own parse errors
        return f"does not parse: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
    return None


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
    problems = (non_finite_numbers(settings, ("experiments", name))
                + schema_problems(settings, schema_path, prefix=("experiments", name)))
    if not problems and check is not None:
        problems = check(settings, config)
    if problems:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(problems))
    return settings


def read_yaml(path, kind: str = "config file") -> dict:
    """A YAML config file as a mapping; a syntax error or a key given twice is one line
    naming file:line:column."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such {kind}" if not path.exists()
                          else f"{path}: is a directory, not a {kind}" if path.is_dir()
                          else f"{path}: is not a regular file, so not a {kind}")
    try:
        data = load_yaml_text(path.read_text())
    except yaml.constructor.ConstructorError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: {err.problem or err.context}") from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: YAML syntax error: {err.problem or err.context}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not a YAML file, so not a {kind} ({str(err)[:120]})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a {kind} is a mapping of keys to values")
    return data


def overlay(config: dict, other: dict) -> dict:
    """``other`` merged into ``config`` in place, as Snakemake merges ``--configfile`` files:
    mappings key by key, recursively; every other value (a list too) replaced."""
    for key, value in other.items():
        if isinstance(value, dict):
            base = config.get(key)
            config[key] = overlay(base if isinstance(base, dict) else {}, value)
        else:
            config[key] = value
    return config


def _check_experiment_names(config: dict, experiments: dict, extras) -> None:
    # a folder the loader found but could not load has a problem (no __init__.py, ...)
    known = sorted(n for n, e in experiments.items() if getattr(e, "problem", None) is None)
    problems = [f"experiments.{name}: no experiment of that name (known: {', '.join(known) or 'none'}); "
                "an experiment is a folder of inductionlab/experiments/"
                for name in config.get("experiments", {}) if name not in experiments]
    problems += [f"experiments.{name}: {experiments[name].problem}"
                 for name, value in config.get("experiments", {}).items()
                 if name in experiments and name not in known and value is not False]
    taken = set(config.get("experiments", {})) | {Path(e).stem for e in extras}
    problems += [f"variants.{name}: {name!r} is the name of an experiment, whose results/{name}/ "
                 "folder it would share; rename the variant"
                 for name in config["variants"] if name in taken]
    if problems:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(problems))


def check_workflow_config(config: dict, workflow_dir: str | Path, experiments: dict | None = None,
                          cwd=None) -> list[str]:
    """The workflow's whole config check, in place (defaults filled).

    The main schema and its cross-field rules; every experiment switched on (a key of
    ``experiments``) against its own schema and check (``experiments``: name ->
    :class:`inductionlab.experiments.Experiment`, the folders found); then
    ``extra_rules`` resolved to files. Returns the rule files to include: each experiment's
    ``rules.smk``, in the config's order, then the extra rule files. Raises
    :class:`ConfigError`. The Snakefile and ``inductionlab check-config`` both call it.
    """
    workflow_dir = Path(workflow_dir)
    experiments = experiments or {}
    validate_config(config, workflow_dir / "workflow" / "schemas" / "config.schema.yaml")
    extras = extra_rule_files(config["extra_rules"], workflow_dir, cwd)
    _check_experiment_names(config, experiments, extras)
    # `<name>: false` switches an experiment off (an overlay merges mappings, so it cannot
    # remove a name): it is taken out, as if never named
    config["experiments"] = {k: v for k, v in config["experiments"].items() if v is not False}
    on = [experiments[name] for name in config["experiments"]]
    for experiment in on:
        validate_experiment(config, experiment.name, experiment.schema,
                            SETTINGS_CHECKS.get(experiment.name))
    return [str(e.rules) for e in on] + extras


def load_config(path: str | Path, schema_path: str | Path) -> dict:
    """Read a YAML config file and validate it against the main schema."""
    return validate_config(read_yaml(path), schema_path)
