"""The law of formation time on midpoints whose answer is known: m = c · T^α · e^noise."""
import math

import numpy as np
import pandas as pd
import pytest

from inductionlab.claims import formation_law as law
from inductionlab.claims.formation_law import (ABOVE, BELOW, CONTAINS, NOT_COMPARED, STEPS,
                                                 TOKENS, clocks_sentence, compare_with_bound,
                                                 law_band, law_fits, law_midpoints, law_sentence,
                                                 least_squares_line, on_both_clocks, too_wide)
from inductionlab.analysis.uncertainty import NOT_MEASURED, t_quantile

CONTEXTS = (12, 16, 24, 32, 48)
CONTENT = "induction_content"


def midpoints(alpha, noise=0.0, contexts=CONTEXTS, seeds=3, c=40.0, variant="two_layer",
              quantity=CONTENT, rng_seed=0, centred=True):
    """One row per context and seed: m = c · T^alpha · exp(noise · z), in steps, z standard
    normal. ``centred``: z is centred over the seeds of each T, so the mean ln m at each T
    is exactly on the law and (the same seeds at every T) the least-squares slope is alpha
    exactly, with a spread around it: a noisy case whose answer is known."""
    rng = np.random.default_rng(rng_seed)
    rows = []
    for t in contexts:
        z = rng.standard_normal(seeds)
        z = z - z.mean() if centred else z
        rows += [{"variant": variant, "context": t, "seed": s, "quantity": quantity,
                  "midpoint": c * t ** alpha * math.exp(noise * z[s])} for s in range(seeds)]
    return pd.DataFrame(rows)


def fit(frame, batch_size=64, **kwargs):
    """The law's rows of ``frame`` (steps midpoints) on both clocks, by clock."""
    return law_fits(on_both_clocks(frame, batch_size), **kwargs).set_index("clock")


# ------------------------------------------------------------------ the line


def test_least_squares_line_matches_a_hand_computed_fit():
    # x̄ = 1.5, Sxx = 5, Sxy = 4.5: slope 0.9, intercept −0.1; residuals 0.1, 0.2, −0.7, 0.4,
    # RSS 0.7 on 2 degrees of freedom: s² = 0.35, se(slope) = √(0.35 / 5)
    line = least_squares_line([0, 1, 2, 3], [0, 1, 1, 3])
    assert line.slope == pytest.approx(0.9, abs=1e-12)
    assert line.intercept == pytest.approx(-0.1, abs=1e-12)
    assert line.residual_sd == pytest.approx(math.sqrt(0.35), abs=1e-12)
    assert line.slope_se == pytest.approx(math.sqrt(0.07), abs=1e-12)
    assert line.intercept_se == pytest.approx(math.sqrt(0.35 * (1 / 4 + 1.5 ** 2 / 5)), abs=1e-12)
    low, high = line.slope_interval()
    assert (low, high) == pytest.approx((0.9 - 4.303 * math.sqrt(0.07), 0.9 + 4.303 * math.sqrt(0.07)))
    assert not line.exact


def test_least_squares_line_agrees_with_numpy_polyfit():
    rng = np.random.default_rng(3)
    x, y = rng.uniform(0, 4, 20), rng.normal(0, 1, 20)
    slope, intercept = np.polyfit(x, y, 1)
    line = least_squares_line(x, y)
    assert (line.slope, line.intercept) == pytest.approx((slope, intercept), abs=1e-10)


@pytest.mark.parametrize("df, value", [(1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (30, 2.042)])
def test_t_quantile_table_values(df, value):
    assert t_quantile(df) == pytest.approx(value, abs=5e-4)


def test_t_quantile_agrees_with_scipy_at_every_degree_of_freedom():
    stats = pytest.importorskip("scipy.stats")
    worst = max(abs(t_quantile(df) - stats.t.ppf(0.975, df)) for df in range(1, 500))
    assert worst < 2.5e-3


# ------------------------------------------------------------------ known exponents


def test_an_exact_quadratic_gives_alpha_two_and_no_interval():
    rows = fit(midpoints(2.0))
    r = rows.loc[STEPS]
    assert r["slope"] == pytest.approx(2.0, abs=1e-9)
    assert r["intercept"] == pytest.approx(math.log(40.0), abs=1e-9)
    assert r["slope_se"] == 0.0 and r["residual_sd"] == 0.0
    assert r["slope_low"] == r["slope_high"] == r["slope"]
    assert math.isnan(r["slope_boot_low"])
    assert r["verdict"] == CONTAINS
    assert "no interval" in r["sentence"] and "95 %" not in r["sentence"]
    assert "no residual spread" in r["note"]


def test_a_noisy_quadratic_holds_two():
    r = fit(midpoints(2.0, noise=0.1, seeds=5)).loc[STEPS]
    assert r["slope"] == pytest.approx(2.0, abs=1e-9)
    assert r["slope_low"] < 2.0 < r["slope_high"]
    assert r["slope_high"] - r["slope_low"] > 0.05
    assert r["verdict"] == CONTAINS and not r["wide"]
    assert "the interval holds 2, the exponent of the quadratic bound" in r["sentence"]


def test_an_exact_cubic_is_above_and_an_exact_linear_law_below():
    assert fit(midpoints(3.0)).loc[STEPS, "verdict"] == ABOVE
    assert fit(midpoints(1.0)).loc[STEPS, "verdict"] == BELOW


def test_a_linear_law_with_small_noise_is_below():
    r = fit(midpoints(1.0, noise=0.05)).loc[STEPS]
    assert r["slope"] == pytest.approx(1.0, abs=1e-9) and r["slope_se"] > 0
    assert r["slope_high"] < 2.0 and r["verdict"] == BELOW
    assert r["sentence"].startswith(f"α = {r['slope']:.2f} (95 % interval ")
    assert ("15 points from 5 context lengths × 3 seeds): the midpoint comes later in optimiser "
            "steps the longer the context; below 2, the exponent of") in r["sentence"]
    assert r["sentence"].endswith("(on optimiser steps)")


def test_a_cubic_law_with_small_noise_is_above():
    r = fit(midpoints(3.0, noise=0.05)).loc[STEPS]
    assert r["slope_low"] > 2.0 and r["verdict"] == ABOVE
    assert "above 2" in r["sentence"]


def test_midpoints_that_do_not_move_with_the_context_give_alpha_zero():
    exact = fit(midpoints(0.0)).loc[STEPS]
    assert exact["slope"] == pytest.approx(0.0, abs=1e-12) and exact["verdict"] == BELOW
    noisy = fit(midpoints(0.0, noise=0.1, seeds=5)).loc[STEPS]
    assert noisy["slope_low"] < 0.0 < noisy["slope_high"]
    assert noisy["slope"] == pytest.approx(0.0, abs=1e-9) and noisy["verdict"] == BELOW
    assert f"95 % interval −{-noisy['slope_low']:.2f} to {noisy['slope_high']:.2f}" in noisy["sentence"]
    scattered = fit(midpoints(0.0, noise=0.1, seeds=5, centred=False)).loc[STEPS]
    assert abs(scattered["slope"]) < 0.25 and scattered["verdict"] == BELOW


def test_the_recovered_exponent_moves_with_the_true_one():
    slopes = [fit(midpoints(a, noise=0.05, centred=False)).loc[STEPS, "slope"] for a in (0.5, 1.5, 2.5)]
    assert slopes == pytest.approx([0.5, 1.5, 2.5], abs=0.15)


# ------------------------------------------------------------------ what a fit needs


def test_two_context_lengths_are_not_measured_with_the_reason():
    r = fit(midpoints(2.0, noise=0.1, contexts=(12, 24), seeds=5)).loc[STEPS]
    assert r["verdict"] == NOT_MEASURED and math.isnan(r["slope"])
    assert r["note"] == "midpoints at 2 context lengths (12, 24): a law needs at least 3"
    assert r["sentence"].startswith("α on optimiser steps not measured: midpoints at 2")


def test_three_points_are_too_few_for_a_line_with_an_interval():
    r = fit(midpoints(2.0, noise=0.1, contexts=(12, 24, 48), seeds=1)).loc[STEPS]
    assert r["verdict"] == NOT_MEASURED
    assert "3 midpoints" in r["note"] and "at least 4" in r["note"]


def test_four_points_at_three_context_lengths_are_enough():
    frame = midpoints(2.0, noise=0.1, contexts=(12, 24, 48), seeds=1)
    frame = pd.concat([frame, frame.iloc[[0]].assign(seed=1, midpoint=frame["midpoint"].iloc[0] * 1.1)])
    r = fit(frame).loc[STEPS]
    assert r["verdict"] != NOT_MEASURED and r["n_points"] == 4 and r["n_seeds"] == 2


def test_a_fit_whose_every_midpoint_is_missing_is_not_measured():
    frame = midpoints(2.0).assign(midpoint=math.nan, note="no induction head formed")
    for clock, r in fit(frame).iterrows():
        assert r["n_points"] == 0 and r["verdict"] == NOT_MEASURED, clock
        assert r["dropped"].startswith(f"{len(frame)} of {len(frame)} midpoints dropped")
        assert "a law needs at least 3" in r["sentence"]


def test_nan_and_non_positive_midpoints_are_dropped_and_counted():
    clean = midpoints(1.5, noise=0.1, seeds=4)
    frame = clean.assign(note="")
    frame.loc[0, ["midpoint", "note"]] = [math.nan, "flat: a flat curve has no midpoint"]
    frame.loc[1, "midpoint"] = math.nan
    frame.loc[2, "midpoint"] = -3.0
    r = fit(frame).loc[STEPS]
    assert r["n_points"] == len(clean) - 3 and r["n_dropped"] == 3
    assert r["dropped"].startswith(f"3 of {len(clean)} midpoints dropped")
    assert "flat: a flat curve has no midpoint" in r["dropped"]
    assert "midpoint not positive" in r["dropped"]
    # each reason names the context lengths of its dropped midpoints
    at = clean["context"]
    assert f"1 at T = {at[0]:g}: no midpoint fitted: flat" in r["dropped"]
    assert f"1 at T = {at[2]:g}: midpoint not positive" in r["dropped"]
    assert "and 4 seeds" in r["sentence"] and "3 of 20 midpoints dropped" in r["sentence"]
    expected = fit(clean.drop(index=[0, 1, 2])).loc[STEPS]
    assert r["slope"] == pytest.approx(expected["slope"], abs=1e-12)


def test_a_head_that_never_forms_at_some_lengths_leaves_too_few():
    frame = midpoints(2.0, noise=0.1)
    frame.loc[frame["context"] >= 24, "midpoint"] = math.nan
    r = fit(frame).loc[STEPS]
    assert r["verdict"] == NOT_MEASURED and r["n_dropped"] == 9
    assert "2 context lengths (12, 16)" in r["note"]


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match="missing \\['clock'\\]"):
        law_fits(midpoints(2.0))


# ------------------------------------------------------------------ two clocks


def test_the_tokens_slope_is_the_steps_slope_plus_one():
    rows = fit(midpoints(1.3, noise=0.2, seeds=4), batch_size=32)
    steps, tokens = rows.loc[STEPS], rows.loc[TOKENS]
    assert tokens["slope"] - steps["slope"] == pytest.approx(1.0, abs=1e-9)
    assert tokens["slope_se"] == pytest.approx(steps["slope_se"], rel=1e-9)
    for column in ("slope_low", "slope_high", "slope_boot_low", "slope_boot_high"):
        assert tokens[column] - steps[column] == pytest.approx(1.0, abs=1e-9)
    assert tokens["intercept"] - steps["intercept"] == pytest.approx(math.log(32), abs=1e-9)


def test_tokens_seen_is_steps_times_batch_times_context():
    both = on_both_clocks(midpoints(2.0).head(2), batch_size=64)
    steps, tokens = both[both["clock"] == STEPS], both[both["clock"] == TOKENS]
    assert list(tokens["midpoint"]) == pytest.approx(list(steps["midpoint"] * 64 * steps["context"]))
    with pytest.raises(ValueError, match="batch size"):
        on_both_clocks(midpoints(2.0))


def test_the_clocks_sentence_says_the_identity_only_when_it_holds():
    fixed = law_fits(on_both_clocks(midpoints(1.3, noise=0.2), 64))
    text = clocks_sentence(fixed, "two_layer", CONTENT)
    assert text.startswith("the head's content part: α = ")
    assert "on optimiser steps" in text and "on tokens seen" in text
    assert "the tokens slope is the steps slope + 1 by definition" in text
    frame = midpoints(1.3, noise=0.2)
    varying = law_fits(on_both_clocks(frame.assign(batch_size=(512 / frame["context"]).round())))
    text = clocks_sentence(varying, "two_layer", CONTENT)
    assert "not + 1: the batch size differs between context lengths" in text


def test_the_bound_is_compared_only_on_its_own_clock():
    rows = fit(midpoints(1.0, noise=0.05))
    assert rows.loc[STEPS, "verdict"] == BELOW
    assert rows.loc[TOKENS, "verdict"] == NOT_COMPARED
    assert "speaks of optimiser steps, so it is not compared on this clock" in rows.loc[TOKENS, "sentence"]
    on_tokens = fit(midpoints(1.0, noise=0.05), bound_clock=TOKENS)
    assert on_tokens.loc[STEPS, "verdict"] == NOT_COMPARED
    assert on_tokens.loc[TOKENS, "verdict"] == CONTAINS  # α = 1 in steps is α = 2 in tokens


def test_fits_are_per_variant_and_quantity():
    frame = pd.concat([midpoints(1.0, noise=0.05, variant="two_layer"),
                       midpoints(3.0, noise=0.05, variant="one_layer_smeared"),
                       midpoints(2.0, noise=0.05, variant="two_layer", quantity="loss_pred")])
    rows = law_fits(on_both_clocks(frame, 64))
    steps = rows[rows["clock"] == STEPS].set_index(["variant", "quantity"])["verdict"]
    assert steps.to_dict() == {("one_layer_smeared", CONTENT): ABOVE, ("two_layer", CONTENT): BELOW,
                               ("two_layer", "loss_pred"): CONTAINS}


# ------------------------------------------------------------------ the seed bootstrap


def test_the_seed_bootstrap_interval_holds_the_least_squares_slope():
    r = fit(midpoints(1.7, noise=0.15, seeds=5, centred=False)).loc[STEPS]
    assert r["slope_boot_low"] < r["slope"] < r["slope_boot_high"]
    assert r["slope_boot_low"] < 1.7 < r["slope_boot_high"]
    # a cross-check of the t interval, not a second law: of the same order
    width = r["slope_high"] - r["slope_low"]
    assert 0.3 * width < r["slope_boot_high"] - r["slope_boot_low"] < 2.0 * width


def test_the_seed_bootstrap_is_deterministic_and_follows_its_seed():
    frame = midpoints(1.7, noise=0.15, seeds=5)
    a, b = fit(frame).loc[STEPS], fit(frame).loc[STEPS]
    c = fit(frame, seed=1).loc[STEPS]
    assert (a["slope_boot_low"], a["slope_boot_high"]) == (b["slope_boot_low"], b["slope_boot_high"])
    assert (a["slope_boot_low"], a["slope_boot_high"]) != (c["slope_boot_low"], c["slope_boot_high"])


def test_the_bootstrap_resamples_seeds_within_each_context_length():
    # the same value for both seeds at each T, rising then falling (0, 1, 0): a resample
    # that keeps every T's size weighs the three T alike and fits slope 0 exactly; one
    # that moved weight between the T would tilt the line
    x, y, strata = [0, 0, 1, 1, 2, 2], [0.0, 0.0, 1.0, 1.0, 0.0, 0.0], [12, 12, 24, 24, 48, 48]
    slopes = law.bootstrap_slopes(x, y, strata, purpose="test")
    assert len(slopes) == law.RESAMPLES
    assert np.abs(slopes).max() < 1e-12
    # the same points as one stratum are resampled across the T
    with np.errstate(invalid="ignore", divide="ignore"):
        across = law.bootstrap_slopes(x, y, [0] * 6, purpose="test")
    assert np.nanmax(np.abs(across)) > 0.1


def test_one_seed_per_context_length_has_no_bootstrap():
    r = fit(midpoints(1.7, noise=0.15, seeds=1, centred=False)).loc[STEPS]
    assert math.isnan(r["slope_boot_low"]) and "no seed bootstrap" in r["note"]
    assert r["verdict"] != NOT_MEASURED


# ------------------------------------------------------------------ the verdict in words


@pytest.mark.parametrize("low, high, verdict", [
    (0.95, 1.89, BELOW), (2.1, 2.4, ABOVE), (1.5, 2.5, CONTAINS), (2.0, 2.3, CONTAINS),
    (1.7, 2.0, CONTAINS), (2.0, 2.0, CONTAINS), (1.99, 1.99, BELOW), (math.nan, math.nan, NOT_MEASURED)])
def test_compare_with_bound(low, high, verdict):
    assert compare_with_bound(low, high, 2.0) == verdict


def test_too_wide_needs_the_bound_and_a_neighbour():
    assert too_wide(0.9, 2.5) and too_wide(1.5, 3.0)
    assert not too_wide(1.1, 2.9) and not too_wide(-1.0, 1.5)


def test_few_noisy_points_are_too_wide_to_tell():
    r = fit(midpoints(2.0, noise=2.0, contexts=(12, 24, 48), seeds=2)).loc[STEPS]
    assert r["verdict"] == CONTAINS and r["wide"]
    assert "too wide to tell" in r["sentence"] and r["sentence"].endswith("but also 1 and 3")
    assert "6 points from 3 context lengths × 2 seeds" in r["sentence"]


def test_the_sentence_for_a_known_row():
    row = {"clock": STEPS, "verdict": BELOW, "slope": 1.42, "slope_low": 0.95, "slope_high": 1.89,
           "n_points": 15, "n_contexts": 5, "n_seeds": 3, "bound": 2.0, "bound_clock": STEPS,
           "wide": False, "dropped": "", "note": ""}
    assert law_sentence(row) == (
        "α = 1.42 (95 % interval 0.95–1.89, 15 points from 5 context lengths × 3 seeds): the "
        "midpoint comes later in optimiser steps the longer the context; below 2, the exponent "
        "of the quadratic bound derived for a simplified two-layer model (on optimiser steps)")
    earlier = {**row, "slope": -1.31, "slope_low": -1.72, "slope_high": -0.9}
    assert "): the midpoint comes earlier in optimiser steps the longer the context; below 2" \
        in law_sentence(earlier)
    wide = {**row, "verdict": CONTAINS, "slope": 1.9, "slope_low": 0.8, "slope_high": 3.1, "wide": True}
    assert "too wide to tell: the interval holds 2, the exponent of" in law_sentence(wide)
    assert law_sentence(wide).endswith("(on optimiser steps), but also 1 and 3")
    negative = {**row, "slope": 0.05, "slope_low": -0.3, "slope_high": 0.4}
    assert "95 % interval −0.30 to 0.40" in law_sentence(negative)
    assert ("no trend with the context length can be told in optimiser steps (the interval "
            "holds 0)") in law_sentence(negative)
    tokens = {**row, "clock": "tokens", "verdict": "not compared"}
    assert "the longer the context; the quadratic bound" in law_sentence(tokens)


def test_the_quantities_are_the_dynamics_fits():
    from inductionlab.stages.dynamics.dynamics import INDUCTION_FIT, LOSS_FIT
    assert set(law.QUANTITIES) == {INDUCTION_FIT, LOSS_FIT}


# ------------------------------------------------------------------ the band


def test_the_band_is_the_line_and_narrowest_at_the_mean_log_context():
    frame = on_both_clocks(midpoints(1.5, noise=0.2, seeds=4), 64)
    r = law_fits(frame).set_index("clock").loc[STEPS]
    band = law_band(frame, contexts=[12, 24, 48, math.exp(np.log(CONTEXTS).mean())])
    band = band[band["clock"] == STEPS].reset_index(drop=True)
    assert list(band["midpoint"]) == pytest.approx(
        list(math.exp(r["intercept"]) * band["context"] ** r["slope"]), rel=1e-10)
    assert (band["midpoint_low"] < band["midpoint"]).all()
    assert (band["midpoint"] < band["midpoint_high"]).all()
    widths = np.log(band["midpoint_high"] / band["midpoint_low"])
    assert widths.idxmin() == 3
    # at the mean ln T the half-width is t · s / √n
    assert widths[3] / 2 == pytest.approx(t_quantile(r["n_points"] - 2) * r["residual_sd"]
                                          / math.sqrt(r["n_points"]), rel=1e-9)


def test_the_band_of_an_exact_law_is_the_line_and_spans_the_fitted_contexts():
    band = law_band(on_both_clocks(midpoints(2.0), 64), points=7)
    steps = band[band["clock"] == STEPS]
    assert len(steps) == 7
    assert (steps["context"].min(), steps["context"].max()) == pytest.approx((12, 48))
    assert list(steps["midpoint"]) == pytest.approx(list(40.0 * steps["context"] ** 2), rel=1e-9)
    assert (steps["midpoint_low"] == steps["midpoint"]).all()


def test_a_law_not_measured_has_no_band():
    band = law_band(on_both_clocks(midpoints(2.0, contexts=(12, 24)), 64))
    assert band.empty and list(band.columns) == law.BAND_COLUMNS


def test_a_context_length_that_is_not_positive_is_an_error():
    frame = midpoints(2.0)
    frame.loc[0, "context"] = 0
    with pytest.raises(ValueError, match="context 0: a context length is a positive number"):
        law_fits(on_both_clocks(frame, 64))


# ------------------------------------------------------------------ from the fits


def phase_rows():
    """Fits of two seeds at three context lengths: seed 1's head never forms at T = 48,
    seed 0's loss has two drops at T = 12, seed 1's content part is still rising at T = 12."""
    rows = []
    for t in (12, 24, 48):
        for s in (0, 1):
            for metric in ("loss_pred", CONTENT, "coincidence"):
                rows.append({"variant": "two_layer", "context": t, "seed": s, "metric": metric,
                             "shape": "smooth", "midpoint": 10.0 * t ** 1.5 * (1 + 0.1 * s),
                             "formed": 1.0, "last_step": 5000.0})
    frame = pd.DataFrame(rows)
    at = lambda t, s, m: (frame["context"] == t) & (frame["seed"] == s) & (frame["metric"] == m)
    frame.loc[at(48, 1, CONTENT), ["shape", "formed"]] = ["flat", 0.0]
    frame.loc[at(48, 1, "loss_pred"), "formed"] = 0.0
    frame.loc[at(12, 0, "loss_pred"), "shape"] = "two drops"
    frame.loc[at(12, 1, CONTENT), "midpoint"] = 9000.0
    frame.loc[at(24, 0, CONTENT), "formed"] = 0.0
    frame.loc[at(24, 1, "loss_pred"), "shape"] = math.nan
    return frame


def test_law_midpoints_keep_only_single_changes_of_formed_heads_within_the_checkpoints():
    out = law_midpoints(phase_rows()).set_index(["context", "seed", "quantity"])
    assert set(out.index.get_level_values("quantity")) == {"loss_pred", CONTENT}
    assert out.loc[(48, 1, CONTENT), "note"] == "flat: no single change"
    assert out.loc[(24, 0, CONTENT), "note"] == "no induction head formed"
    assert out.loc[(12, 0, "loss_pred"), "note"] == "two drops: no single change"
    assert "beyond the last checkpoint (step 5000)" in out.loc[(12, 1, CONTENT), "note"]
    assert out.loc[(48, 1, "loss_pred"), "midpoint"] == pytest.approx(10.0 * 48 ** 1.5 * 1.1)
    assert out.loc[(24, 1, "loss_pred"), "note"] == "no fit"
    assert out["midpoint"].isna().sum() == 5 and (out["note"] != "").sum() == 5
    # only the change that is not over knows where its midpoint is not: after the last checkpoint
    assert out.loc[(12, 1, CONTENT), "later_than"] == 5000.0
    assert out["later_than"].notna().sum() == 1
    both = on_both_clocks(law_midpoints(phase_rows()), 64).set_index(["clock", "context", "seed", "quantity"])
    assert both.loc[("tokens", 12, 1, CONTENT), "later_than"] == 5000.0 * 64 * 12


def test_law_midpoints_dropped_are_counted_with_their_reasons():
    rows = law_fits(on_both_clocks(law_midpoints(phase_rows()), 64)).set_index(["quantity", "clock"])
    content = rows.loc[(CONTENT, STEPS)]
    assert content["n_points"] == 3 and content["n_dropped"] == 3
    assert "1 at T = 24: no midpoint fitted: no induction head formed" in content["dropped"]
    assert "1 at T = 48: no midpoint fitted: flat: no single change" in content["dropped"]
    loss = rows.loc[("loss_pred", STEPS)]
    assert loss["n_points"] == 4 and loss["slope"] == pytest.approx(1.5, abs=0.1)


def test_the_shapes_with_a_midpoint_are_the_detectors():
    from inductionlab.stages.dynamics.phase_change import PHASE_CHANGE, SMOOTH
    assert set(law.ONE_CHANGE) == {PHASE_CHANGE, SMOOTH}
