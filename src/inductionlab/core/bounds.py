"""Rough upper estimates of the memory a job takes, from the config alone, and the memory
this machine gives a process: a config whose jobs cannot fit is refused before any job
starts, instead of swapping or being killed hours in, and a command given a spec or
settings that cannot fit refuses before it allocates.

Estimates count the float32 tensors that core/model.py (its explicit attention form, the
one that keeps the most) and core/train.py hold at their peak, the task samples with their
sources, and what each task kind's Bayes predictor and exact floor compute with
(:func:`task_floor_bytes`, :func:`bayes_bytes`); :data:`SLACK` covers temporaries. Measured
peaks are below the estimates and within a factor of three of them (checked in
tests/test_config_bounds.py).
"""
from __future__ import annotations

import os
from pathlib import Path

FLOAT = 4  # bytes of a float32
SLACK = 1.25  # temporaries and the allocator's rounding
BASE = 512 * 2**20  # a process with torch imported, before any tensor
# Sequences per validation pass (core.metrics.evaluate): a chunk's activations stay in the
# core's cache, three times faster than 4,096 at once for a 2-layer model on a CPU, and the
# same logits
EVAL_CHUNK = 256
# Repetition patterns per pass of a variable_period task's exact floor
# (core/variable_period.py): each pass holds the Bayes predictor of that many sequences
FLOOR_ROWS = 8192
# a logistic fit over the checkpoints (analysis.phase_change) needs this many points, so the
# checkpoint schedule must give them
MIN_FIT_POINTS = 5


def sequence_length(task: dict) -> int:
    """Tokens per sequence of ``task``: its ``seq_len``, or the write-up's block_len x
    n_blocks."""
    return task["seq_len"] if "seq_len" in task else task["block_len"] * task["n_blocks"]


def _shape(variant: dict, task: dict) -> tuple[int, int, int, int, int]:
    """(T, V, D, H, L): sequence length (the variant's own ``context`` where it sets one),
    vocabulary, width, heads and layers."""
    return (variant.get("context") or sequence_length(task), task["vocab_size"],
            variant["d_model"], variant["n_heads"], variant["n_layers"])


def sample_bytes(n_sequences: int, seq_len: int) -> int:
    """A task sample of ``n_sequences`` as it is held (core/task_kinds.TaskSample): the
    tokens (int64) and the sources of every token, a bool per pair of positions [n, T + 1, T]."""
    return n_sequences * seq_len * (8 + seq_len + 1)


def sampling_bytes(n_sequences: int, seq_len: int) -> int:
    """Peak memory of drawing that sample (core/task_kinds.periodic_sources): the sample and,
    while its sources are formed, every pair's position difference modulo the period
    (int64 [n, T + 1, T]) and the bool masks of the same shape combined into them; 12
    bytes a pair besides the sample (a measured peak is 10 to 11; the twelfth is the
    allocator's, whose peak varies from run to run)."""
    return sample_bytes(n_sequences, seq_len) + 12 * n_sequences * (seq_len + 1) * seq_len


def parameter_floats(variant: dict, task: dict) -> int:
    """Weights of one model: embedding, unembedding, Q, K, V, O, positions, smear weights."""
    T, V, D, H, L = _shape(variant, task)
    return 2 * V * D + 4 * L * D * D + T * D + L * H * T


def training_floats(variant: dict, task: dict, train: dict) -> dict[str, int]:
    """The floats one model of a training job holds at its peak, by part: ``step`` (a
    batch through the model and back), ``validation`` (a validation chunk's forward pass
    and the whole validation set's logits; the larger of the two is the peak) and
    ``state`` (weights, gradients, Adam's two moments), and ``sample``: the validation
    sample with its sources, drawn first and held for the whole job (:func:`sampling_bytes`,
    in floats). See :func:`training_bytes`."""
    T, V, D, H, L = _shape(variant, task)
    pattern = H * T * T
    val = train["val_size"]
    return {"step": train["batch_size"] * (L * (pattern + 8 * T * D) + 4 * pattern + 3 * T * V),
            "validation": (min(val, EVAL_CHUNK) * (L * (pattern + 3 * T * D) + 2 * pattern)
                           + val * T * (V + 3)),
            "state": 4 * parameter_floats(variant, task),
            "sample": -(-sampling_bytes(val, T) // FLOAT)}


def training_bytes(variant: dict, task: dict, train: dict) -> int:
    """Peak memory of one training job of ``variant`` (its model fields) on ``task``
    (vocab_size, block_len, n_blocks) with ``train`` (the config's train section).

    Per sequence of a batch, what the forward pass keeps for the backward pass: every
    layer's attention pattern [H, T, T] and its queries, keys, values, heads' output and
    residual (8 x [T, D]); one layer's scores and their gradients at a time (4 x [H, T, T]);
    the logits with their log-softmax and gradient (3 x [T, V]). Or a validation chunk's
    forward pass with the whole validation set's logits, when larger. Plus the weights with
    their gradients and Adam's two moments; all times ``seeds_per_job``, which a stacked
    job holds at once; and the validation sample with its sources, which the seeds share.
    """
    parts = training_floats(variant, task, train)
    per_model = max(parts["step"], parts["validation"]) + parts["state"]
    return BASE + int(SLACK * FLOAT * (train.get("seeds_per_job", 1) * per_model + parts["sample"]))


def training_problem(who: str, variant: dict, task: dict, train: dict,
                     available: int | None, asked: int = 0) -> str | None:
    """The line that refuses a training job of ``who`` (a variant's words) that needs more
    than ``available`` bytes (and than ``asked``, the memory a cluster job asks for), naming
    the setting to lower; None when it fits or nothing is known of the machine."""
    need = training_bytes(variant, task, train)
    if available is None or need <= max(available, asked):
        return None
    parts = training_floats(variant, task, train)
    seeds, T = train.get("seeds_per_job", 1), _shape(variant, task)[0]
    if seeds > 1 and training_bytes(variant, task, {**train, "seeds_per_job": 1}) <= available:
        key, what = "train.seeds_per_job", f"{seeds} seeds at once"
    elif parts["step"] >= parts["validation"] + parts["sample"]:
        key, what = "train.batch_size", f"batches of {train['batch_size']} x {T} tokens"
    else:
        key, what = "train.val_size", f"a validation set of {train['val_size']} x {T} tokens"
    return (f"{key}: a training job of {who} needs about {gigabytes(need)} ({what}, "
            f"{variant['n_layers']} layer(s) of {variant['n_heads']} head(s), d_model "
            f"{variant['d_model']}), more than the {gigabytes(available)} this machine gives a "
            f"process; lower {key}, or make the model or the sequence smaller")


def analysis_bytes(variant: dict, task: dict, n_sequences: int) -> int:
    """Peak memory of an analysis that scores ``n_sequences`` sequences in one pass,
    keeping every attention pattern and each head's output [H, T, D]: the behaviour
    stage's head scores run three such passes (the sequences, their distinct-letter and
    positional controls) and keep them all."""
    T, V, D, H, L = _shape(variant, task)
    pattern = H * T * T
    per_sequence = 3 * L * (pattern + 4 * T * D) + L * H * T * D + 2 * pattern + 3 * T * V
    return BASE + int(SLACK * FLOAT * n_sequences * per_sequence)


def bayes_bytes(n_sequences: int, seq_len: int, vocab: int, hypotheses: int) -> int:
    """Peak memory of a task's Bayes predictor on ``n_sequences`` sequences with its scores
    (core/bayes_predictor.py: mixture_probs, then target_scores or the period test's
    ties), per token: the next letter's distribution (float64 [V]) with two temporaries of
    its size while its top letters are found, the posterior over the ``hypotheses``
    (float64 [H], three at once while it is formed) and a few float64 and int64 rows. A
    measured peak is 0.6 to 0.8 of this (tests/test_config_bounds.py)."""
    return n_sequences * seq_len * (24 * vocab + 24 * hypotheses + 128)


def hypothesis_count(task) -> int:
    """How many copying hypotheses the Bayes predictor of ``task`` (a task kind's object)
    weighs: one per period of a variable_period task, per offset of a random_offset task,
    one for the write-up's; a kind declared elsewhere says so by a ``hypothesis_count``
    attribute (else one)."""
    if hasattr(task, "hypothesis_count"):
        return int(task.hypothesis_count)
    if task.kind == "variable_period":
        return task.max_period - task.min_period + 1
    if task.kind == "random_offset":
        return task.max_offset + 1
    return 1


def patterns_with_letters(n: int, letters: int) -> int:
    """Repetition patterns of a block of ``n`` positions (set partitions) with at most
    ``letters`` classes: the Bell number Bell(n) when letters >= n. By Stirling numbers of
    the second kind, without listing them."""
    row = [1]  # S(0, k)
    for m in range(1, n + 1):
        row = [0] + [k * (row[k] if k < len(row) else 0) + row[k - 1] for k in range(1, m + 1)]
    return sum(row[:letters + 1])


def task_floor_bytes(task) -> int:
    """Peak memory of computing the exact floor of ``task`` (its ``floor()``): for a
    variable_period task, per period n, the classes of every position of every repetition
    pattern a block can have (int64 [patterns, T]) and the Bayes predictor on
    :data:`FLOOR_ROWS` of them at a time; the other shipped kinds' floors are closed forms
    (nothing of the context's size). A kind declared elsewhere says so by a
    ``floor_bytes()`` method (else nothing)."""
    if hasattr(task, "floor_bytes"):
        return int(task.floor_bytes())
    if task.kind != "variable_period":
        return 0
    T, V, H = task.seq_len, task.vocab_size, hypothesis_count(task)
    peaks = []
    for n in range(task.min_period, task.max_period + 1):
        patterns = patterns_with_letters(n, V)
        peaks.append(8 * patterns * T + bayes_bytes(min(patterns, FLOOR_ROWS), T, V, H))
    return max(peaks)


def evaluation_sample_bytes(n_sequences: int, seq_len: int) -> int:
    """Peak memory of the behaviour stage's evaluation samples (stages/behaviour/
    behaviour.py, evaluation_samples): the first sample held while the second is drawn,
    then both while the distinct-letter draw copies the sources to float32 [n, T, T]."""
    held = sample_bytes(n_sequences, seq_len)
    return max(held + sampling_bytes(n_sequences, seq_len),
               2 * held + FLOAT * n_sequences * seq_len * seq_len)


def behaviour_task_bytes(task, n_sequences: int, on_write_up: bool = True) -> int:
    """What the behaviour stage (stages/behaviour/behaviour.py) holds for the task of a
    model, beside the model's passes (:func:`analysis_bytes`): its evaluation samples
    (:func:`evaluation_sample_bytes`), those of the write-up's task too when the model
    trained on another, then the larger of the task's exact floor and its Bayes predictor
    on ``n_sequences`` sequences (the period test's, and on the write-up's sample)."""
    T = task.seq_len
    samples = (1 if on_write_up else 2) * evaluation_sample_bytes(n_sequences, T)
    predictor = bayes_bytes(n_sequences, T, task.vocab_size, hypothesis_count(task))
    return samples + max(task_floor_bytes(task), predictor)


def behaviour_bytes(variant: dict, task, n_sequences: int, on_write_up: bool = True) -> int:
    """Peak memory of the behaviour stage's job of a model of ``variant`` (its model
    fields) trained on ``task`` (a task kind's object): :func:`analysis_bytes` and
    :func:`behaviour_task_bytes`."""
    shape = {"seq_len": task.seq_len, "vocab_size": task.vocab_size}
    return (analysis_bytes(variant, shape, n_sequences)
            + int(SLACK * behaviour_task_bytes(task, n_sequences, on_write_up)))


def behaviour_problem(who: str, variant: dict, task, task_name: str, n_sequences: int,
                      available: int | None, on_write_up: bool = True) -> str | None:
    """The line that refuses the behaviour job of ``who`` (a model's words) on ``task``
    (named ``task_name`` in the config) when it needs more than ``available`` bytes,
    naming the setting to lower: the task's when its exact floor alone does not fit, else
    behaviour.n_sequences; None when it fits or nothing is known of the machine."""
    if available is None:
        return None
    need = behaviour_bytes(variant, task, n_sequences, on_write_up)
    if need <= available:
        return None
    floor = BASE + int(SLACK * task_floor_bytes(task))
    if floor > available:
        where = "task" if task_name == "write_up" else f"tasks.{task_name}"
        key = f"{where}.max_period" if task.kind == "variable_period" else where
        return (f"{key}: the exact floor of task {task_name!r} ({task.kind}, {task.seq_len} "
                f"tokens) needs about {gigabytes(floor)}, more than the {gigabytes(available)} "
                f"this machine gives a process; lower {key}, or task.n_blocks (the context)")
    key = "behaviour.n_sequences"
    return (f"{key}: the behaviour job of {who} on task {task_name!r} needs about "
            f"{gigabytes(need)} ({n_sequences} sequences of {task.seq_len} tokens scored, "
            "their samples and the task's Bayes predictor), more than the "
            f"{gigabytes(available)} this machine gives a process; lower {key}, or make the "
            "model or the sequence smaller")


def config_memory_problems(config: dict, tasks: dict, checkpoints: int, available: int) -> list[str]:
    """The jobs of a validated ``config`` that need more than ``available`` bytes, one line
    each naming the key to lower: a variant's training (which may use up to train.mem_mb x
    seeds_per_job instead, the memory a cluster job asks for), its analyses' passes, its
    behaviour job on each of ``tasks`` (name -> the task kind's object: every task a model
    may train on, as a variant names it or an experiment retrains it on), then the PCA of
    every variant's ``checkpoints`` checkpoints. The first variant that does not fit says
    it."""
    task, train, problems = config["task"], config["train"], []
    behaviour_n = config["behaviour"]["n_sequences"]
    n, key = max((behaviour_n, "behaviour.n_sequences"),
                 (config["dynamics"]["n_sequences"], "dynamics.n_sequences"))
    for name, variant in config["variants"].items():
        who = f"variant {name!r}"
        asked = train["mem_mb"] * 2**20 * train["seeds_per_job"]
        problems += [p for p in [training_problem(who, variant, task, train, available, asked)] if p]
        need = analysis_bytes(variant, task, n)
        if need > available:
            problems.append(
                f"{key}: scoring {n} sequences of {who} in one pass, every attention pattern "
                f"kept, needs about {gigabytes(need)}, more than the {gigabytes(available)} "
                f"this machine gives a process; lower {key}, or make the model smaller")
        else:
            problems += [p for p in (behaviour_problem(who, variant, own, task_name, behaviour_n,
                                                       available, task_name == "write_up")
                                     for task_name, own in tasks.items()) if p][:1]
        if problems:
            return problems
    vectors = len(config["variants"]) * len(config["seeds"]) * checkpoints
    eval_size = config["dynamics"]["eval_size"]
    need = pca_bytes(vectors, eval_size, sequence_length(task))
    if need > available:
        problems.append(
            f"dynamics.eval_size: the PCA of {vectors} checkpoints' per-token losses (every "
            f"variant, seed and checkpoint) on {eval_size} sequences needs about "
            f"{gigabytes(need)}, more than the {gigabytes(available)} this machine gives a "
            "process; lower dynamics.eval_size or train.n_checkpoints")
    return problems


def spec_training_problem(spec, seeds: int = 1, available: int | None = None) -> str | None:
    """:func:`training_problem` of ``seeds`` models of ``spec`` (a
    :class:`~inductionlab.core.spec.Spec`) trained at once, against ``available`` bytes
    (default: :func:`available_memory`)."""
    from dataclasses import asdict

    model = asdict(spec.model)  # its width, heads and layers, and the task's letters and context
    train = {**asdict(spec.train), "seeds_per_job": seeds}
    return training_problem(spec.name if seeds == 1 else f"{seeds} seeds of {spec.variant}",
                            model, model, train,
                            available_memory() if available is None else available)


def spec_behaviour_problem(spec, n_sequences: int, available: int | None = None) -> str | None:
    """:func:`behaviour_problem` of the model of ``spec`` (a
    :class:`~inductionlab.core.spec.Spec`) scored on ``n_sequences`` sequences, against
    ``available`` bytes (default: :func:`available_memory`)."""
    from dataclasses import asdict

    return behaviour_problem(spec.name, asdict(spec.model), spec.task, spec.task_name,
                             n_sequences, available_memory() if available is None else available,
                             on_write_up=spec.task_name == "write_up")


def pca_bytes(n_vectors: int, eval_size: int, seq_len: int) -> int:
    """Peak memory of the one PCA of every checkpoint's per-token losses
    (stages/dynamics/loss_pca.py): ``n_vectors`` (models x seeds x checkpoints) rows of
    ``eval_size`` x (seq_len - 1) losses, in float64, four copies at once (the blocks read,
    the matrix, its centred copy, the SVD's factors)."""
    return BASE + int(SLACK * 8 * 4 * n_vectors * eval_size * (seq_len - 1))


def available_memory() -> int | None:
    """Bytes of memory this process may use: the machine's, capped by a cgroup's
    memory.max (v2) or limit (v1) and by an address-space limit (ulimit -v). None when
    unknown."""
    found = []
    try:
        found.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:  # v1 writes a huge number for "no limit"
            found.append(int(text))
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit != resource.RLIM_INFINITY:
            found.append(limit)
    except (ImportError, ValueError, OSError):
        pass
    return min(found) if found else None


def gigabytes(n: int) -> str:
    return f"{n / 2**30:.1f} GB"
