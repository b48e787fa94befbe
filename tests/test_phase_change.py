"""Known answers for the logistic phase-change fit (inductionlab.stages.dynamics.phase_change)."""
import dataclasses
import math

import numpy as np
import pytest

from inductionlab.analysis.uncertainty import FAILS, HOLDS, NOT_MEASURED, TOO_CLOSE
from inductionlab.core.loading import checkpoint_steps
from inductionlab.stages.dynamics.phase_change import (FLAT, MAX_SPAN, MIN_R2, PHASE_CHANGE, SMOOTH,
                                                TWO_DROPS, LogisticFit, classify_shape,
                                                effective_points, fit_logistic, logistic_curve,
                                                phase_change_verdict, residual_scale, same_time,
                                                span_of_width)

# checkpoint steps like a training run's: step 0, then log-spaced steps from 1 to 10000
STEPS = np.concatenate([[0.0], np.unique(np.round(np.geomspace(1, 10000, 40)))])
U = np.log(STEPS + 1.0)
WIDTH = 0.15                       # span e^(2 ln 9 · 0.15) ≈ 1.93
NOISE = 0.02


def logistic(midpoint, start=1.0, end=0.0, width=WIDTH):
    """A logistic in ln(step + 1) at STEPS, from ``start`` to ``end``."""
    return end + (start - end) / (1.0 + np.exp((U - math.log(midpoint + 1.0)) / width))


def noise(seed, scale=NOISE):
    return scale * np.random.default_rng(seed).standard_normal(len(STEPS))


@pytest.mark.parametrize("midpoint, seed", [(30, 1), (300, 2), (3000, 3)])
def test_logistic_is_a_phase_change_with_its_midpoint_and_span(midpoint, seed):
    fit = fit_logistic(STEPS, logistic(midpoint) + noise(seed))
    assert fit.shape == PHASE_CHANGE, fit.note
    assert fit.direction == "falls"
    assert fit.midpoint == pytest.approx(midpoint, rel=0.10)
    assert fit.span == pytest.approx(span_of_width(WIDTH), rel=0.20)
    assert fit.midpoint_low <= midpoint <= fit.midpoint_high
    assert fit.midpoint_low < fit.midpoint < fit.midpoint_high
    assert fit.span_low <= fit.span <= fit.span_high
    assert fit.r2 >= MIN_R2
    assert fit.drop == pytest.approx(1.0, abs=0.05)
    assert fit.start == pytest.approx(1.0, abs=0.05) and fit.end == pytest.approx(0.0, abs=0.05)
    assert fit.residual_sd == pytest.approx(NOISE, rel=0.5)
    assert len(fit.m_replicates) == 200


def test_noiseless_logistic_is_recovered_exactly():
    fit = fit_logistic(STEPS, logistic(300), resamples=0)
    assert fit.midpoint == pytest.approx(300, rel=1e-3)
    assert fit.span == pytest.approx(span_of_width(WIDTH), rel=1e-3)
    assert fit.r2 == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(logistic_curve(STEPS, fit), logistic(300), atol=1e-4)
    assert math.isnan(fit.midpoint_low) and math.isnan(fit.span_high)


SMOOTH_CURVES = {
    "exponential in steps": np.exp(-STEPS / 1000.0),
    "linear in steps": 1.0 - STEPS / 10000.0,
    "power law": (STEPS + 1.0) ** -0.5,
}


@pytest.mark.parametrize("name", sorted(SMOOTH_CURVES))
@pytest.mark.parametrize("scale", [0.0, 0.01])
def test_smooth_declines_are_not_phase_changes(name, scale):
    fit = fit_logistic(STEPS, SMOOTH_CURVES[name] + noise(7, scale))
    assert fit.shape != PHASE_CHANGE, fit.note
    assert fit.shape == SMOOTH, fit.note
    assert fit.span > MAX_SPAN
    assert fit.direction == "falls"
    assert "span" in fit.note


def test_exponential_decay_span_is_far_wider_than_a_phase_change():
    # exp(-step/1000) falls from 90 % to 10 % between steps ~105 and ~2300 (a factor of ~22)
    fit = fit_logistic(STEPS, np.exp(-STEPS / 1000.0), resamples=50)
    assert 10 < fit.span < 60
    assert fit.span_low > MAX_SPAN


@pytest.mark.parametrize("seed", [4, 5])
def test_flat_noise_is_flat(seed):
    fit = fit_logistic(STEPS, 0.5 + noise(seed, 0.05))
    assert fit.shape == FLAT, fit.note


def test_constant_curve_is_flat():
    fit = fit_logistic(STEPS, np.full(len(STEPS), 2.0), resamples=20)
    assert fit.shape == FLAT
    assert fit.r2 == 0.0


def test_two_far_apart_drops_are_two_drops():
    values = logistic(30, 1.0, 0.5) + logistic(3000, 0.5, 0.0) - 0.5 + noise(6, 0.01)
    fit = fit_logistic(STEPS, values)
    assert fit.shape == TWO_DROPS, fit.note
    assert fit.note.startswith("two drops"), fit.note


def test_rising_induction_score_is_a_phase_change_that_rises():
    fit = fit_logistic(STEPS, logistic(300, 0.1, 0.6) + noise(8, 0.01))
    assert fit.shape == PHASE_CHANGE, fit.note
    assert fit.direction == "rises"
    assert fit.drop == pytest.approx(-0.5, abs=0.03)
    assert fit.start == pytest.approx(0.1, abs=0.03) and fit.end == pytest.approx(0.6, abs=0.03)
    assert fit.midpoint == pytest.approx(300, rel=0.10)
    assert fit.midpoint_low <= 300 <= fit.midpoint_high


def test_a_drop_within_the_noise_is_flat_not_a_phase_change():
    fit = fit_logistic(STEPS, logistic(300, 0.5, 0.45) + noise(9, 0.05))
    assert fit.shape == FLAT, fit.note


def test_classify_shape_rules():
    assert classify_shape(0.99, 1.0, 0.01, 2.0, 300)[0] == PHASE_CHANGE
    assert classify_shape(0.99, -1.0, 0.01, 2.0, 300)[0] == PHASE_CHANGE
    assert classify_shape(0.99, 1.0, 0.01, 3.5, 300)[0] == SMOOTH      # too wide
    assert classify_shape(0.80, 1.0, 0.01, 2.0, 300)[0] == SMOOTH      # fits too poorly
    assert classify_shape(0.40, 1.0, 0.01, 2.0, 300)[0] == FLAT        # R² < 0.5
    assert classify_shape(0.95, 0.1, 0.03, 2.0, 300)[0] == FLAT        # drop < 4 sds
    # a sharp change whose middle lies past the last checkpoint was not seen happen
    assert classify_shape(0.99, 1.0, 0.01, 2.0, 20000, steps=(0, 10000))[0] == SMOOTH
    assert classify_shape(0.99, 1.0, 0.01, 2.0, 300, steps=(0, 10000))[0] == PHASE_CHANGE
    two = {"m1": math.log(31), "w1": WIDTH, "b1": 0.5, "m2": math.log(3001), "w2": WIDTH,
           "b2": 0.5, "sse": 0.01, "r2": 0.99}
    assert classify_shape(0.9, 1.0, 0.1, 50.0, 300, sse=0.5, two=two)[0] == TWO_DROPS
    assert classify_shape(0.9, 1.0, 0.1, 50.0, 300, sse=0.015, two=two)[0] != TWO_DROPS
    assert classify_shape(0.9, 1.0, 0.1, 50.0, 300, sse=0.5,
                          two={**two, "b1": 0.1, "b2": 0.9})[0] != TWO_DROPS
    assert classify_shape(0.9, 1.0, 0.1, 50.0, 300, sse=0.5,
                          two={**two, "m2": math.log(61)})[0] != TWO_DROPS
    assert classify_shape(0.9, 1.0, 0.1, 50.0, 300, sse=0.5,
                          two={**two, "w2": 0.5})[0] != TWO_DROPS


@pytest.fixture(scope="module")
def fits():
    return {mid: fit_logistic(STEPS, logistic(mid) + noise(10 + i), seed=i)
            for i, mid in enumerate((300, 400, 3000))}


def test_same_time_holds_for_nearby_midpoints(fits):
    result = same_time(fits[300], fits[400])
    assert result["status"] == "holds", result["note"]
    assert result["gap"] == pytest.approx(math.log(401 / 301), abs=0.05)
    assert result["low"] <= result["gap"] <= result["high"] <= math.log(2)


def test_same_time_fails_for_midpoints_a_decade_apart(fits):
    result = same_time(fits[300], fits[3000])
    assert result["status"] == "fails", result["note"]
    assert result["gap"] == pytest.approx(math.log(3001 / 301), abs=0.05)
    assert result["high"] >= result["low"] > math.log(2)
    assert same_time(fits[3000], fits[300])["status"] == "fails"


def test_same_time_too_close_to_call_when_the_interval_straddles(fits):
    a = fits[300]
    # the midpoints are a factor of 1.9 apart, but the replicates straddle a factor of 2
    b = dataclasses.replace(a, midpoint=math.expm1(a.m + math.log(1.9)),
                            m_replicates=a.m_replicates[::-1] + math.log(2))
    result = same_time(a, b)
    assert result["status"] == "too close to call", result["note"]
    assert result["gap"] == pytest.approx(math.log(1.9))
    assert result["low"] <= math.log(2) < result["high"]


def test_same_time_not_measured_without_a_phase_change(fits):
    smooth = fit_logistic(STEPS, np.exp(-STEPS / 1000.0), resamples=20)
    assert smooth.shape == SMOOTH
    result = same_time(fits[300], smooth)
    assert result["status"] == "not measured"
    assert "smooth" in result["note"]
    assert math.isnan(result["gap"])
    unresampled = fit_logistic(STEPS, logistic(300) + noise(2), resamples=0)
    assert same_time(fits[300], unresampled)["status"] == "not measured"


def test_same_seed_gives_identical_intervals():
    values = logistic(300) + noise(12)
    first = fit_logistic(STEPS, values, resamples=50, seed=3)
    again = fit_logistic(STEPS, values, resamples=50, seed=3)
    other = fit_logistic(STEPS, values, resamples=50, seed=4)
    assert first == again
    np.testing.assert_array_equal(first.m_replicates, again.m_replicates)
    assert not np.array_equal(first.m_replicates, other.m_replicates)
    assert (first.midpoint, first.span) == (other.midpoint, other.span)


def test_fit_is_a_frozen_dataclass_without_replicates_in_repr():
    fit = fit_logistic(STEPS, logistic(300), resamples=5)
    assert isinstance(fit, LogisticFit)
    assert "m_replicates" not in repr(fit)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.midpoint = 1.0


INDEX = np.arange(len(STEPS))


@pytest.mark.parametrize("steps, values, message", [
    ([0, 1, 2, 3], [1, 1, 0, 0], "at least 5"),
    (STEPS, logistic(300)[:-1], "length"),
    (STEPS, np.where(INDEX == 10, np.nan, logistic(300)), "values contain non-finite"),
    (np.where(INDEX == 10, np.inf, STEPS), logistic(300), "steps contain non-finite"),
    (STEPS - 5, logistic(300), ">= 0"),
    (np.full(6, 10.0), np.arange(6.0), "all equal"),
    (np.ones((2, 5)), np.ones((2, 5)), "1-d"),
])
def test_bad_input_raises(steps, values, message):
    with pytest.raises(ValueError, match=message):
        fit_logistic(steps, values)


# ------------------------------------------------------------------ intervals and verdicts
#
# Known answers on the training schedule's checkpoints (10000 steps, 40 asked: half
# log-spaced, half regular), 40 independent curves each.

SCHEDULE = np.array(checkpoint_steps(10000, 40), dtype=float)
SCHEDULE_U = np.log(SCHEDULE + 1.0)
FITS = 40


def schedule_logistic(midpoint, span, start=1.0, end=0.0):
    """A logistic in ln(step + 1) at SCHEDULE with 10-90 % ``span`` (a factor in steps)."""
    width = math.log(span) / (2.0 * math.log(9.0))
    return end + (start - end) / (1.0 + np.exp((SCHEDULE_U - math.log(midpoint + 1.0)) / width))


def smooth_deviation(rng, amplitude=0.03):
    """A slow sinusoid in ln(step + 1), one to two periods over the run, random phase: how
    a training curve departs from its logistic over many checkpoints at once."""
    period = rng.uniform(4.0, 8.0)
    return amplitude * np.sin(2.0 * np.pi * SCHEDULE_U / period + rng.uniform(0.0, 2.0 * np.pi))


def test_midpoint_interval_covers_despite_a_smooth_deviation():
    # logistic (midpoint 1000, span 2) + smooth deviation of 3 % of the drop + white noise:
    # resampling the residuals as independent covered the true midpoint in 15 of 40 fits
    covered = 0
    for k in range(FITS):
        rng = np.random.default_rng(1000 + k)
        values = schedule_logistic(1000, 2.0) + smooth_deviation(rng) + 0.01 * rng.standard_normal(len(SCHEDULE))
        fit = fit_logistic(SCHEDULE, values, seed=k)
        covered += fit.midpoint_low <= 1000 <= fit.midpoint_high
    assert covered >= 36, f"the 95 % midpoint interval covered the true midpoint in {covered} of {FITS} fits"


def _noisy_logistic_fits(span: float, noise: float):
    """FITS logistic fits to a curve of midpoint 1000 and ``span`` plus white noise."""
    for k in range(FITS):
        rng = np.random.default_rng(2000 + k)
        values = schedule_logistic(1000, span) + noise * rng.standard_normal(len(SCHEDULE))
        yield fit_logistic(SCHEDULE, values, seed=k)


def test_a_clean_sharp_logistic_holds_as_a_phase_change():
    # span 2 and white noise: the intervals stay narrow enough to say so
    verdicts = []
    for fit in _noisy_logistic_fits(2.0, 0.02):
        verdicts.append(phase_change_verdict(fit))
        assert fit.midpoint_high / fit.midpoint_low < 1.2, fit
    assert verdicts.count(HOLDS) >= 36, verdicts


def test_a_span_near_the_limit_is_not_called_a_phase_change_on_its_point_estimate():
    # true span 2.8 (< 3) and noise 0.03: the point estimate says "phase change" in most fits,
    # but the span's interval reaches past 3 in most of them
    verdicts = []
    for fit in _noisy_logistic_fits(2.8, 0.03):
        verdict = phase_change_verdict(fit)
        verdicts.append(verdict)
        if fit.span_high > MAX_SPAN:
            assert verdict != HOLDS, fit
        else:
            assert verdict == HOLDS, fit
    assert verdicts.count(HOLDS) < FITS / 2, verdicts
    assert verdicts.count(FAILS) <= 2, verdicts


def test_same_time_is_too_close_to_call_for_smooth_curves_a_factor_of_1_9_apart():
    statuses = []
    for k in range(FITS):
        rng = np.random.default_rng(3000 + k)
        first, second = (fit_logistic(SCHEDULE, schedule_logistic(mid, 20.0)
                                      + 0.02 * rng.standard_normal(len(SCHEDULE)), seed=2 * k + i)
                         for i, mid in enumerate((300, 570)))
        assert first.shape == second.shape == SMOOTH
        statuses.append(same_time(first, second, shapes=(PHASE_CHANGE, SMOOTH))["status"])
    assert statuses.count(TOO_CLOSE) > FITS / 2 and FAILS not in statuses, statuses


def test_same_time_fails_for_a_curve_and_itself_four_times_later():
    for k in range(10):
        rng = np.random.default_rng(4000 + k)
        first, second = (fit_logistic(SCHEDULE, schedule_logistic(mid, 2.0) + smooth_deviation(rng)
                                      + 0.01 * rng.standard_normal(len(SCHEDULE)), seed=2 * k + i)
                         for i, mid in enumerate((300, 1200)))
        assert same_time(first, second)["status"] == FAILS


def test_residual_scale_widens_for_autocorrelated_residuals():
    rng = np.random.default_rng(5)
    white = rng.standard_normal(40)
    assert effective_points(white) > 25
    assert residual_scale(white) == pytest.approx(math.sqrt(40 / 36), rel=0.25)
    smooth = np.sin(np.linspace(0, 3 * np.pi, 40))
    assert effective_points(smooth) == 5.0           # at least PARAMETERS + 1
    assert residual_scale(smooth) == pytest.approx(math.sqrt(40.0))
    assert residual_scale(np.zeros(10)) == pytest.approx(math.sqrt(10 / 6))


def _row(shape=PHASE_CHANGE, span=2.0, low=1.8, high=2.5, r2=0.99):
    return {"shape": shape, "span": span, "span_low": low, "span_high": high, "r2": r2}


def test_phase_change_verdict_rules():
    assert phase_change_verdict(_row()) == HOLDS
    assert phase_change_verdict(_row(span=2.8, low=2.4, high=3.3)) == TOO_CLOSE
    assert phase_change_verdict(_row(shape=SMOOTH, span=3.3, low=2.6, high=4.0)) == TOO_CLOSE
    assert phase_change_verdict(_row(shape=SMOOTH, span=5.0, low=3.5, high=8.0)) == FAILS
    assert phase_change_verdict(_row(r2=0.8)) == FAILS
    assert phase_change_verdict(_row(shape=FLAT)) == FAILS
    assert phase_change_verdict(_row(shape=TWO_DROPS)) == FAILS
    assert phase_change_verdict(_row(low=math.nan, high=math.nan)) == NOT_MEASURED
    # sharp and well fitted, but smooth because its middle lies outside the checkpoints
    assert phase_change_verdict(_row(shape=SMOOTH)) == NOT_MEASURED
    fit = fit_logistic(STEPS, logistic(300) + noise(2))
    assert phase_change_verdict(fit) == HOLDS
    assert phase_change_verdict(fit_logistic(STEPS, logistic(300), resamples=0)) == NOT_MEASURED
