"""The report reads for any model: any depth, any number of heads, a model outside every
family, a family named by what it changes; no number prints as a signed zero."""
import pandas as pd
import pytest

from inductionlab.report import numbers, plots
from inductionlab.report.algorithm_readings import carrier, part_name, sentence
from inductionlab.report.content_or_position import _num


# ------------------------------------------------------------------ numbers


@pytest.mark.parametrize("value, spec, text", [
    (-0.004, ".2f", "0.00"), (0.004, "+.2f", "0.00"), (-0.0, "g", "0"), (-0.4, ".0f", "0"),
    (-0.0004, ".1%", "0.0%"), (-0.25, ".2f", "−0.25"), (0.5, "+.2f", "+0.50"),
    (-1e-20, ".2e", "−1.00e−20")])
def test_a_number_that_prints_as_zero_has_no_sign(value, spec, text):
    assert numbers.number(value, spec) == text
    assert plots.number(value, spec) == text  # the figures' numbers are the same


def test_a_share_that_rounds_to_zero_is_0_percent():
    assert numbers.percent(-0.004) == "0 %"
    assert numbers.percent(-0.3) == "−30 %" and numbers.percent(0.6) == "60 %"
    assert _num(-0.001) == "0.00" and _num(-0.001, 3) == "−0.001"


def _fit(explained, agreement=0.5):
    return pd.DataFrame([{"variant": "m", "seed": s, "program": p, "sample": "task", "metric": m,
                          "value": v}
                         for s in (0, 1) for p in ("profile", "write_up")
                         for m, v in (("kl_explained", explained), ("agreement", agreement))])


def _profile(values_by_component, seeds=(0, 1), width=0.05):
    return pd.DataFrame([{"variant": "m", "seed": seed, "component": c, "sample": "task",
                          "source": "offset", "offset": k, "value": v, "low": v - width,
                          "high": v + width}
                         for seed in seeds for c, values in values_by_component.items()
                         for k, v in enumerate(values)])


def test_a_program_that_removes_almost_nothing_removes_0_percent_not_minus_0():
    text = sentence(_profile({"all": [-1.0, 1.0]}), _fit(-0.003))
    assert "removes 0 % of its KL" in text
    assert "−0 %" not in text and "-0 %" not in text
    # a range whose ends round to zero: no signed zero there either
    fit = _fit(-0.003)
    fit.loc[fit["seed"] == 1, "value"] = -0.2
    text = sentence(_profile({"all": [-1.0, 1.0]}), fit)
    assert "removes −10 % [−20, 0] of its KL" in text


# ------------------------------------------------------------------ any depth


def test_parts_are_named_by_layer_number():
    assert part_name("L0") == "layer 0's heads"
    assert part_name("L1:embedding") == "layer 1's heads from the embedding"
    assert part_name("L1:composed") == "layer 1's heads reading the output of layer 0"
    assert part_name("L2:composed") == "layer 2's heads reading the output of layers 0 and 1"
    assert part_name("L3:composed") == "layer 3's heads reading the output of layers 0–2"
    assert part_name("direct") == "the direct path"


def test_a_three_layer_model_is_read_by_its_own_layers():
    """Layer 2's composed paths carry the copy: the reading names layer 2, never "the
    second layer" (which would be layer 1) or layers 0–1 only."""
    T = 8
    zero = [0.0] * T
    copy = list(zero)
    copy[5] = 3.0
    small = list(zero)
    small[5] = 0.5
    direct = [-2.0] + [0.0] * (T - 1)
    parts = {"direct": direct, "L0": zero, "L1:embedding": zero, "L1:composed": small,
             "L2:embedding": small, "L2:composed": copy}
    total = [sum(v[k] for v in parts.values()) for k in range(T)]
    profile = _profile({"all": total, **parts})
    assert carrier(profile, [5], 1.0) == "layer 2's heads reading the output of layers 0 and 1"
    text = sentence(profile, _fit(0.4))
    assert "copies the letter 5 back (mostly layer 2's heads reading the output of layers 0 and 1)" in text
    assert "suppresses the current letter (mostly the direct path)" in text
    assert "second layer" not in text and "first layer" not in text


def test_a_two_layer_model_names_its_layers_by_number():
    T = 6
    zero = [0.0] * T
    copy = list(zero)
    copy[5] = 2.0
    profile = _profile({"all": copy, "direct": zero, "L0": zero, "L1:embedding": zero,
                        "L1:composed": copy})
    assert carrier(profile, [5], 1.0) == "layer 1's heads reading the output of layer 0"
