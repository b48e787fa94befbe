"""The Bayes predictor of every task kind on given sequences, and the exact floors of the
tasks against it run on sampled sequences (predictable targets from the sampler's own
sources)."""
import math

import numpy as np
import pytest
import torch

from inductionlab.core.bayes_predictor import target_scores
from inductionlab.core.data import TaskConfig
from inductionlab.core.seeding import generator
from inductionlab.core.tasks import task_from_dict
from inductionlab.core.variable_period import period_mixture_floor

SMALL = {  # three letters: ambiguous prefixes are common
    "variable_period": {"kind": "variable_period", "vocab_size": 3, "seq_len": 10,
                        "min_period": 2, "max_period": 4},
    "random_offset": {"kind": "random_offset", "vocab_size": 3, "seq_len": 12, "block_len": 3,
                      "max_offset": 4},
    "repeated_block": {"kind": "repeated_block", "vocab_size": 3, "block_len": 3, "n_blocks": 3},
}
DEFAULTS = {kind: {"kind": kind} for kind in SMALL}


def _hypotheses(task):
    """(lag, start) of every hypothesis, from the task's settings: token s >= start is the
    letter lag back."""
    if task.kind == "variable_period":
        return [(m, m) for m in range(task.min_period, task.max_period + 1)]
    if task.kind == "random_offset":
        return [(task.block_len, r + task.block_len) for r in range(task.max_offset + 1)]
    return [(task.block_len, task.block_len)]


def _written_out(seq, hypotheses, V, scored=False):
    """The Bayes predictor of one sequence, written out: [T, V], row t − 1 the distribution
    of token t given the t tokens before."""
    rows = []
    for t in range(1, len(seq) + 1):
        w = {(lag, start): V ** -min(t, start) for lag, start in hypotheses
             if all(seq[s] == seq[s - lag] for s in range(start, t)) and (start <= t or not scored)}
        p = np.full(V, 1 / V if not w else sum(wh for (_, start), wh in w.items() if t < start)
                    / sum(w.values()) / V)
        for (lag, start), wh in w.items():
            if t >= start:
                p[seq[t - lag]] += wh / sum(w.values())
        rows.append(p)
    return np.array(rows)


@pytest.mark.parametrize("kind", list(SMALL))
@pytest.mark.parametrize("scored", [False, True])
def test_the_bayes_predictor_is_its_definition_written_out(kind, scored):
    task = task_from_dict(SMALL[kind])
    V, T = task.vocab_size, task.seq_len
    sample = task.sample(150, generator(0, "bayes")).tokens
    letters = torch.randint(0, V, (150, T), generator=generator(1, "bayes"))  # mostly outside
    tokens = torch.cat([sample, letters])
    probs = task.bayes_probs(tokens, scored=scored)
    assert probs.shape == (300, T, V) and probs.dtype == torch.float64
    want = np.stack([_written_out(seq, _hypotheses(task), V, scored) for seq in tokens.tolist()])
    assert np.abs(probs.numpy() - want).max() < 1e-12
    assert torch.allclose(probs.sum(-1), torch.ones(()).double(), atol=1e-12)


def test_a_sequence_no_hypothesis_explains_gets_uniform_letters():
    """Blocks of n distinct letters for periods 3..8: beyond 8 no period fits once the
    prefix holds 9 letters, and every later letter is uniform."""
    task = task_from_dict({"kind": "variable_period"})
    for n in range(2, 13):
        tokens = torch.arange(n).repeat(3)[None, :24]
        probs = task.bayes_probs(tokens)[0]
        if n > 8:
            assert torch.equal(probs[8:], torch.full((16, 26), 1 / 26, dtype=torch.float64)), n
            assert not torch.allclose(probs[7], probs[8]), n  # period 8 still fits 8 letters
        else:  # the smallest period that fits (n, or a multiple of 2) predicts the copy
            assert bool((probs[8:-1].argmax(-1) == tokens[0, 9:]).all()), n
    broken = TaskConfig().sample(1, generator(2, "bayes")).tokens.clone()
    broken[0, 10] = (broken[0, 4] + 1) % 26  # the write-up's repeat broken at token 10
    probs = TaskConfig().bayes_probs(broken)[0]
    assert bool((probs[9].argmax() == broken[0, 4]) & (probs[9].max() == 1))
    assert torch.equal(probs[10:], torch.full((14, 26), 1 / 26, dtype=torch.float64))


def _ratio(values, mask):
    """Pooled mean of ``values`` over the masked targets, and its standard error over
    sequences (the ratio of two means, linearised)."""
    values = torch.where(mask, values, torch.zeros((), dtype=torch.float64))
    s, c = values.sum(1), mask.sum(1).double()
    mean = float(s.sum() / c.sum())
    return mean, float((s - mean * c).std() / c.mean() / math.sqrt(len(s)))


FLOOR_CASES = {  # task, number of sequences, statistics too noisy there to pin to 2.5 %
    "variable_period, 3 letters": (SMALL["variable_period"], 100_000, ()),
    "variable_period": (DEFAULTS["variable_period"], 20_000, ("scored_loss_pred",)),
    "random_offset, 3 letters": (SMALL["random_offset"], 100_000, ()),
    "random_offset": (DEFAULTS["random_offset"], 20_000, ()),
    "repeated_block": (DEFAULTS["repeated_block"], 2_000, ()),
}


@pytest.mark.parametrize("case", list(FLOOR_CASES))
def test_each_floor_is_the_bayes_predictor_s_mean_on_sampled_sequences(case):
    """Within 4 standard errors, and 4 standard errors are at most 2.5 % of the floor: a
    floor 5 % off fails. A floor the sample reaches exactly (0, 1) is matched to 1e-9."""
    settings, n, noisy = FLOOR_CASES[case]
    task = task_from_dict(settings)
    floor = task.floor()
    sample = task.sample(n, generator(3, "floors"))
    mask, everything = sample.predictable, torch.ones_like(sample.predictable)
    loss, correct = target_scores(task.bayes_probs(sample.tokens), sample.tokens)
    s_loss, s_correct = target_scores(task.bayes_probs(sample.tokens, scored=True), sample.tokens)
    sampled = {"loss_pred": _ratio(loss, mask), "acc_pred": _ratio(correct, mask),
               "loss_all": _ratio(loss, everything), "scored_loss_pred": _ratio(s_loss, mask),
               "scored_acc_pred": _ratio(s_correct, mask)}
    for name, (mean, se) in sampled.items():
        exact = getattr(floor, name)
        if se < 1e-12:
            assert mean == pytest.approx(exact, abs=1e-9), name
            continue
        assert abs(mean - exact) <= 4 * se, (name, mean, exact, se)
        if name not in noisy:
            assert 4 * se <= 0.025 * exact, (name, se)
    assert floor.scored_loss_pred <= floor.loss_pred and floor.scored_acc_pred >= floor.acc_pred - 1e-12


def test_the_floors_at_the_defaults():
    vp = task_from_dict({"kind": "variable_period"}).floor()
    ro = task_from_dict({"kind": "random_offset"}).floor()
    rb = TaskConfig().floor()
    assert (round(vp.loss_pred, 4), round(vp.acc_pred, 4), round(vp.loss_all, 4)) == (0.0638, 0.9982, 0.7153)
    assert (round(vp.scored_loss_pred, 4), round(vp.scored_acc_pred, 4)) == (0.0078, 0.9982)
    assert (round(ro.loss_pred, 4), ro.acc_pred, round(ro.loss_all, 4)) == (0.0768, 1.0, 1.2116)
    assert (ro.scored_loss_pred, ro.scored_acc_pred) == (0.0, 1.0)
    assert (rb.loss_pred, rb.acc_pred, rb.scored_loss_pred, rb.scored_acc_pred) == (0.0, 1.0, 0.0, 1.0)
    assert rb.loss_all == pytest.approx(5 / 23 * math.log(26))


def test_the_variable_period_predictor_on_the_write_up_s_task():
    """The exact sum over the write-up's blocks (period 6) with periods 3..8 as hypotheses,
    and the predictor run on the write-up's sample, its sources giving the targets."""
    exact = period_mixture_floor([6], 26, 24, predictor=list(range(3, 9)))
    assert (round(exact.loss_pred, 4), round(exact.acc_pred, 4)) == (0.0663, 0.9978)
    sample = TaskConfig().sample(20_000, generator(4, "floors"))
    loss, correct = target_scores(task_from_dict({"kind": "variable_period"}).bayes_probs(
        sample.tokens), sample.tokens)
    for values, want in ((loss, exact.loss_pred), (correct, exact.acc_pred)):
        mean, se = _ratio(values, sample.predictable)
        assert abs(mean - want) <= 4 * se and 4 * se <= 0.025 * want, (mean, want, se)
