"""The resolved description of one model to train: name, seed, task, model, training.

The workflow writes one ``spec.json`` per (model, seed) from the validated config;
training reads only that file, so a model's inputs are on disk next to it. A model is
either a variant of the config or derived from one by an experiment (a base variant
and fields of its model that differ); the spec's ``variant`` field is the model's name.

:class:`Spec` is that file parsed once: the task, the model config and the training
settings as typed values, and the JSON document it came from (what ``spec.json``,
``model.pt`` and ``weights.npz`` store, and what a resumed run's key hashes).
"""
from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, field, fields

from ..atomic import atomic_path
from ..records import spec_identity
from .clamping import TrainingIntervention
from .task_kinds import TaskSettingsError
from .tasks import WRITE_UP, resolve_task, task_from_dict
from .model import INIT_DEFAULTS, ModelConfig

SPEC_KEYS = ("variant", "seed", "task", "model", "train")


@dataclass(frozen=True)
class TrainSettings:
    """What a training run reads of the spec's ``train`` block (the config's ``train``;
    its scheduling fields, such as ``seeds_per_job``, stay in the document only)."""

    steps: int
    batch_size: int
    lr: float
    weight_decay: float
    eval_every: int
    val_size: int
    val_seed: int
    n_checkpoints: int
    compile: str = "auto"
    # what is clamped or frozen during training (.clamping); None: nothing, and the key
    # is absent from the document
    intervention: TrainingIntervention | None = None

    @classmethod
    def from_dict(cls, d: dict) -> "TrainSettings":
        known = [f for f in fields(cls) if f.name != "intervention"]
        missing = [f.name for f in known if f.name not in d and f.default is MISSING]
        if missing:
            raise ValueError(f"train settings are missing {missing}")
        settings = cls(**{f.name: _typed(f.name, d[f.name], f.type) for f in known if f.name in d},
                       intervention=TrainingIntervention.from_dict(d.get("intervention")))
        # what the config's schema bounds, for a spec that did not come from a config
        small = [name for name in POSITIVE if getattr(settings, name) < 1]
        if small:
            raise ValueError(f"train.{small[0]}: {getattr(settings, small[0])} is below 1; a model "
                             "trained for no step, on no batch, would be published untrained")
        if settings.n_checkpoints < 2 or not settings.lr > 0 or not settings.weight_decay >= 0:
            raise ValueError("train: n_checkpoints must be at least 2, lr positive and "
                             "weight_decay at least 0")
        return settings


POSITIVE = ("steps", "batch_size", "eval_every", "val_size")


def _typed(name: str, value, kind: str):
    caster = {"int": int, "float": float, "str": str}[kind]
    if kind == "int" and isinstance(value, float) and not value.is_integer():
        raise ValueError(f"train.{name}: {value} is not an integer")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)) \
            or isinstance(value, str) != (kind == "str"):
        raise ValueError(f"train.{name}: {value!r} is not "
                         + {"int": "an integer", "float": "a number", "str": "a string"}[kind])
    return caster(value)


@dataclass(frozen=True)
class Spec:
    """One model to train, parsed: use :meth:`from_dict`, or
    :func:`inductionlab.core.loading.read_spec` for a file."""

    variant: str
    seed: int
    task: object  # the model's own task: a declared task kind (.tasks)
    model: ModelConfig
    train: TrainSettings
    device: str
    document: dict = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, document: dict) -> "Spec":
        """Raises ValueError naming what is missing or invalid."""
        if not isinstance(document, dict):
            raise ValueError(f"a spec is a JSON object, not {type(document).__name__}")
        missing = [k for k in SPEC_KEYS if k not in document]
        if missing:
            raise ValueError(f"spec is missing key(s) {missing}")
        try:
            task = task_from_dict(document["task"])
        except TaskSettingsError as err:
            raise ValueError("; ".join(f"task.{key}: {why}" for key, why in err.problems)) from None
        model = ModelConfig.from_dict({**document["model"], "vocab_size": task.vocab_size,
                                       "seq_len": task.seq_len})
        train = TrainSettings.from_dict(document["train"])
        if train.intervention is not None and train.intervention.problem(model):
            raise ValueError(train.intervention.problem(model))
        return cls(variant=str(document["variant"]), seed=int(document["seed"]), task=task,
                   model=model, train=train,
                   device=str(document.get("device", "cpu")),
                   document=json.loads(json.dumps(document)))

    @classmethod
    def of(cls, spec: "Spec | dict") -> "Spec":
        """``spec`` itself, or the JSON document parsed."""
        return spec if isinstance(spec, Spec) else cls.from_dict(spec)

    def to_dict(self) -> dict:
        """The JSON document (a copy)."""
        return json.loads(json.dumps(self.document))

    def without_seed(self) -> dict:
        """The document without its seed: equal for the seeds of one model."""
        return {k: v for k, v in self.document.items() if k != "seed"}

    @property
    def name(self) -> str:
        return f"{self.variant} seed {self.seed}"

    @property
    def task_name(self) -> str:
        """The name of the model's task in the config (``write_up``: the config's task:)."""
        return str(self.document["task"].get("name", WRITE_UP))


def make_spec(config: dict, variant: str, seed: int, derived: "DerivedModel | None" = None) -> dict:
    """The spec of model ``variant`` at ``seed`` from a validated config (defaults filled):
    a variant of the config, or ``derived`` from one.

    The model's ``context`` (its context length, when it sets one) is its task's sequence
    length: the spec records it in the task document (``seq_len``), and the model's n_ctx
    follows the task. An initialisation setting at its default (``embedding_init:
    uniform``, ``smear_init: 1``) is left out, so a model that does not set it has the
    spec, and the digest, it always had."""
    base = derived.base if derived else variant
    if base not in config["variants"]:
        raise KeyError(f"variant {base!r} is not in config 'variants': {sorted(config['variants'])}")
    model = dict(config["variants"][base]) | (dict(derived.changes) if derived else {})
    task = model.pop("task", WRITE_UP)
    context = model.pop("context", None)
    model = {k: v for k, v in model.items()
             if k not in INIT_DEFAULTS or isinstance(v, bool) or v != INIT_DEFAULTS[k]}
    try:
        task_document = resolve_task(config, task, context)
    except ValueError as err:
        raise ValueError(f"model {variant!r}: {err}") from None
    return {
        "variant": variant,
        "seed": int(seed),
        "task": task_document,
        "model": model,
        "train": train_settings(config, derived),
        "device": config.get("device", "cpu"),
    }


def train_settings(config: dict, derived: "DerivedModel | None" = None) -> dict:
    """A spec's ``train`` block: the config's, and the ``intervention`` of a derived model
    that has one (written only then)."""
    train = dict(config["train"])
    if derived and derived.intervention:
        train["intervention"] = dict(derived.intervention)
    return train


def model_name_problem(name: str) -> str | None:
    """Why Snakemake would stop on a model called ``name``, or None: a name that ends in
    a part repeated 20 times or more (``model_00000000000000000000``) is, to Snakemake's
    check for rules that call themselves without end, a runaway wildcard
    (PeriodicWildcardError, raised only once the jobs are being planned)."""
    from snakemake.io import PeriodicityDetector

    detector = PeriodicityDetector()
    part = detector.is_periodic(name)
    if part is None:
        return None
    return (f"{name!r} ends in {part!r} repeated {detector.min_repeat} times or more, which "
            "Snakemake takes for a rule calling itself without end (PeriodicWildcardError)")


@dataclass(frozen=True)
class DerivedModel:
    """A model an experiment trains: the config's variant ``base`` with ``changes`` to its
    model fields (for example ``pos_encoding: learned``, ``task: variable_period``: a
    task of the config's ``tasks:``, ``context: 48``: its context length, or
    ``embedding_init: normal``)."""

    base: str
    changes: tuple[tuple[str, object], ...]
    # what its training clamps or freezes: the spec's train.intervention (.clamping), as
    # (key, value) pairs; empty: nothing
    intervention: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, config: dict, name: str, base: str, changes: dict,
           intervention: dict | None = None) -> "DerivedModel":
        """Checked against the config: the base exists, the name is new, every changed
        field is a model field and the result is a valid model (with a valid intervention
        for it, if any). Raises ValueError."""
        if name in config["variants"]:
            raise ValueError(f"model {name!r} is already a variant of the config; choose another name")
        if base not in config["variants"]:
            raise ValueError(f"model {name!r}: base variant {base!r} is not in config 'variants' "
                             f"{sorted(config['variants'])}")
        if not changes and not intervention:
            raise ValueError(f"model {name!r}: no field of {base!r} is changed, so it is {base!r}")
        problem = model_name_problem(name)
        if problem:
            raise ValueError(f"model {name!r}: {problem}")
        if isinstance(intervention, TrainingIntervention):
            intervention = intervention.to_dict()
        derived = cls(base, tuple(sorted(changes.items())),
                      tuple(sorted((intervention or {}).items())))
        try:  # unknown field or bad value: ValueError
            model_config(make_spec(config, name, 0, derived))
        except ValueError as err:
            if not intervention:
                raise
            raise ValueError(f"model {name!r}: {err}") from None
        return derived


def model_config(spec: dict) -> ModelConfig:
    """The model config of a spec document (the workflow's check of a derived model)."""
    return Spec.from_dict(spec).model


def write_spec(path, spec: "Spec | dict") -> None:
    """Write a spec.json, its record naming the model, seed and spec it is. A document
    that is no valid spec is written as it is (for the checks of its readers)."""
    document = spec.to_dict() if isinstance(spec, Spec) else spec
    try:
        identity = spec_identity(Spec.of(spec).to_dict())
    except (ValueError, TypeError, KeyError, AttributeError):
        identity = None
    with atomic_path(path, identity=identity) as tmp:
        tmp.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
