import math

import torch

from inductionlab.core.data import (TaskConfig, decode, encode, loss_floor,
                               sample_sequences, validation_set)
from inductionlab.core.seeding import generator

TASK = TaskConfig()


def test_sequences_repeat_with_period_block_len():
    seqs = sample_sequences(500, TASK, generator(0, "t"))
    assert seqs.shape == (500, 24) and seqs.dtype == torch.long
    assert torch.equal(seqs[:, 6:], seqs[:, :-6])
    # the period is exactly 6, not a divisor of it, for most sequences
    assert (seqs[:, 3:] != seqs[:, :-3]).any(dim=1).float().mean() > 0.99


def test_letters_are_uniform():
    blocks = sample_sequences(20000, TASK, generator(1, "t"))[:, :6].flatten()
    counts = torch.bincount(blocks, minlength=26).double()
    expected = blocks.numel() / 26
    chi2 = ((counts - expected) ** 2 / expected).sum().item()
    assert counts.numel() == 26 and chi2 < 60  # df = 25; 60 is p ~ 1e-4


def test_repeats_within_a_block_occur_at_the_rate_of_sampling_with_replacement():
    blocks = sample_sequences(40000, TASK, generator(2, "t"))[:, :6]
    has_repeat = torch.tensor([len(set(b.tolist())) < 6 for b in blocks]).double().mean().item()
    expected = 1 - math.perm(26, 6) / 26**6  # ~0.463
    assert abs(has_repeat - expected) < 0.01


def test_generators_are_reproducible_and_independent():
    a = sample_sequences(8, TASK, generator(0, "train-batches"))
    b = sample_sequences(8, TASK, generator(0, "train-batches"))
    c = sample_sequences(8, TASK, generator(1, "train-batches"))
    d = sample_sequences(8, TASK, generator(0, "validation"))
    assert torch.equal(a, b) and not torch.equal(a, c) and not torch.equal(a, d)
    assert torch.equal(validation_set(16, TASK, 3).tokens, validation_set(16, TASK, 3).tokens)


def test_predictable_targets_and_floor():
    mask = TASK.sample(4, torch.Generator().manual_seed(0)).predictable
    assert mask.shape == (4, 23) and (mask.sum(-1) == 18).all() and not mask[:, :5].any()
    assert abs(loss_floor(TASK) - 5 / 23 * math.log(26)) < 1e-12
    assert abs(loss_floor(TASK) - 0.708) < 1e-3


def test_encode_decode_and_bad_letters():
    assert decode(encode("abcXYZ")) == "ABCXYZ"
    try:
        encode("AB1")
    except ValueError as err:
        assert "'1'" in str(err) and "position 2" in str(err)
    else:
        raise AssertionError("encode accepted a digit")
