import itertools
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import torch

from handbuilt import ShiftCopyModel
from helpers import stage_settings
from inductionlab.stages.behaviour.settings import behaviour_settings_problems
from inductionlab.stages.behaviour.behaviour import (behaviour_results, check_prompt, expected_completion,
                                             icl_score, prompt_suite, random_prompt_summary)
from inductionlab.stages.behaviour.failure_modes import (adjacent_repeats, blocks_with_pattern,
                                                 failure_modes, pattern_of, pattern_probability,
                                                 repetition_patterns)
from inductionlab.stages.behaviour.measures import immediate_repeats, in_prompt
from inductionlab.stages.behaviour.period_test import (period_measures, period_sequences,
                                               period_test_lengths, shared_prefix_measures,
                                               shared_prefix_prompts)
from inductionlab.core.decoding import greedy_complete
from inductionlab.core.data import TaskConfig, repeat_blocks, sample_blocks
from inductionlab.core.model import ModelConfig, build_model
from inductionlab.core.seeding import generator

TASK = TaskConfig()


def test_the_203_patterns_are_the_set_partitions_of_six_positions():
    patterns = repetition_patterns(6)
    assert len(patterns) == 203 == len(set(patterns))
    # independently: the patterns of all 6^6 blocks over six letters
    seen = {pattern_of("".join(b)) for b in itertools.product("UVWXYZ", repeat=6)}
    assert seen == set(patterns)
    assert [len(repetition_patterns(n)) for n in range(1, 7)] == [1, 2, 5, 15, 52, 203]
    assert sum(pattern_probability(p, 26) for p in patterns) == pytest.approx(1.0, abs=1e-12)
    assert pattern_probability("ABCDEF", 26) == pytest.approx(26 * 25 * 24 * 23 * 22 * 21 / 26**6)


def test_pattern_probability_matches_sampling():
    blocks = sample_blocks(30000, TASK, generator(0, "t"))
    share = sum(pattern_of("".join(chr(65 + x) for x in b.tolist())) == "ABCDEF" for b in blocks) / 30000
    assert share == pytest.approx(pattern_probability("ABCDEF", 26), abs=0.015)


def test_blocks_realise_their_pattern():
    for pattern in ("AAABBB", "ABABAB", "AAAAAA", "ABCDEF", "ABCABD"):
        blocks = blocks_with_pattern(pattern, 50, 26, generator(1, "t"))
        assert all(pattern_of("".join(chr(65 + x) for x in b.tolist())) == pattern for b in blocks)
    assert adjacent_repeats("AAABBB") == 4 and adjacent_repeats("ABCDEF") == 0
    assert adjacent_repeats("ABCDEA") == 1  # the wrap: ...A | A...


def test_shift_five_copying_model_completes_every_twelve_letter_prompt():
    model = ShiftCopyModel(shift=5)
    blocks = sample_blocks(200, TASK, generator(2, "t"))
    seqs = repeat_blocks(blocks, 4)
    assert torch.equal(greedy_complete(model, seqs[:, :12], 24), seqs)
    frame = failure_modes(model, TASK, samples=4, prompt_len=12, seed=0)
    assert len(frame) == 203
    assert (frame["teacher_forced_acc"] == 1).all() and (frame["greedy_acc_prompt12"] == 1).all()
    assert frame["error_mass"].sum() == 0


def test_failure_modes_single_out_the_patterns_a_model_gets_wrong():
    # an anti-repeat model: the shift-5 copier whose prediction is overruled when it
    # equals the current token fails exactly on patterns with adjacent repeats
    model = ShiftCopyModel(shift=5, gain=2.0)
    with torch.no_grad():
        model.W_U.copy_(torch.eye(26) * 1.0)
        model.W_E.copy_(torch.eye(26))
    base_forward = model.forward

    def forward(tokens, intervention=None):
        logits = base_forward(tokens)
        return logits - 10 * torch.nn.functional.one_hot(tokens, 26)

    model.forward = forward
    frame = failure_modes(model, TASK, samples=8, prompt_len=12, seed=0).set_index("pattern")
    assert frame.loc["ABCDEF", "teacher_forced_acc"] == 1
    assert frame.loc["AAABBB", "teacher_forced_acc"] < 1
    assert ((frame["teacher_forced_acc"] < 1) == (frame["adjacent_repeats"] > 0)).all()
    assert frame["error_share"].sum() == pytest.approx(1.0)


def test_greedy_decoding_never_looks_ahead():
    model = build_model(ModelConfig(n_layers=2), 4)
    prompts = sample_blocks(16, TASK, generator(3, "t"))
    fast = greedy_complete(model, prompts, 24)
    seq = prompts.clone()
    with torch.no_grad():
        while seq.shape[1] < 24:  # step by step on the prefix alone
            seq = torch.cat([seq, model(seq)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(fast, seq)


def test_expected_completion():
    assert expected_completion("ABCDEF", TASK) == "ABCDEF" * 3
    assert expected_completion("abcdefab", TASK) == "CDEF" + "ABCDEF" * 2
    assert expected_completion("ABCXYZABCDEF", TASK) is None
    assert expected_completion("ABC", TASK) is None


@pytest.mark.parametrize("prompt,words", [
    ("", "empty"), ("AB1", "'1'"), ("AB CD", "' '"), ("A" * 24, "shorter than the context"),
    ("ÄBC", "'Ä'"),
])
def test_bad_prompts_are_named(prompt, words):
    with pytest.raises(ValueError) as err:
        check_prompt(prompt, TASK)
    assert repr(prompt) in str(err.value) and words in str(err.value)


def test_prompts_outside_a_smaller_vocabulary_are_rejected():
    with pytest.raises(ValueError, match="'Z'"):
        check_prompt("ABZ", TaskConfig(vocab_size=10))
    assert check_prompt("abc", TASK).tolist() == [0, 1, 2]  # lower case is accepted


def test_habits_and_suite_on_the_shift_model():
    model = ShiftCopyModel(shift=5)
    suite = prompt_suite(model, ["ABCDEFABCDEF", "AAABBBAAABBB", "ABCDEFXYZRST"], TASK,
                         [{"m": "XX"}, {}, {}], "m")
    assert suite["completion"].tolist()[:2] == ["ABCDEFABCDEF", "AAABBBAAABBB"]
    assert suite["accuracy"].tolist()[:2] == [1.0, 1.0]
    assert suite["in_distribution"].tolist() == [True, True, False]
    assert suite["write_up_completion"].tolist() == ["XX", "", ""]
    assert suite["immediate_repeat_rate"][1] == pytest.approx(8 / 12)  # AAABBBAAABBB after ...B
    summary = random_prompt_summary(model, TASK, 50, [6, 12], seed=0)
    assert summary["random_len12_acc_mean"] == 1.0 and summary["random_len12_exact"] == 1.0
    assert summary["random_len12_repeat_rate"] == summary["random_len12_repeat_rate_data"]
    assert summary["ood_len12_share_in_prompt"] == 1.0


def test_repeat_and_prompt_share_helpers():
    seq = torch.tensor([[0, 1, 1, 2, 0]])
    assert immediate_repeats(seq, 2).tolist() == [[True, False, False]]
    assert in_prompt(seq, 2).tolist() == [[True, False, True]]
    assert icl_score(torch.tensor([3.0, 2.0, 0.5])) == -2.5


@pytest.mark.slow
def test_cli_complete_checks_every_prompt_before_running(tmp_path):
    from inductionlab.core.loading import save_model

    from helpers import spec_document

    spec = spec_document("v", 0, {}, {"vocab_size": 26, "block_len": 6, "n_blocks": 4})
    save_model(tmp_path / "model.pt", build_model(ModelConfig(), 0), spec)
    cmd = [sys.executable, "-m", "inductionlab.cli", "complete", str(tmp_path / "model.pt")]
    ok = subprocess.run(cmd + ["ABCDEFABCDEF"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("ABCDEFABCDEF -> ")
    assert "expected ABCDEFABCDEF" in ok.stdout
    bad = subprocess.run(cmd + ["ABCDEF", "AB?"], capture_output=True, text=True)
    assert bad.returncode == 1 and "'AB?'" in bad.stderr and bad.stdout == ""


# ---------------------------------------------------------------- intervals

SETTINGS = stage_settings("behaviour", behaviour={
    "eval_seed": 5, "n_sequences": 64, "n_random_prompts": 40, "random_prompt_lengths": [6, 12],
    "failure_samples": 2, "failure_prompt_len": 12, "prompts": [{"prompt": "ABCDEFABCDEF"}]})


def upper_bound_of_no_event(n: int) -> float:
    """Clopper–Pearson upper bound of 0 events in n trials: 1 - 0.025^(1/n)."""
    return 1 - 0.025 ** (1 / n)


@pytest.fixture(scope="module")
def shift_summary():
    """The behaviour summary of the shift-5 copier."""
    spec = SimpleNamespace(task=TASK, task_name="write_up", name="shift/seed0", variant="shift", seed=0)
    tables, _ = behaviour_results(ShiftCopyModel(shift=5), spec, SETTINGS)
    return tables["behaviour"]


def test_every_sampled_value_of_the_summary_has_an_interval(shift_summary):
    assert list(shift_summary.columns) == ["variant", "seed", "metric", "value", "low", "high", "task"]
    summary = shift_summary.set_index("metric")
    for name in ("period4_acc", "period8_acc", "shared_prefix_follows_first",
                 "shared_prefix_follows_nearest", "shared_prefix_nearest_minus_first",
                 "ood_two_blocks_second_minus_first", "loss_pos22", "repeat_when_correct_rate"):
        assert name in summary.index, name
    counts = summary.index.str.endswith("_acc_std") | (summary.index == "repeat_when_correct_n") \
        | summary.index.str.startswith("floor_") | summary.index.str.endswith("_trained")
    # four stds, a count, the task's three floors (computed exactly) and five period flags
    assert counts.sum() == 13
    assert summary.loc[counts, ["low", "high"]].isna().all().all()
    sampled = summary[~counts]
    assert sampled[["low", "high"]].notna().all().all()
    inside = (sampled["low"] <= sampled["value"] + 1e-6) & (sampled["value"] <= sampled["high"] + 1e-6)
    assert inside.all(), sampled[~inside]


def test_known_intervals_of_the_shift_model(shift_summary):
    summary = shift_summary.set_index("metric")
    # a perfect model: every bootstrap resample of its accuracy is 1
    assert summary.loc["acc_pred", ["value", "low", "high"]].tolist() == [1.0, 1.0, 1.0]
    # it repeats the nearest block exactly: every completed letter continues the second block
    assert summary.loc["ood_two_blocks_second_minus_first", ["value", "low", "high"]].tolist() == [1, 1, 1]
    # no repeat in 40 completions of 12 letters of distinct blocks: exact binomial, not [0, 0]
    row = summary.loc["random_distinct_len12_repeat_rate"]
    assert row["value"] == 0 and row["low"] == 0
    assert row["high"] == pytest.approx(upper_bound_of_no_event(40 * 12), rel=1e-6) and row["high"] > 0
    # every prompt completed exactly: 40 of 40
    row = summary.loc["random_len12_exact"]
    assert row["value"] == 1 and row["high"] == 1
    assert row["low"] == pytest.approx(0.025 ** (1 / 40), rel=1e-6)


def test_failure_mode_intervals():
    frame = failure_modes(ShiftCopyModel(shift=5), TASK, samples=4, prompt_len=12, seed=0)
    columns = list(frame.columns)
    i = columns.index("teacher_forced_acc")
    assert columns[i + 1:i + 3] == ["teacher_forced_acc_low", "teacher_forced_acc_high"]
    i = columns.index("greedy_exact_prompt12")
    assert columns[i + 1:i + 3] == ["greedy_exact_prompt12_low", "greedy_exact_prompt12_high"]
    assert (frame["teacher_forced_acc_low"] == 1).all() and (frame["teacher_forced_acc_high"] == 1).all()
    assert (frame["greedy_exact_prompt12_high"] == 1).all()
    assert frame["greedy_exact_prompt12_low"].to_numpy() == pytest.approx(0.025 ** (1 / 4))
    # an untrained model: every interval holds its value; no block completed exactly has
    # an upper bound above 0
    frame = failure_modes(build_model(ModelConfig(n_layers=1), 0), TASK, samples=8, prompt_len=12, seed=0)
    for name in ("teacher_forced_acc", "greedy_exact_prompt12"):
        assert (frame[f"{name}_low"] <= frame[name] + 1e-9).all()
        assert (frame[name] <= frame[f"{name}_high"] + 1e-9).all()
    none = frame[frame["greedy_exact_prompt12"] == 0]
    assert len(none) and (none["greedy_exact_prompt12_low"] == 0).all()
    assert none["greedy_exact_prompt12_high"].to_numpy() == pytest.approx(upper_bound_of_no_event(8))


# ---------------------------------------------------------------- content or position

def copy_after_occurrence(which: str, vocab_size: int = 26):
    """A model without weights: at position i, logit 1 on the letter that followed the
    ``nearest`` (most recent) or the ``first`` earlier occurrence of letter i; all logits 0
    where letter i has not occurred before."""
    def model(tokens):
        B, T = tokens.shape
        pos = torch.arange(T)
        earlier = (tokens[:, :, None] == tokens[:, None, :]) & (pos[None, :] < pos[:, None])  # [B, i, j]
        if which == "nearest":
            j = torch.where(earlier, pos, -1).max(-1).values
        else:
            j = torch.where(earlier, pos, T).min(-1).values
        found = earlier.any(-1)
        following = tokens.gather(1, (j + 1).clamp(0, T - 1))
        logits = torch.zeros(B, T, vocab_size)
        logits[found] = torch.nn.functional.one_hot(following[found], vocab_size).float()
        return logits

    return model


def test_period_sequences_repeat_a_block_of_distinct_letters():
    for period in (2, 5, 8):
        seq = period_sequences(TASK, period, 30, seed=1)
        assert seq.shape == (30, 24)
        assert (seq[:, period:] == seq[:, :-period]).all()
        assert all(len(set(row[:period].tolist())) == period for row in seq)
        assert torch.equal(seq, period_sequences(TASK, period, 30, seed=1))


def test_period_test_tells_content_from_position():
    periods = [2, 3, 4, 5, 6, 7, 8]
    # copying the letter 5 back predicts token i + 1 = token i - 5: right at period 6,
    # wrong at every scored prediction of periods 4, 5, 7 and 8
    shift = period_measures(ShiftCopyModel(shift=5), TASK, periods, 64, seed=0)
    assert {p: shift[f"period{p}_acc"].value for p in periods[2:]} == {4: 0, 5: 0, 6: 1, 7: 0, 8: 0}
    # (period 2 and 3 divide 6 too, but before position 5 the head attends to position 0)
    content = period_measures(copy_after_occurrence("nearest"), TASK, periods, 64, seed=0)
    for p in periods:
        measure = content[f"period{p}_acc"]
        assert measure.value == 1 and measure.interval(0, f"period{p}_acc") == (1.0, 1.0)
    low, high = shift["period6_acc"].interval(0, "period6_acc")
    assert (low, high) == (1.0, 1.0)


def test_shared_prefix_prompts():
    seq, first, nearest = shared_prefix_prompts(TASK, 3, 50, seed=2)
    assert seq.shape == (50, 15)
    assert torch.equal(seq[:, 0:3], seq[:, 6:9]) and torch.equal(seq[:, 0:3], seq[:, 12:15])
    assert all(len(set(row[:12].tolist())) == 9 for row in seq)  # P, X, D: 3 + 3 + 3 letters
    assert torch.equal(first, seq[:, 3]) and torch.equal(nearest, seq[:, 9])
    one, _, _ = shared_prefix_prompts(TASK, 1, 5, seed=2)
    assert one.shape == (5, 13) and torch.equal(one[:, 0], one[:, 6])


def test_shared_prefix_tells_first_from_nearest():
    n = 50
    nearest = shared_prefix_measures(copy_after_occurrence("nearest"), TASK, 3, n, seed=0)
    first = shared_prefix_measures(copy_after_occurrence("first"), TASK, 3, n, seed=0)
    assert nearest["shared_prefix_follows_nearest"].value == 1
    assert nearest["shared_prefix_follows_first"].value == 0
    assert first["shared_prefix_follows_first"].value == 1
    assert first["shared_prefix_follows_nearest"].value == 0
    assert nearest["shared_prefix_nearest_minus_first"].value == 1
    assert first["shared_prefix_nearest_minus_first"].value == -1
    low, high = nearest["shared_prefix_follows_first"].interval(0, "x")
    assert low == 0 and high == pytest.approx(upper_bound_of_no_event(n), rel=1e-6)
    assert nearest["shared_prefix_nearest_minus_first"].interval(0, "x") == (1.0, 1.0)
    # two blocks of 6 and the prefix again do not fit 12 tokens: no prompts
    assert shared_prefix_measures(copy_after_occurrence("first"), TaskConfig(n_blocks=2), 3, n, 0) == {}


def test_bad_period_or_prefix_settings_are_named_before_any_model_runs():
    assert behaviour_settings_problems(SETTINGS, TASK) == []
    problems = behaviour_settings_problems({"period_lengths": [1, 6, 23], "shared_prefix_len": 6}, TASK)
    assert len(problems) == 3
    assert "behaviour.period_lengths: 1 " in problems[0] and "behaviour.period_lengths: 23 " in problems[1]
    assert "behaviour.shared_prefix_len: 6 " in problems[2]
    assert behaviour_settings_problems({**SETTINGS, "period_lengths": [10]}, TaskConfig(vocab_size=8))  # 10 letters of 8

    def never(tokens, *args, **kwargs):
        raise AssertionError("the model ran")

    spec = SimpleNamespace(task=TASK, task_name="write_up", name="never/seed0", variant="never", seed=0)
    with pytest.raises(ValueError, match="behaviour.shared_prefix_len: 0"):
        behaviour_results(never, spec, {**SETTINGS, "shared_prefix_len": 0})


def test_the_failure_mode_suite_samples_patterns_when_there_are_too_many_to_list():
    from inductionlab.stages.behaviour.failure_modes import MAX_PATTERNS, bell, pattern_of, suite_patterns

    assert [bell(n) for n in range(1, 9)] == [1, 2, 5, 15, 52, 203, 877, 4140]
    assert suite_patterns(6, 26, 0) == repetition_patterns(6)  # 203: every one listed
    start = time.monotonic()
    sampled = suite_patterns(26, 26, 0)  # Bell(26) is about 5e19
    assert time.monotonic() - start < 10
    assert len(sampled) == MAX_PATTERNS == len(set(sampled))
    assert all(pattern_of(p) == p and len(p) == 26 for p in sampled)
    assert "A" * 26 in sampled and "ABCDEFGHIJKLMNOPQRSTUVWXYZ" in sampled
    assert suite_patterns(26, 26, 0) == sampled  # the same sample for a seed


def test_the_period_test_covers_every_trained_period_and_the_untrained_ones():
    from inductionlab.core.tasks import task_from_dict

    varying = task_from_dict({"kind": "variable_period", "min_period": 3, "max_period": 8})
    # configured 4…8; the task trains 3…8 (3 added); untrained 2 and 9…12 at T = 24
    assert period_test_lengths([4, 5, 6, 7, 8], varying, 24) == list(range(2, 13))
    # the write-up's task trains 6 only: tested on the configured lengths and on 6
    assert period_test_lengths([4, 5, 7, 8], task_from_dict({}), 24) == [4, 5, 6, 7, 8]
    assert period_test_lengths([4, 8], None, 24) == [4, 8]
