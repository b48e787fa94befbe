import pytest
import torch

from handbuilt import (FixedPatternCopyModel, InductionCircuitModel, ShiftCopyModel,
                       every_copy_pattern)
from helpers import positional_masks, write_up_sources
from inductionlab.stages.behaviour.attention import (ATTENTION_SCORES, attention_mass, attention_score,
                                    copying_score, head_score_table, offset_profile,
                                    prefix_match_mask, prefix_matching_masks, uniform_pattern)
from inductionlab.stages.behaviour.behaviour import evaluation_samples
from inductionlab.core.data import TaskConfig
from inductionlab.analysis.roles import head_roles, role_threshold

TASK = TaskConfig()


def _scores(model):
    tokens, distinct = evaluation_samples(TASK, 64, seed=0)
    frame, means = head_score_table(model, tokens, distinct, local_window=3)
    return frame.iloc[0], means


def test_shift_five_head_scores_nearest_copy_one():
    row, means = _scores(ShiftCopyModel(shift=5))
    assert row["nearest_copy"] == pytest.approx(1.0) and row["induction"] == pytest.approx(1.0)
    # the first-block copy is 5 back only for queries in the second block
    assert row["first_block"] == pytest.approx(0.0)
    assert row["prefix_matching"] == pytest.approx(1.0)
    assert row["previous_token"] < 0.1 and row["local"] < 0.2
    assert row["copying"] > 3  # the attended token's logit is far above the rest
    assert offset_profile(means[0])[0, 5] == pytest.approx(1.0)


def test_previous_token_head_scores_one():
    row, _ = _scores(ShiftCopyModel(shift=1))
    assert row["previous_token"] == pytest.approx(1.0)
    assert row["induction"] == pytest.approx(0.0) and row["prefix_matching"] == pytest.approx(0.0)
    assert row["local"] == pytest.approx(1.0)


def test_anti_copying_head_has_negative_copying_score():
    row, _ = _scores(ShiftCopyModel(shift=1, gain=-2.0))
    assert row["copying"] < -3


def test_scores_on_uniform_attention():
    T = 24
    uniform = uniform_pattern(T).expand(2, 3, T, T)
    sources = write_up_sources(T, 6)

    def score(name, **kwargs):
        return attention_score(uniform, name, sources=sources, **kwargs)[0]

    # mean of 1/(i+1) over the queries where each score is defined
    assert score("previous_token")[0].item() == pytest.approx(
        sum(1 / (i + 1) for i in range(1, T)) / (T - 1), rel=1e-6)
    assert score("nearest_copy")[0].item() == pytest.approx(
        sum(1 / (i + 1) for i in range(6, T)) / (T - 6), rel=1e-6)
    assert score("local", local_window=1)[0].item() == pytest.approx(
        sum(1 / (i + 1) for i in range(T)) / T, rel=1e-6)
    # every copy of token i + 1 among keys 1..i: 1, 2 and 3 of them in blocks 2, 3, 4
    copies = sum(len([j for j in range(1, i + 1) if (i + 1 - j) % 6 == 0]) / (i + 1) for i in range(6, T))
    assert score("induction")[0].item() == pytest.approx(copies / (T - 6), rel=1e-6)
    # key 0 left out: the queries whose first-block copy is key 0 (17 and 23) count with no key
    assert score("first_block")[0].item() == pytest.approx(
        sum(1 / (i + 1) for i in range(12, T) if (i + 1) % 6) / (T - 12), rel=1e-6)


def test_chance_levels_of_the_task():
    """The chance levels of uniform causal attention for T = 24, from the masks."""
    from inductionlab.stages.behaviour.attention import attention_score

    u = uniform_pattern(24)
    expected = {"previous_token": 0.121, "local": 0.310, "nearest_copy": 0.074, "induction": 0.127,
                "first_block": 0.048, "first_token": 0.121}
    for name, value in expected.items():
        score, chance = attention_score(u, name, local_window=3, sources=write_up_sources())
        assert chance == pytest.approx(value, abs=5e-4), name
        assert score.item() == pytest.approx(chance, rel=1e-6), name


def test_uniform_attention_scores_exactly_its_chance_columns():
    model = FixedPatternCopyModel(uniform_pattern(24)[0, 0])
    row, _ = _scores(model)
    for name in ATTENTION_SCORES:
        assert row[name] == pytest.approx(row[f"{name}_chance"], rel=1e-5), name
    assert row["induction_chance"] == pytest.approx(0.12664, abs=1e-5)
    # and no role, whatever the copying score
    assert not {"previous_token", "induction", "prefix_matching", "local"} & set(head_roles(row, RULES))


def test_head_spreading_over_every_copy_is_a_full_induction_head():
    pattern = every_copy_pattern(24, 6)
    row, _ = _scores(FixedPatternCopyModel(pattern))
    assert row["induction"] == pytest.approx(1.0)
    # the nearest copy holds 1, 1/2 and 1/3 of the attention in blocks 2, 3 and 4
    keys, queries = positional_masks("nearest_copy", 24, 6)
    for block, share in ((1, 1.0), (2, 1 / 2), (3, 1 / 3)):
        in_block = queries & (torch.arange(24) // 6 == block)
        assert attention_mass(pattern[None, None], keys, in_block).item() == pytest.approx(share)
    assert row["nearest_copy"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)  # about 0.61
    # from the third block on, the first-block copy holds 1/2 and 1/3, except where it is
    # key 0 (queries 17 and 23), which the head leaves out
    assert row["first_block"] == pytest.approx((5 / 2 + 5 / 3) / 12)
    assert "induction" in head_roles(row, RULES) and "copying" in head_roles(row, RULES)


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


RULES = {"times_chance": 2.0, "above_chance": 0.2, "local_window": 3, "copying_margin": 0.5}
CHANCE = {"previous_token_chance": 0.121, "induction_chance": 0.127,
          "prefix_matching_chance": 0.127, "local_chance": 0.310}


@pytest.mark.parametrize("scores,roles", [
    ({"previous_token": 0.9, "induction": 0.0, "prefix_matching": 0.0, "local": 0.95, "copying": -2},
     ["previous_token", "local", "anti_copying"]),
    ({"previous_token": 0.0, "induction": 0.8, "prefix_matching": 0.8, "local": 0.1, "copying": 3},
     ["induction", "prefix_matching", "copying"]),
    ({"previous_token": 0.0, "induction": 0.8, "prefix_matching": 0.1, "local": 0.1, "copying": 0},
     ["induction"]),
    # the old fixed thresholds: 0.16 previous-token, 0.3 induction and 0.6 local are not
    # enough above chance (thresholds 0.321, 0.327, 0.621)
    ({"previous_token": 0.16, "induction": 0.32, "prefix_matching": 0.1, "local": 0.6, "copying": -1},
     ["anti_copying"]),
    ({"previous_token": 0.1, "induction": 0.1, "prefix_matching": 0.1, "local": 0.2, "copying": 0.1},
     []),
])
def test_head_roles_follow_the_rule_relative_to_chance(scores, roles):
    assert head_roles({**scores, **CHANCE}, RULES) == roles
    stricter = {**RULES, "times_chance": 7.0}  # 7 x 0.127 = 0.889 > 0.8
    assert "induction" not in head_roles({**scores, **CHANCE}, stricter)


def test_role_names_list_every_role_the_rule_gives_in_its_order():
    from inductionlab.analysis.roles import content_column, positional_role, role_names

    every = {"previous_token": 0.9, "induction": 0.9, "prefix_matching": 0.9, "local": 0.95, **CHANCE}
    content = {content_column(s): 0.5 for s in ("induction", "prefix_matching")}
    on_position = {content_column(s): 0.0 for s in ("induction", "prefix_matching")}
    by_content = head_roles({**every, **content, "copying": 3}, RULES)
    by_position = head_roles({**every, **on_position, "copying": -3}, RULES)
    assert by_content == [r for r in role_names() if not r.startswith("positional_")
                          and r != "anti_copying"]
    assert by_position == [r for r in role_names() if r not in ("induction", "prefix_matching", "copying")]
    assert set(by_content) | set(by_position) == set(role_names())
    assert positional_role("induction") in by_position


def test_role_threshold_is_the_larger_of_the_two_rules():
    assert role_threshold(0.1, RULES) == pytest.approx(0.3)   # chance + 0.2
    assert role_threshold(0.31, RULES) == pytest.approx(0.62)  # 2 x chance


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


def test_attention_mass_with_shared_masks_equals_the_mean_of_each_sequence_s_mass():
    # shared masks take the mean over sequences first; per-sequence masks cannot
    gen = torch.Generator().manual_seed(3)
    pattern = torch.softmax(torch.randn(5, 2, 12, 12, generator=gen), dim=-1)
    keys, queries = positional_masks("induction", 12, 3)
    per_sequence = torch.stack([
        torch.stack([(pattern[b, h] * keys)[queries].sum(-1).mean() for h in range(2)])
        for b in range(5)]).mean(0)
    assert torch.allclose(attention_mass(pattern, keys, queries), per_sequence, atol=1e-6)
    tokens = torch.randint(0, 4, (5, 12), generator=gen)
    pkeys, pqueries = prefix_matching_masks(tokens)
    expected = torch.stack([
        torch.cat([(pattern[b, h] * pkeys[b])[pqueries[b]].sum(-1) for b in range(5)]).mean()
        for h in range(2)])
    assert torch.allclose(attention_mass(pattern, pkeys, pqueries), expected, atol=1e-6)


def _scores_with_control(model, task=TASK, n=256):
    from inductionlab.core.data import control_sample

    tokens, distinct = evaluation_samples(task, n, seed=0)
    frame, _ = head_score_table(model, tokens, distinct, local_window=3,
                                control_tokens=control_sample(n, task, 0), intervals=True, seed=0)
    return frame


def test_a_head_looking_at_positions_has_no_content_part_and_no_induction_role():
    """Query i attends to position (i + 1) mod 6 of the first block whatever it holds: on
    the task that is a copy of the target, on random sequences it is not."""
    T = 24
    pattern = torch.zeros(T, T)
    for i in range(T):
        j = (i + 1) % 6 if i >= 6 and (i + 1) % 6 else i
        pattern[i, j] = 1.0
    row = _scores_with_control(FixedPatternCopyModel(pattern)).iloc[0]
    assert row["first_block"] == pytest.approx(10 / 12)
    assert row["induction"] > 0.5 and role_threshold(row["induction_chance"], RULES) < row["induction"]
    for name in ("induction", "first_block", "nearest_copy"):
        assert row[f"{name}_control"] == pytest.approx(row[name], abs=1e-6), name
        assert row[f"{name}_content"] == pytest.approx(0.0, abs=1e-6), name
    roles = head_roles(row, RULES)
    assert "induction" not in roles and "positional_induction" in roles


def test_a_content_induction_head_scores_chance_on_the_control():
    task = TaskConfig(vocab_size=8)
    frame = _scores_with_control(InductionCircuitModel(), task)
    row = frame[(frame["layer"] == 1) & (frame["head"] == 0)].iloc[0]
    assert row["induction_control"] < row["induction_chance"] + 0.1
    assert row["induction_content"] >= 0.2
    assert row["induction_content_low"] <= row["induction_content"] <= row["induction_content_high"]
    assert "induction" in head_roles(row, RULES)
    # the previous-token head of layer 0 looks at a position: the same on both samples
    prev = frame[(frame["layer"] == 0) & (frame["head"] == 0)].iloc[0]
    assert prev["previous_token"] == pytest.approx(1.0)
    assert prev["previous_token_control"] == pytest.approx(1.0)


def test_score_intervals_hold_the_value_and_shrink_with_the_sample():
    model = FixedPatternCopyModel(torch.softmax(torch.randn(24, 24, generator=torch.Generator().manual_seed(0))
                                                .tril() - 1e9 * torch.ones(24, 24).triu(1), -1))
    widths = []
    for n in (64, 1024):
        row = _scores_with_control(model, n=n).iloc[0]
        for name in ATTENTION_SCORES:
            assert row[f"{name}_low"] - 1e-6 <= row[name] <= row[f"{name}_high"] + 1e-6, name
        assert row["induction_high"] - row["induction_low"] < 1e-6  # fixed pattern, fixed masks
        widths.append(row["copying_high"] - row["copying_low"])  # depends on the letters
    assert 0 < widths[1] < widths[0]


def test_first_token_scores_attention_on_key_zero():
    T = 24
    sink = torch.zeros(T, T)
    sink[:, 0] = 1.0
    row = _scores(FixedPatternCopyModel(sink))[0]
    assert row["first_token"] == pytest.approx(1.0)
    assert row["induction"] == pytest.approx(0.0) and row["first_block"] == pytest.approx(0.0)


def test_content_replicates_are_those_of_the_content_interval():
    from inductionlab.analysis.uncertainty import RESAMPLES, percentile_interval
    from inductionlab.core.data import control_sample

    task, n = TaskConfig(vocab_size=8), 128
    sample, distinct = evaluation_samples(task, n, seed=0)
    control = control_sample(n, task, 0)
    model = InductionCircuitModel()
    frame, _, replicates = head_score_table(model, sample, distinct, 3, control_tokens=control,
                                            intervals=True, seed=2, content_replicates=True)
    assert [r.shape for r in replicates] == [(RESAMPLES, 2), (RESAMPLES, 2)]
    for r in frame.itertuples():
        low, high = percentile_interval(replicates[r.layer][:, r.head])
        assert (low, high) == (r.induction_content_low, r.induction_content_high)
        assert low - 1e-6 <= r.induction_content <= high + 1e-6
    # the same sample sizes and seed resample the same sequences: a second pass is paired
    _, _, again = head_score_table(model, sample, distinct, 3, control_tokens=control, seed=2,
                                   copying=False, content_replicates=True)
    assert all((a == b).all() for a, b in zip(replicates, again))
    with pytest.raises(ValueError, match="control"):
        head_score_table(model, sample, distinct, 3, content_replicates=True)


def test_masks_read_once_score_as_masks_read_on_every_call():
    """A caller scoring the same samples many times passes their sample_masks: the table is
    the same, and masks read with another local window give another local score (they
    are used, not read again)."""
    from inductionlab.core.data import control_sample
    from inductionlab.stages.behaviour.attention import sample_masks

    task, n = TaskConfig(vocab_size=8), 64
    sample, distinct = evaluation_samples(task, n, seed=0)
    control = control_sample(n, task, 0)
    model = InductionCircuitModel()
    fresh, _ = head_score_table(model, sample, distinct, 3, control_tokens=control)
    kept, _ = head_score_table(model, sample, distinct, 3, control_tokens=control,
                               masks=sample_masks(sample, distinct, 3))
    assert fresh.equals(kept)
    wider, _ = head_score_table(model, sample, distinct, 3, control_tokens=control,
                                masks=sample_masks(sample, distinct, 6))
    assert (wider["local"] > fresh["local"]).any()
    assert wider["induction"].equals(fresh["induction"])
