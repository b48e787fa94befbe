"""The formation atlas's cost, estimated before it starts (``inductionlab check-config``
prints it): CPU seconds per grid point and in all, from step times measured on this
project's CPU (docs/runtime.md, "The training step" and "The atlas's cost").

A point's training is steps × its step time. The step time at T = 24 and a batch of 256 is
the measured one of the model's shape (:data:`STEP_MS_T24`, compiled; :data:`EAGER_MS_T24`
for a model trained with a clamp, which trains uncompiled), times the in-job factor
(validation, checkpoints: :data:`IN_JOB`), scaled by (T / 24)^:data:`T_EXPONENT` (the eager
step timed at T = 12, 24 and 48: 0.50–0.57 and 2.34–2.36 of T = 24's) and by batch / 256.
Every model and seed then runs the analyses (:data:`ANALYSES_S`, the default run's per
model). A clamped step is the eager step times its clamp's measured factor
(:data:`CLAMP_OVER_EAGER`: the clamp's own work, a trained reference's forward pass or the
per-head outputs a replaced part needs). An estimate: the step moves with the machine's load
by a third.
"""
from __future__ import annotations

from ...config import config_notes
from .settings import grid_points

# ms per step at T = 24, batch 256, one thread (docs/runtime.md, 2026-12-04): compiled, eager
STEP_MS_T24 = {(1, False): 5.85, (1, True): 6.46, (2, False): 12.03}
EAGER_MS_T24 = {(1, False): 8.88, (1, True): 11.69, (2, False): 17.38}
PER_LAYER_MS = 6.18          # a layer beyond those measured, compiled (two_layer − one_layer)
EAGER_PER_LAYER_MS = 8.50
IN_JOB = 1.2                 # a job's step over the bare step (1.12–1.23 measured)
T_EXPONENT = 1.2             # step time ∝ T^1.2 (12 → 24 → 48: × 2.0, × 2.35)
ANALYSES_S = 45.0            # CPU seconds of one model and seed's analyses, default settings
# A clamped step over the plain eager step of the same model, by (layers, part, reference):
# benchmarks/clamp_speed.py, median of 7 alternating blocks of 20 steps (docs/runtime.md)
CLAMP_OVER_EAGER = {
    (2, "A", "trained"): 1.81, (2, "A", "handbuilt"): 1.37,
    (2, "B", "trained"): 1.94, (2, "B", "handbuilt"): 1.34,
    (2, "C", "trained"): 2.37, (2, "C", "handbuilt"): 1.65,
    (1, "A", "trained"): 0.94, (1, "A", "handbuilt"): 0.92,
    (1, "B", "trained"): 1.53, (1, "B", "handbuilt"): 1.13,
    (1, "C", "trained"): 2.05, (1, "C", "handbuilt"): 1.51,
}


def step_ms(variant: dict, context: int, batch_size: int, setting: dict | None = None) -> float:
    """Estimated ms of one training step of ``variant`` (its config entry) at ``context``,
    trained with the intervention ``setting`` (None: none). A clamped model trains
    uncompiled, with its clamp's work; a frozen one compiles like any model."""
    layers = int(variant.get("n_layers", 1))
    smeared = bool(variant.get("smear_layers"))
    clamped = setting is not None and setting["kind"] == "clamp"
    table, extra = (EAGER_MS_T24, EAGER_PER_LAYER_MS) if clamped else (STEP_MS_T24, PER_LAYER_MS)
    base = table.get((min(layers, 2), smeared and layers == 1), table[(2, False)])
    base += extra * max(0, layers - 2)
    if clamped:
        base *= CLAMP_OVER_EAGER[(min(layers, 2), setting["part"], setting.get("reference", "trained"))]
    return base * IN_JOB * (context / 24) ** T_EXPONENT * batch_size / 256


def point_seconds(settings: dict, config: dict) -> dict[str, float]:
    """Model -> estimated CPU seconds of one seed: training and analyses."""
    train = config["train"]
    return {p.model: train["steps"] * step_ms(config["variants"][p.variant], p.context,
                                              train["batch_size"], p.setting) / 1e3
            + ANALYSES_S for p in grid_points(settings, config)}


@config_notes("atlas")
def cost_lines(settings: dict, config: dict) -> list[str]:
    """What check-config says the atlas costs: per grid point and in all."""
    seconds = point_seconds(settings, config)
    seeds = len(config["seeds"])
    total = sum(seconds.values()) * seeds
    low, high = min(seconds.values()), max(seconds.values())
    cheapest = min(seconds, key=seconds.get)
    dearest = max(seconds, key=seconds.get)
    return [f"estimated CPU seconds per grid point and seed (training and analyses, from "
            f"measured step times; an estimate): {low:,.0f} ({cheapest}) to {high:,.0f} ({dearest})",
            f"estimated in all: {len(seconds)} models x {seeds} seed(s) = {total:,.0f} CPU seconds "
            f"({total / 3600:.1f} CPU hours; {total / 3600 / 2:.1f} h on two free cores)"]
