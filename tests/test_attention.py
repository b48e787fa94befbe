import pytest
import torch

from handbuilt import ShiftCopyModel
from inductionlab.attention import (copying_score, head_roles, head_score_table, local_score,
                                    offset_profile, period_score, prefix_match_mask,
                                    previous_token_score)
from inductionlab.behaviour import evaluation_samples
from inductionlab.data import TaskConfig

TASK = TaskConfig()


def _scores(model):
    tokens, distinct = evaluation_samples(TASK, 64, seed=0)
    frame, means = head_score_table(model, tokens, distinct, TASK.block_len, local_window=3)
    return frame.iloc[0], means


def test_shift_five_head_scores_period_one():
    row, means = _scores(ShiftCopyModel(shift=5))
    assert row["period"] == pytest.approx(1.0)
    assert row["prefix_matching"] == pytest.approx(1.0)
    assert row["previous_token"] < 0.1 and row["local"] < 0.2
    assert row["copying"] > 3  # the attended token's logit is far above the rest
    assert offset_profile(means[0])[0, 5] == pytest.approx(1.0)


def test_previous_token_head_scores_one():
    row, _ = _scores(ShiftCopyModel(shift=1))
    assert row["previous_token"] == pytest.approx(1.0)
    assert row["period"] == pytest.approx(0.0) and row["prefix_matching"] == pytest.approx(0.0)
    assert row["local"] == pytest.approx(1.0)


def test_anti_copying_head_has_negative_copying_score():
    row, _ = _scores(ShiftCopyModel(shift=1, gain=-2.0))
    assert row["copying"] < -3


def test_scores_on_uniform_attention():
    T = 24
    uniform = torch.tril(torch.ones(T, T))
    uniform = (uniform / uniform.sum(-1, keepdim=True)).expand(2, 3, T, T)
    # mean of 1/(i+1) over the queries where each score is defined
    assert previous_token_score(uniform)[0].item() == pytest.approx(
        sum(1 / (i + 1) for i in range(1, T)) / (T - 1), rel=1e-6)
    assert period_score(uniform, 6)[0].item() == pytest.approx(
        sum(1 / (i + 1) for i in range(6, T)) / (T - 6), rel=1e-6)
    assert local_score(uniform, 1)[0].item() == pytest.approx(
        sum(1 / (i + 1) for i in range(T)) / T, rel=1e-6)


def test_prefix_match_mask():
    tokens = torch.tensor([[0, 1, 2, 0, 1, 2, 0]])
    mask = prefix_match_mask(tokens)[0]
    # query 3 (token 0): key 1 follows the earlier 0 at position 0
    assert mask[3].nonzero().flatten().tolist() == [1]
    assert mask[6].nonzero().flatten().tolist() == [1, 4]
    assert not mask[:3].any()


def test_copying_score_sign_and_zero():
    tokens = torch.tensor([[0, 1, 2]])
    pattern = torch.eye(3)[None, None]  # attend to self
    W_U = torch.eye(4)
    head_out = torch.nn.functional.one_hot(tokens, 4).float()[:, None]  # writes its own token
    assert copying_score(pattern, head_out, W_U, tokens).item() > 1
    assert copying_score(pattern, -head_out, W_U, tokens).item() < -1


THRESHOLDS = {"previous_token_min": 0.5, "period_min": 0.3, "prefix_matching_min": 0.3,
              "local_window": 3, "local_min": 0.6, "copying_margin": 0.5}


@pytest.mark.parametrize("scores,roles", [
    ({"previous_token": 0.9, "period": 0.0, "prefix_matching": 0.0, "local": 0.95, "copying": -2},
     ["previous_token", "local_anti_copying"]),
    ({"previous_token": 0.0, "period": 0.8, "prefix_matching": 0.8, "local": 0.1, "copying": 3},
     ["induction", "prefix_matching", "copying"]),
    ({"previous_token": 0.0, "period": 0.8, "prefix_matching": 0.1, "local": 0.1, "copying": 0},
     ["period"]),
    ({"previous_token": 0.1, "period": 0.1, "prefix_matching": 0.1, "local": 0.2, "copying": -1},
     ["anti_copying"]),
    ({"previous_token": 0.1, "period": 0.1, "prefix_matching": 0.1, "local": 0.2, "copying": 0.1},
     []),
])
def test_head_roles_follow_the_thresholds(scores, roles):
    assert head_roles(scores, THRESHOLDS) == roles
    stricter = {**THRESHOLDS, "period_min": 0.9, "previous_token_min": 0.95}
    assert "period" not in head_roles(scores, stricter) and "induction" not in head_roles(scores, stricter)


def test_copying_score_equals_its_definition_on_random_heads():
    g = torch.Generator().manual_seed(3)
    B, H, T, D, V = 5, 3, 7, 6, 11
    pattern = torch.softmax(torch.randn(B, H, T, T, generator=g), -1)
    head_out, W_U = torch.randn(B, H, T, D, generator=g), torch.randn(D, V, generator=g)
    tokens = torch.randint(0, V, (B, T), generator=g)
    logits = head_out @ W_U  # the definition: z-scores over the vocabulary, attention-weighted
    z = (logits - logits.mean(-1, keepdim=True)) / logits.std(-1, keepdim=True)
    expected = (pattern * z.gather(-1, tokens[:, None, None, :].expand(B, H, T, T))).sum(-1).mean((0, 2))
    assert torch.allclose(copying_score(pattern, head_out, W_U, tokens), expected, atol=1e-5)
