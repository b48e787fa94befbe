import itertools
import subprocess
import sys

import pytest
import torch

from handbuilt import ShiftCopyModel
from inductionlab.analysis.behaviour import (adjacent_repeats, blocks_with_pattern, check_prompt,
                                    expected_completion, failure_modes, greedy_complete,
                                    icl_score, immediate_repeats, in_prompt, pattern_of,
                                    pattern_probability, prompt_suite, random_prompt_summary,
                                    repetition_patterns)
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


def test_cli_complete_checks_every_prompt_before_running(tmp_path):
    from inductionlab.core.train import save_model

    from conftest import spec_document

    spec = spec_document("v", 0, {}, {"vocab_size": 26, "block_len": 6, "n_blocks": 4})
    save_model(tmp_path / "model.pt", build_model(ModelConfig(), 0), spec)
    cmd = [sys.executable, "-m", "inductionlab.cli", "complete", str(tmp_path / "model.pt")]
    ok = subprocess.run(cmd + ["ABCDEFABCDEF"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("ABCDEFABCDEF -> ")
    assert "expected ABCDEFABCDEF" in ok.stdout
    bad = subprocess.run(cmd + ["ABCDEF", "AB?"], capture_output=True, text=True)
    assert bad.returncode == 1 and "'AB?'" in bad.stderr and bad.stdout == ""
