"""Tasks: named generators of letter sequences that say where every target was copied from.

A task kind is a frozen dataclass declared once, by the module that samples it, with
:func:`declare_task`: its ``kind`` name, its settings (fields with defaults), ``sample(n,
gen)`` returning a :class:`TaskSample` and ``floor()`` returning what the task's Bayes
predictors reach (:class:`Floor`: the all-target predictor on the predictable targets and
on every target, and the predictor told which targets are scored) and ``bayes_probs``, that
predictor on given sequences. Every kind shares the letters and the context of the
write-up's task (``vocab_size``, ``seq_len``), except that a model may set its own context
(:func:`with_context`) on a kind whose sequence length is a setting. The kinds shipped: ``repeated_block`` (the
write-up's, :mod:`.data`), ``variable_period`` (:mod:`.variable_period`) and
``random_offset`` (:mod:`.random_offset`); an experiment declares its own in its folder.

The sources. ``sources[b, t, j]`` is True when token ``t`` of sequence ``b`` was copied
from position ``j < t`` by construction (not every earlier position that happens to hold
the same letter); t runs to T inclusive: token T is the task's continuation after the
last position, which the last query's attention can still seek. Prediction ``i`` (at
position ``i``) is for token ``i + 1``; it is predictable when that token is in the
sequence and has a source. Scores that read where a copy is (induction,
nearest copy, first block) read these masks, sequence by sequence.

A task in a spec or a config is a JSON document ``{"name", "kind", ...settings}``;
:func:`task_from_dict` parses it. The write-up's task is named :data:`WRITE_UP`.
"""
from __future__ import annotations

from dataclasses import asdict, fields, replace

from . import data, random_offset, variable_period  # noqa: F401 - each declares its kind
from .data import TaskConfig
from .task_kinds import (_KINDS, CONTEXT, SHARED, TaskSettingsError, _integer_problem,
                         setting_problems)

WRITE_UP = "write_up"  # the name of the config's ``task:`` (the write-up's task)


def task_kinds() -> dict[str, type]:
    """Every declared task kind, by name."""
    return dict(_KINDS)


def find_kind(kind) -> type:
    """The task kind named ``kind``: a kind of the core, or one a folder declares (an
    experiment's: the folders of :data:`inductionlab.folders.KIND_FOLDERS` are imported,
    each once, only when a kind is not the core's).
    Raises ValueError, one line saying where kinds are looked for."""
    if not isinstance(kind, str):
        raise ValueError(f"the task kind must be a name, not {kind!r}")
    if kind in _KINDS:
        return _KINDS[kind]
    from ..folders import KIND_FOLDERS

    looked = {what: finder() for what, finder in KIND_FOLDERS.items()}
    if kind in _KINDS:
        return _KINDS[kind]
    core = sorted(k for k, cls in _KINDS.items() if cls.__module__.startswith(__package__))
    declared = sorted(set(_KINDS) - set(core))
    where = []
    for what, found in looked.items():
        loaded = [name for name, folder in found.items() if folder.problem is None]
        skipped = [f"{name} ({folder.problem})" for name, folder in found.items()
                   if folder.problem is not None]
        where.append(f"{what} folders looked in: {', '.join(loaded) or 'none'}"
                     + (f"; not looked in: {'; '.join(skipped)}" if skipped else ""))
    raise ValueError(
        f"unknown task kind {kind!r}; known: {sorted(_KINDS)} (the core's: {', '.join(core)}"
        + (f"; declared by folders: {', '.join(declared)}" if declared else "")
        + "".join(f"; {w}" for w in where) + ")")


def task_from_dict(document: dict):
    """The task a JSON document describes (``kind`` missing: the write-up's
    ``repeated_block``, as older specs wrote it). Every setting is checked against the
    kind's declaration (an integer within its bounds) before the task is made. Raises
    ValueError naming what is wrong (:class:`TaskSettingsError`, naming each key, for
    the settings)."""
    if not isinstance(document, dict):
        raise ValueError(f"a task is a JSON object {{\"kind\": ..., settings}}, not "
                         f"{type(document).__name__}")
    document = dict(document)
    kind = document.pop("kind", "repeated_block")
    document.pop("name", None)
    cls = find_kind(kind)
    problems = setting_problems(cls, document)
    if problems:
        raise TaskSettingsError(problems)
    task = cls(**document)
    problems = task.problems()
    if problems:
        raise ValueError("; ".join(problems))
    return task


def task_document(task, name: str) -> dict:
    """The JSON document of ``task`` named ``name`` (what a spec records)."""
    return {"name": name, "kind": task.kind, **asdict(task)}


def with_context(task, context):
    """``task`` with sequences of ``context`` tokens: a model's own context length (a model
    setting, ``context``). A kind whose sequence length is a setting (``seq_len``:
    variable_period, random_offset) takes any length that holds two copies of its longest
    period (``shortest_context``, where the kind says it) up to :data:`CONTEXT`; a kind
    whose length follows from its other settings (the write-up's repeated_block: block_len
    x n_blocks) takes only that length. Raises ValueError, one line saying what is allowed."""
    problem = _integer_problem(context, 2, CONTEXT)
    if problem:
        raise ValueError(f"{problem} (the context length: a whole number of tokens)")
    if "seq_len" not in {f.name for f in fields(task)}:
        if context == task.seq_len:
            return task
        raise ValueError(f"{context} tokens: task kind {task.kind!r} fixes its sequence length "
                         f"by its own settings ({task.seq_len} tokens); a context length applies "
                         "to a kind with a seq_len setting, such as variable_period")
    shortest = getattr(task, "shortest_context", 2)
    if context < shortest:
        raise ValueError(f"{context} tokens do not hold two copies of the longest period of "
                         f"task kind {task.kind!r}; allowed: {shortest} to {CONTEXT}")
    task = replace(task, seq_len=context)
    problems = task.problems()
    if problems:
        raise ValueError("; ".join(problems))
    return task


def out_of_context(n_ctx: int, task, name: str = WRITE_UP) -> str | None:
    """Why a model whose context is ``n_ctx`` tokens cannot be measured on ``task`` (named
    ``name``; by default the write-up's, whose prompts are completed to its sequence
    length), or None. A model reads any sequence up to its context, so one with a longer
    context than the task's reads the task's sequences as they are."""
    if n_ctx >= task.seq_len:
        return None
    return (f"not measured: the model's context of {n_ctx} tokens is shorter than the "
            f"{task.seq_len}-token sequences of task {name}")


def resolve_task(config: dict, name: str, context=None) -> dict:
    """The full document of task ``name`` of a validated config: the write-up's task
    (:data:`WRITE_UP`) or an entry of ``tasks:``, with the shared letters and context of
    the write-up's task, or the model's own ``context`` (:func:`with_context`). Raises
    ValueError naming an unknown task or a context the task cannot take."""
    write_up = TaskConfig.from_dict(config["task"])
    if name == WRITE_UP:
        if context is not None:
            try:
                with_context(write_up, context)
            except ValueError as err:
                raise ValueError(f"context: {err}") from None
        return task_document(write_up, WRITE_UP)
    tasks = config.get("tasks") or {}
    if name not in tasks:
        raise ValueError(f"task {name!r} is neither {WRITE_UP!r} (the config's task:) nor one "
                         f"of tasks: {sorted(tasks)}")
    document = {k: v for k, v in tasks[name].items()}
    shared = {"vocab_size": write_up.vocab_size, "seq_len": write_up.seq_len}
    given = [key for key in SHARED if key in document]
    if given:
        raise TaskSettingsError([(key, f"every task shares the write-up's letters and context, "
                                       f"set in task: (vocab_size {write_up.vocab_size}, "
                                       f"{write_up.seq_len} tokens: block_len x n_blocks); "
                                       "remove it from the task"
                                       + ("; a variant sets its own context length with context:"
                                          if key == "seq_len" else "")) for key in given])
    kind = find_kind(document.get("kind"))
    document.update({k: v for k, v in shared.items() if k in {f.name for f in fields(kind)}})
    task = task_from_dict(document)
    if (task.vocab_size, task.seq_len) != (write_up.vocab_size, write_up.seq_len):
        raise ValueError(f"its sequences are {task.seq_len} tokens of {task.vocab_size} letters; "
                         f"every task shares the write-up's {write_up.seq_len} tokens of "
                         f"{write_up.vocab_size} letters (the models' context)")
    if context is not None:
        try:
            task = with_context(task, context)
        except ValueError as err:
            raise ValueError(f"context: {err}") from None
    return task_document(task, name)


def tasks_problems(config: dict) -> list[str]:
    """One line per bad entry of ``tasks:`` or bad ``task`` of a variant, naming the key."""
    problems = []
    for name, entry in (config.get("tasks") or {}).items():
        if name == WRITE_UP:
            problems.append(f"tasks.{name}: {WRITE_UP!r} is the config's task: (the write-up's); "
                            "choose another name")
            continue
        try:
            resolve_task(config, name)
        except TaskSettingsError as err:
            problems += [f"tasks.{name}.{key}: {why}" for key, why in err.problems]
        except ValueError as err:
            problems.append(f"tasks.{name}: {err}")
    for name, spec in config["variants"].items():
        task = spec.get("task", WRITE_UP)
        if task != WRITE_UP and task not in (config.get("tasks") or {}):
            problems.append(f"variants.{name}.task: {task!r} is neither {WRITE_UP!r} nor one of "
                            f"tasks: {sorted(config.get('tasks') or {})}")
        elif "context" in spec:
            try:
                resolve_task(config, task, spec["context"])
            except TaskSettingsError:
                pass  # the task's own entry is bad: said above
            except ValueError as err:
                if str(err).startswith("context: "):
                    problems.append(f"variants.{name}.{err}")
    return problems
