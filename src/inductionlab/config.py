"""The workflow's config check: config.yaml read and merged, validated against the main
schema (with every stage folder's section) with its defaults, then dispatched to the checks
the folders register: each stage folder checks its own section and each experiment switched
on its own settings (:func:`settings_check`).

Errors name the offending key as a dotted path (``variants.two_layer.n_heads``)
and say what is allowed, before any job starts.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import jsonschema
import yaml

from .config_files import (MAX_VALUES, ConfigError, load_yaml_text, overlay,  # noqa: F401
                           parse_config_text, read_yaml)
from .folders import load_folder
from .rule_files import extra_rule_files, included_rule_files, rule_file_problem  # noqa: F401
from .schema_check import (non_finite_numbers, non_string_keys, read_schema,  # noqa: F401
                           schema_problems)

# Folders of results/ that the workflow writes itself: a model of that name would put its
# results/{model}/ folder among them ("models" and "study": results/figures/models/ and
# results/figures/study/, the figures of every model side by side and of a study, beside
# each model's results/figures/{model}/).
RESULT_FOLDERS = ("settings", "tables", "figures", "benchmarks", "report", "models", "study")

# A model's name is a folder name and part of file names (results/{model}/, logs/...);
# every file system takes names of 255 bytes, and derived models add a suffix.
MAX_NAME_LENGTH = 100


# ---------------------------------------------------------------- registered checks
# The cross-field check of a config section is registered by the folder that owns it, with
# @settings_check(name), when its package is imported: a stage's (inductionlab/stages/
# <name>/, checking the section ``<name>:``) and an experiment's (inductionlab/experiments/
# <name>/, checking ``experiments.<name>``); this module imports none of them by name.

SETTINGS_CHECKS: dict[str, Callable] = {}
# what ``inductionlab check-config`` prints of an experiment switched on, beside the check
# (its estimated cost, ...): registered with @config_notes(name), lines of (settings, config)
CONFIG_NOTES: dict[str, Callable] = {}


def _registrar(table: dict, name: str, what: str):
    """A decorator that registers its function in ``table`` under ``name``, once."""
    def register(function):
        if table.setdefault(name, function) is not function:
            raise ValueError(f"{what} {name!r} is registered twice")
        return function
    return register


def config_notes(name: str):
    """Register the decorated ``notes(settings, config) -> list of lines`` as what
    ``inductionlab check-config`` prints of experiment ``name`` when it is switched on."""
    return _registrar(CONFIG_NOTES, name, "config notes")


def settings_check(name: str):
    """Register the decorated ``check(settings, config) -> list of problems`` as the
    settings check of stage or experiment ``name``."""
    return _registrar(SETTINGS_CHECKS, name, "settings check")


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


def check_semantics(config: dict) -> list[str]:
    """Rules JSON Schema does not express; one message per problem: the task and the
    variants here, every entry of ``tasks:``, then each stage folder's own check of its
    section; the memory a job needs last, when nothing else is wrong."""
    from .core.spec import model_name_problem
    from .core.tasks import tasks_problems

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
        periodic = model_name_problem(name)
        if periodic:
            problems.append(f"{where}: {periodic}; rename the variant")
        if spec["d_model"] % spec["n_heads"]:
            problems.append(f"{where}.d_model: {spec['d_model']} is not divisible by "
                            f"{where}.n_heads = {spec['n_heads']}")
        bad = [l for l in spec["smear_layers"] if l >= spec["n_layers"]]
        if bad:
            problems.append(f"{where}.smear_layers: layer(s) {bad} do not exist with "
                            f"n_layers = {spec['n_layers']} (layers are 0-based)")
        if "smear_init" in spec and not spec["smear_layers"]:
            problems.append(f"{where}.smear_init: it starts the smear weights of smeared layers, "
                            "and smear_layers is empty; remove it or name the smeared layers")
    problems += tasks_problems(config)
    problems += stage_problems(config)
    return problems or memory_problems(config)


def stage_problems(config: dict) -> list[str]:
    """Each stage folder's check of its own section (registered when the folder is
    imported), in the order of the stages' names."""
    from . import stages

    problems = []
    for name in stages.available():
        check = SETTINGS_CHECKS.get(name)
        if check is not None and name in config:
            problems += check(config[name], config)
    return problems


def memory_problems(config: dict, available: int | None = None) -> list[str]:
    """A job that would need more memory than this machine gives a process (``available``
    bytes; default: :func:`inductionlab.core.bounds.available_memory`), estimated from the
    config before any job starts (:func:`inductionlab.core.bounds.config_memory_problems`,
    on every task a model may train on: the write-up's and each of tasks:); one line per
    problem naming the key to lower."""
    from .core import bounds
    from .core.loading import checkpoint_steps
    from .core.tasks import WRITE_UP, resolve_task, task_from_dict

    available = bounds.available_memory() if available is None else available
    if available is None:
        return []
    tasks = {}
    for name in [WRITE_UP, *(config.get("tasks") or {})]:
        try:
            tasks[name] = task_from_dict(resolve_task(config, name))
        except (ValueError, TypeError, KeyError, AttributeError):
            continue  # the tasks: check names it
    checkpoints = len(checkpoint_steps(config["train"]["steps"], config["train"]["n_checkpoints"]))
    return bounds.config_memory_problems(config, tasks, checkpoints, available)


def validate_experiment(config: dict, name: str, schema_path: str | Path, check=None) -> dict:
    """Validate the settings ``config["experiments"][name]`` of an extra experiment.

    They are checked against the experiment's own schema, whose defaults are filled
    in place (an experiment without settings gets them all; one without a schema file
    takes none), then by ``check`` (settings, config) -> list of problems, for rules a
    schema does not express. Returns the settings; raises :class:`ConfigError` naming
    every bad key from the top of the config (``experiments.<name>.<key>``), or the
    schema file when it is no schema.
    """
    experiments = config.setdefault("experiments", {})
    settings = experiments.setdefault(name, {})
    where = f"experiments.{name}"
    problems = non_finite_numbers(settings, ("experiments", name))
    schema_path = Path(schema_path)
    if not schema_path.is_file():
        if settings:
            problems.append(f"{where}: the experiment takes no settings (its folder has no "
                            f"schema.yaml); unknown key(s) {', '.join(map(str, settings))}: "
                            f"give it as {name}: {{}}")
    else:
        schema_problem = experiment_schema_problem(schema_path)
        if schema_problem:
            raise ConfigError(f"invalid config:\n  - {where}: {schema_problem}")
        problems += schema_problems(settings, schema_path, prefix=("experiments", name))
    if not problems and check is not None:
        problems = check(settings, config)
    if problems:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(problems))
    return settings


def experiment_schema_problem(path: Path) -> str | None:
    """What keeps the file ``path`` from being an experiment's schema (it does not parse,
    it is no mapping, or no JSON Schema), naming the file; None when it is one."""
    try:
        schema = load_yaml_text(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as err:
        first = next((line for line in str(err).splitlines() if line.strip()), type(err).__name__)
        mark = getattr(err, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        return f"its schema {path}{at} does not parse: {first.strip()}"
    if not isinstance(schema, dict):
        return (f"its schema {path} is not a mapping of keys to values (a JSON Schema in "
                f"YAML), but {type(schema).__name__}")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as err:
        return f"its schema {path} is not a JSON Schema: {str(err).splitlines()[0]}"
    return None

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
    :class:`inductionlab.folders.Folder`, the folders found); then
    ``extra_rules`` resolved to files. Returns the rule files to include: each experiment's
    ``rules.smk``, in the config's order, then the extra rule files. Raises
    :class:`ConfigError`. The Snakefile and ``inductionlab check-config`` both call it.
    """
    workflow_dir = Path(workflow_dir)
    experiments = experiments or {}
    validate_config(config, workflow_dir / "workflow" / "schemas" / "config.schema.yaml")
    extras = extra_rule_files(config["extra_rules"], workflow_dir, cwd, experiments)
    # only the experiments switched on are imported: a folder that is not, broken or not,
    # runs no code and stops nothing
    experiments = {name: load_folder(folder) if config["experiments"].get(name, False) is not False
                   else folder for name, folder in experiments.items()}
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
