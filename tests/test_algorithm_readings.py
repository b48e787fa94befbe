"""The algorithm as measured, in words: generated from a known offset profile."""
import pandas as pd

from inductionlab.stages.readings.readings import algorithm_row, algorithm_table, offset_sets
from inductionlab.formatting.numbers import ranges_phrase as _ranges
from inductionlab.report.algorithm_readings import algorithm_readings, sentence


def said(profile, fit):
    """The sentence of a model as the report writes it: from its row of the readings table."""
    return sentence(pd.Series(algorithm_row(profile, fit)))


def _profile(values_by_component, seeds=(0, 1), width=0.05):
    rows = []
    for seed in seeds:
        for component, values in values_by_component.items():
            for k, v in enumerate(values):
                rows.append({"variant": "m", "seed": seed, "component": component, "sample": "task",
                             "source": "offset", "offset": k, "value": v, "low": v - width,
                             "high": v + width})
    return pd.DataFrame(rows)


def _fit(explained=0.6, agreement=0.7, write_up=True):
    rows = [{"variant": "m", "seed": s, "program": "profile", "sample": "task", "metric": m, "value": v}
            for s in (0, 1) for m, v in (("kl_explained", explained), ("agreement", agreement))]
    if write_up:
        rows += [{"variant": "m", "seed": s, "program": "write_up", "sample": "task", "metric": m,
                  "value": v} for s in (0, 1) for m, v in (("kl_explained", 0.3), ("agreement", 0.4))]
    return pd.DataFrame(rows)


def test_ranges():
    assert _ranges([0, 1, 2, 5, 11]) == "0–2, 5 and 11"
    assert _ranges([3, 4]) == "3 and 4"
    assert _ranges([5]) == "5"


def test_a_smeared_like_profile_reads_copy_5_back_and_suppress_0_to_2():
    T = 12
    direct = [-3.0] + [0.0] * (T - 1)
    copying = [0.0] * T
    copying[5], copying[11] = 3.0, 2.0
    anti = [-1.5, -1.5, -1.5] + [0.0] * (T - 3)
    total = [d + c + a for d, c, a in zip(direct, copying, anti)]
    profile = _profile({"all": total, "direct": direct, "role:copying": copying,
                        "role:anti_copying": anti})
    sets = offset_sets(profile)
    assert sets == {"copies": [5, 11], "suppresses": [0, 1, 2]}
    text = said(profile, _fit())
    assert "copies the letters 5 and 11 back (mostly the copying heads)" in text
    assert "suppresses the letters 0–2 back (mostly the anti-copying heads)" in text
    assert "the profile as a program removes 60 % of its KL" in text
    assert "the write-up's algorithm removes 30 %" in text


def test_an_offset_that_one_seed_does_not_support_is_not_read():
    profile = _profile({"all": [-1.0, 0.5, 0.02]})
    assert offset_sets(profile) == {"copies": [1], "suppresses": [0]}
    # a weak effect (below a quarter of the largest) is not named even when sure
    profile = _profile({"all": [0.0, 2.0, 0.3]}, width=0.01)
    assert offset_sets(profile)["copies"] == [1]


def test_no_write_up_algorithm_is_said():
    profile = _profile({"all": [-1.0, 1.0]})
    text = algorithm_readings(algorithm_table(profile, _fit(write_up=False)), ["m"])[0]["text"]
    assert "the write-up gives no algorithm for this architecture" in text


def test_one_offset_reads_as_one_letter():
    profile = _profile({"all": [-1.0, 0.0, 1.0], "direct": [-1.0, 0.0, 0.0]})
    text = said(profile, _fit())
    assert "suppresses the current letter (mostly the direct path)" in text
    assert "copies the letter 2 back" in text
