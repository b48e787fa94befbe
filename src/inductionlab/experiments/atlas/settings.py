"""The formation atlas's settings: its grid of models, the tasks it registers and the check
of its settings against the rest of the config. Light: the workflow and the command line
import it.

The grid (:func:`grid_points`): every variant at every context length T (uniform
initialisation, no intervention); at the reference T, every other initialisation, every
intervention that applies to the variant, and the control. Each point is one model,
trained for every seed of the config.

The task at T is variable_period with periods min_period … min(max_period, ⌊T/2⌋), so that
a sequence holds two copies of its longest period. The atlas registers these tasks itself
(:func:`atlas_tasks`, one per longest period, named ``atlas_periods<min>to<max>``): its
rules add them to the config's ``tasks:`` before registering its models, so nothing has to
be written into config.yaml, and a ``tasks:`` entry of the same name and another document
is refused by the check.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ...config import settings_check
from ...stages.settings import SettingsFile, declare_settings

declare_settings("atlas", SettingsFile("experiments.atlas", task=False))

UNIFORM = "uniform"
NONE = "none"
PREFIX = "atlas"


@dataclass(frozen=True)
class GridPoint:
    """One model of the atlas: ``model`` is its registered name, ``variant`` the config's
    variant it retrains, ``context`` its T, ``init`` its embedding_init, ``intervention``
    a label (``none``, ``clampA_trained``, ``freeze_layer0``) with the setting itself in
    ``setting``, ``baseline`` the unclamped model at the same T of the same variant,
    ``reference`` the model whose model.pt a trained clamp reads (else None), ``role``
    what the point is on: ``context``, ``init``, ``intervention`` or ``control``."""

    model: str
    variant: str
    context: int
    init: str
    intervention: str
    role: str
    baseline: str
    setting: dict | None = None
    reference: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def intervention_label(setting: dict) -> str:
    """``clampA_trained``, ``freeze_layer0``: the model name's part for an intervention."""
    if setting["kind"] == "clamp":
        return f"clamp{setting['part']}_{setting.get('reference', 'trained')}"
    return f"{setting['kind']}_{setting['part']}"


PART_WORDS = {"A": "the previous-token part A", "B": "the match B", "C": "the copy C"}
REFERENCE_WORDS = {"trained": "the same seed's trained model", "handbuilt": "a hand-built solution"}


def intervention_words(setting: dict) -> str:
    """An intervention in words: "the copy C clamped to a hand-built solution"."""
    if setting["kind"] == "freeze":
        return "layer 0 frozen at its initialisation"
    return (f"{PART_WORDS[setting['part']]} clamped to "
            f"{REFERENCE_WORDS[setting.get('reference', 'trained')]}")


def longest_period(settings: dict, context: int) -> int:
    """The longest period at context length ``context``: min(max_period, ⌊T/2⌋)."""
    return min(settings["max_period"], context // 2)


def task_name(settings: dict, context: int) -> str:
    return f"{PREFIX}_periods{settings['min_period']}to{longest_period(settings, context)}"


def atlas_tasks(settings: dict) -> dict[str, dict]:
    """The tasks the atlas trains on, by name: one variable_period task per longest period
    over its context lengths."""
    contexts = set(settings["contexts"]) | {settings["reference_context"]}
    return {task_name(settings, t): {"kind": "variable_period", "min_period": settings["min_period"],
                                     "max_period": longest_period(settings, t)}
            for t in sorted(contexts)}


def context_model(variant: str, context: int) -> str:
    return f"{PREFIX}_{variant}_T{context}"


def applies(setting: dict, variant: dict, vocab_size: int = 26) -> bool:
    """Whether intervention ``setting`` applies to ``variant`` (its config entry, defaults
    filled): a freeze of layer 0 needs a second layer; a clamp needs an induction circuit
    (two layers, or one with smeared keys); a hand-built copy (part C) needs d_model >=
    vocab_size (:meth:`~inductionlab.core.clamping.TrainingIntervention.problem`)."""
    layers = int(variant.get("n_layers", 1))
    smeared = 0 in (variant.get("smear_layers") or [])
    if setting["kind"] == "freeze":
        return layers >= 2
    if setting["part"] == "C" and setting.get("reference") == "handbuilt" \
            and int(variant.get("d_model", vocab_size)) < vocab_size:
        return False
    return layers >= 2 or smeared


def _vocab(config: dict) -> int:
    return int((config.get("task") or {}).get("vocab_size", 26))


def grid_points(settings: dict, config: dict) -> list[GridPoint]:
    """Every model of the atlas, in order: the context axis, the control, the
    initialisation axis, the interventions."""
    ref = settings["reference_context"]
    points = []
    for v in settings["variants"]:
        for t in settings["contexts"]:
            name = context_model(v, t)
            points.append(GridPoint(name, v, t, UNIFORM, NONE, "context", name))
    if settings.get("control"):
        name = context_model(settings["control"], ref)
        points.append(GridPoint(name, settings["control"], ref, UNIFORM, NONE, "control", name))
    for v in settings["variants"]:
        baseline = context_model(v, ref)
        for init in settings["inits"]:
            if init != UNIFORM:
                points.append(GridPoint(f"{PREFIX}_{v}_{init}", v, ref, init, NONE, "init", baseline))
        for setting in settings["interventions"]:
            if not applies(setting, config["variants"].get(v, {}), _vocab(config)):
                continue
            setting = dict(setting)
            if setting["kind"] == "clamp":
                setting.setdefault("reference", "trained")
            label = intervention_label(setting)
            trained = setting.get("reference") == "trained"
            points.append(GridPoint(f"{PREFIX}_{v}_{label}", v, ref, UNIFORM, label, "intervention",
                                    baseline, setting, baseline if trained else None))
    return points


def model_changes(settings: dict, point: GridPoint) -> dict:
    """The model fields a grid point changes in its variant."""
    changes = {"task": task_name(settings, point.context), "context": point.context}
    if point.init != UNIFORM:
        changes["embedding_init"] = point.init
    return changes


@settings_check("atlas")
def check_settings(settings: dict, config: dict) -> list[str]:
    """Every context length holds two copies of the shortest period and the reference
    context is one of them (it anchors the interventions), every variant (and the
    control) exists, every intervention applies to some variant, an intervention names a
    reference only for a clamp, and no task of tasks: or variant takes a name the atlas
    gives."""
    where = "experiments.atlas"
    variants = config["variants"]
    problems = []
    low = 2 * settings["min_period"]
    for t in settings["contexts"]:
        if t < low:
            problems.append(f"{where}.contexts: {t} tokens do not hold two copies of min_period "
                            f"{settings['min_period']}; use at least {low}")
    if settings["min_period"] > settings["max_period"]:
        problems.append(f"{where}.min_period: {settings['min_period']} is above max_period "
                        f"{settings['max_period']}")
    if settings["reference_context"] not in settings["contexts"]:
        problems.append(f"{where}.reference_context: {settings['reference_context']} is not one of "
                        f"contexts {settings['contexts']}")
    for v in settings["variants"]:
        if v not in variants:
            problems.append(f"{where}.variants: {v!r} is not in variants {sorted(variants)}")
    control = settings.get("control")
    if control and control not in variants:
        problems.append(f"{where}.control: {control!r} is not in variants {sorted(variants)}")
    for i, setting in enumerate(settings["interventions"]):
        key = f"{where}.interventions[{i}]"
        parts = {"clamp": ("A", "B", "C"), "freeze": ("layer0",)}[setting["kind"]]
        if setting["part"] not in parts:
            problems.append(f"{key}.part: {setting['part']!r} is no part of a {setting['kind']}; "
                            f"allowed: {', '.join(parts)}")
        elif setting["kind"] == "freeze" and "reference" in setting:
            problems.append(f"{key}.reference: a freeze keeps layer 0 at its initialisation and "
                            "takes no reference; remove it")
        elif not any(applies(setting, variants[v], _vocab(config)) for v in settings["variants"] if v in variants):
            problems.append(f"{key}.part: no variant of {settings['variants']} has part "
                            f"{setting['part']!r} ({setting['kind']} needs "
                            + ("n_layers >= 2)" if setting["kind"] == "freeze"
                               else "n_layers >= 2 or smear_layers: [0])"))
    if problems:
        return problems
    tasks = config.get("tasks") or {}
    for name, document in atlas_tasks(settings).items():
        if name in tasks and tasks[name] != document:
            problems.append(f"tasks.{name}: the atlas registers this task as {document}; rename "
                            "the entry")
    for point in grid_points(settings, config):
        if point.model in variants:
            problems.append(f"variants.{point.model}: {point.model!r} is also the name of an "
                            "atlas model; rename the variant")
    return problems
