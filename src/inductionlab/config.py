"""Validation of config.yaml: JSON Schema with defaults, then the cross-field rules.

Errors name the offending key as a dotted path (``variants.two_layer.n_heads``)
and say what is allowed, before any job starts.
"""
from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Callable

import jsonschema
import yaml


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key."""


# Folders of results/ that the workflow writes itself: a model of that name would put its
# results/{model}/ folder among them ("models" and "study": results/figures/models/ and
# results/figures/study/, the figures of every model side by side and of a study, beside
# each model's results/figures/{model}/).
RESULT_FOLDERS = ("settings", "tables", "figures", "benchmarks", "report", "models", "study")

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

# A config file is a few hundred values; anchors and aliases repeat a value without writing
# it out, so a small file can stand for billions ("billion laughs"). Counted before anything
# walks the data.
MAX_VALUES = 100_000


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (the second would
    silently replace the first), in block and flow style alike."""


def _mapping_without_duplicates(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.setdefault(key, key_node.start_mark)
        except TypeError:
            continue  # an unhashable key: the constructor below refuses it
        if first is not key_node.start_mark:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first given on line {first.line + 1}"
                + (f", column {first.column + 1}" if first.line == key_node.start_mark.line else "")
                + "); the second would silently replace the first", key_node.start_mark)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _mapping_without_duplicates)


def _expanded_size(node, limit: int = MAX_VALUES) -> int:
    """How many values ``node`` stands for with every alias written out, counted once per
    node (an alias shares its anchor's node). Raises a ConstructorError at the smallest
    value that exceeds ``limit``, or at an alias inside its own anchor."""
    sizes, open_ = {}, set()

    def size(n) -> int:
        if id(n) in sizes:
            return sizes[id(n)]
        if id(n) in open_:
            raise yaml.constructor.ConstructorError(
                None, None, "an alias refers to a value it is part of; a config file holds no "
                "cycles", n.start_mark)
        open_.add(id(n))
        if isinstance(n, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in n.value)
        elif isinstance(n, yaml.SequenceNode):
            total = 1 + sum(size(v) for v in n.value)
        else:
            total = 1
        open_.discard(id(n))
        if total > limit:
            raise yaml.constructor.ConstructorError(
                None, None, f"this value stands for more than {limit:,} values once its aliases "
                "(*name) are written out; a config file is far smaller: write it out, or "
                "repeat less", n.start_mark)
        sizes[id(n)] = total
        return total

    return size(node)


def load_yaml_text(text: str):
    """YAML ``text`` as data, with the safe loader; a key given twice, or aliases that
    expand to more than :data:`MAX_VALUES` values, is an error."""
    loader = _UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


class _DuplicateJsonKey(Exception):
    pass


def _json_object(pairs):
    data = dict(pairs)
    if len(data) < len(pairs):
        seen = set()
        raise _DuplicateJsonKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return data


def _count_values(data, limit: int = MAX_VALUES) -> int:
    """How many values ``data`` holds (mappings and lists count themselves and their items)."""
    count, todo = 0, [data]
    while todo and count <= limit:
        item = todo.pop()
        count += 1
        if isinstance(item, dict):
            todo += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            todo += item
    return count


def parse_config_text(text: str, where: str):
    """The data of a config file's ``text``, read as Snakemake reads it: as JSON when it is
    JSON (so ``1e-3`` is a number there, as JSON has it), else as YAML (where YAML 1.1, as
    Snakemake's loader has it, reads ``1e-3`` as text). ``where``: the file, for messages."""
    try:
        data = json.loads(text, object_pairs_hook=_json_object)
    except json.JSONDecodeError:
        return load_yaml_text(text)
    except _DuplicateJsonKey as twice:
        # read again as YAML (JSON is YAML) for the line and column; else without them
        try:
            load_yaml_text(text)
        except yaml.constructor.ConstructorError:
            raise
        except (yaml.YAMLError, RecursionError):
            pass
        raise ConfigError(f"{where}: duplicate key {twice.args[0]!r}; the second would "
                          "silently replace the first") from None
    if _count_values(data) > MAX_VALUES:
        raise ConfigError(f"{where}: holds more than {MAX_VALUES:,} values; a config file is "
                          "far smaller")
    return data


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


def check_semantics(config: dict) -> list[str]:
    """Rules JSON Schema does not express; one message per problem."""
    from .core.spec import model_name_problem

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
    problems += _check_tasks(config)
    problems += _check_behaviour(config)
    problems += _check_ablations(config)
    train = config["train"]
    if train["eval_every"] > train["steps"]:
        problems.append(f"train.eval_every: {train['eval_every']} exceeds train.steps = "
                        f"{train['steps']}; the log would hold only the first and last step")
    problems += _check_checkpoints(train)
    return problems or memory_problems(config)


def _check_checkpoints(train: dict) -> list[str]:
    """The dynamics stage fits a logistic curve to every model's checkpoints, which needs
    :data:`~inductionlab.core.bounds.MIN_FIT_POINTS` of them."""
    from .core.bounds import MIN_FIT_POINTS
    from .core.loading import checkpoint_steps

    steps, n = train["steps"], train["n_checkpoints"]
    got = checkpoint_steps(steps, n)
    if len(got) >= MIN_FIT_POINTS:
        return []
    shown = ", ".join(map(str, got))
    why = (f"the dynamics stage fits a logistic curve to every model's checkpoints, which "
           f"needs at least {MIN_FIT_POINTS}")
    enough = next((k for k in range(n, 1001) if len(checkpoint_steps(steps, k)) >= MIN_FIT_POINTS), None)
    if enough is None:
        return [f"train.steps: {steps} step(s) leave room for {len(got)} checkpoints (steps "
                f"{shown}); {why}: use steps >= {MIN_FIT_POINTS - 1}"]
    return [f"train.n_checkpoints: {n} gives {len(got)} checkpoints (steps {shown}); {why}: "
            f"use n_checkpoints >= {enough}"]


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


def included_rule_files(workflow_dir: str | Path, experiments: dict | None = None) -> dict[str, str]:
    """The rule files the workflow includes itself, resolved path -> what it is: every
    ``include: "..."`` of its Snakefile, every stage folder's ``rules.smk``, and each experiment's ``rules.smk`` (``experiments``:
    name -> :class:`inductionlab.folders.Folder`), included when it is switched on."""
    workflow_dir = Path(workflow_dir)
    taken = {}
    try:
        text = (workflow_dir / "Snakefile").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    for match in re.finditer(r"""^\s*include:\s*(["'])(.+?)\1""", text, flags=re.M):
        taken[str((workflow_dir / match.group(2)).resolve())] = (
            "a rule file the Snakefile includes itself")
    from . import stages

    for name, stage in stages.available(load=False).items():
        if stage.problem is None:
            taken[str(stage.rules.resolve())] = (f"the rules of the {name} stage, which the "
                                                 "Snakefile includes itself")
    for name, experiment in (experiments or {}).items():
        rules = getattr(experiment, "rules", None)
        if rules is not None:
            taken[str(Path(rules).resolve())] = (
                f"the rules of experiment {name!r}, included when it is switched on (write "
                f"`experiments: {{{name}: {{}}}}` instead)")
    return taken


def extra_rule_files(paths: list[str], workflow_dir: str | Path,
                     cwd: str | Path | None = None, experiments: dict | None = None) -> list[str]:
    """The files of ``extra_rules`` as absolute paths.

    An absolute path is taken as it is; a relative one is looked up in the working
    directory ``cwd`` first, then in the workflow's own folder ``workflow_dir`` (the
    Snakefile's), so ``workflow/rules/extra/x.smk`` works with ``snakemake -s .../Snakefile
    -d elsewhere``. A file found nowhere, or one the workflow includes itself (see
    :func:`included_rule_files`), raises :class:`ConfigError` naming the entry.
    """
    cwd = Path(cwd) if cwd is not None else Path.cwd()
    taken = included_rule_files(workflow_dir, experiments)
    found, problems = [], []
    for k, entry in enumerate(paths):
        path = Path(entry)
        candidates = [path] if path.is_absolute() else [cwd / path, Path(workflow_dir) / path]
        hit = next((c for c in candidates if c.is_file()), None)
        if hit is None:
            problems.append(f"extra_rules.{k}: {entry!r} is not a file (looked in "
                            + " and ".join(str(c.parent.resolve()) for c in candidates) + ")")
        elif str(hit.resolve()) in taken:
            problems.append(f"extra_rules.{k}: {entry!r} is {taken[str(hit.resolve())]}; "
                            "a rule file included twice defines its rules twice")
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
    """A YAML (or JSON) config file as a mapping, read as data only. A syntax error, a key
    given twice, aliases expanding beyond :data:`MAX_VALUES` values, a tag that would build
    a Python object, a YTE template (``__use_yte__``, which Snakemake would run as code) or
    an empty file is one line naming file:line:column (or the file)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such {kind}" if not path.exists()
                          else f"{path}: is a directory, not a {kind}" if path.is_dir()
                          else f"{path}: is not a regular file, so not a {kind}")
    try:
        data = parse_config_text(path.read_text(encoding="utf-8"), str(path))
    except yaml.constructor.ConstructorError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = err.problem or err.context or ""
        if problem.startswith("could not determine a constructor for the tag"):
            tag = problem.split("tag", 1)[1].strip().strip("'")
            problem = (f"the tag {tag.replace('tag:yaml.org,2002:', '!!')} asks for something "
                       f"other than data; a {kind} holds only mappings, lists, text, numbers "
                       "and booleans")
        raise ConfigError(f"{where}: {problem}") from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: YAML syntax error: {err.problem or err.context}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not a YAML file, so not a {kind} ({str(err)[:120]})") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a {kind}") from None
    if data is None:
        # Snakemake's own words too: it reads a --configfile before the workflow can
        raise ConfigError(f"{path}: holds no keys (it is empty, or only comments); a {kind} "
                          "must be given as JSON or YAML with keys at top level: give at least "
                          "one, or leave the file out")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a {kind} must be given as JSON or YAML with keys at top "
                          f"level, a mapping of keys to values, not a {type(data).__name__}")
    if "__use_yte__" in data:
        raise ConfigError(f"{path}: __use_yte__ would have Snakemake run this file as a YTE "
                          f"template, its ?-values as Python code; a {kind} is data, never "
                          "code: remove __use_yte__ and write the values out")
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
    :class:`inductionlab.folders.Folder`, the folders found); then
    ``extra_rules`` resolved to files. Returns the rule files to include: each experiment's
    ``rules.smk``, in the config's order, then the extra rule files. Raises
    :class:`ConfigError`. The Snakefile and ``inductionlab check-config`` both call it.
    """
    workflow_dir = Path(workflow_dir)
    experiments = experiments or {}
    validate_config(config, workflow_dir / "workflow" / "schemas" / "config.schema.yaml")
    extras = extra_rule_files(config["extra_rules"], workflow_dir, cwd, experiments)
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
