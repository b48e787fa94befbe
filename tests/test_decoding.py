import pytest
import torch

from inductionlab.core.decoding import greedy_complete
from inductionlab.core.decoding import greedy_decode
from inductionlab.core.model import AttentionOnlyTransformer, ModelConfig


def _full_pass_greedy(model, prompts, length):
    """The reference: the whole sequence so far at every step."""
    seq = torch.zeros(len(prompts), length, dtype=torch.long)
    seq[:, :prompts.shape[1]] = prompts
    with torch.no_grad():
        for t in range(prompts.shape[1], length):
            seq[:, t] = model(seq[:, :t])[:, -1].argmax(-1)
    return seq


@pytest.mark.parametrize("model", [
    {"n_layers": 1},
    {"n_layers": 2},
    {"n_layers": 3, "n_heads": 2, "pos_encoding": "standard"},
    {"n_layers": 1, "smear_layers": [0]},
    {"n_layers": 2, "smear_layers": [1], "smear_form": "per_head", "pos_encoding": "learned"},
])
@pytest.mark.parametrize("prompt_len", [1, 6, 12])
def test_decoding_position_by_position_equals_running_the_whole_sequence(model, prompt_len):
    gen = torch.Generator().manual_seed(prompt_len)
    net = AttentionOnlyTransformer(ModelConfig(**model), gen).eval()
    with torch.no_grad():  # weights larger than at initialisation: peaked attention
        for p in net.parameters():
            p.mul_(3.0)
        for alpha in net.smear_alpha.values():  # a different mix at every position
            alpha.copy_(torch.randn(alpha.shape, generator=gen) * 2)
    prompts = torch.randint(0, 26, (64, prompt_len), generator=gen)
    expected = _full_pass_greedy(net, prompts, 24)
    assert torch.equal(greedy_decode(net, prompts, 24), expected)
    assert torch.equal(greedy_complete(net, prompts, 24), expected)
    # and the logits of every step: the decoded sequence run as a whole gives the same
    # next token at each generated position
    assert torch.equal(net(expected[:, :-1])[:, prompt_len - 1:].argmax(-1), expected[:, prompt_len:])


def test_decoding_refuses_a_sequence_longer_than_the_model():
    net = AttentionOnlyTransformer(ModelConfig(seq_len=8))
    with pytest.raises(ValueError, match="seq_len = 8"):
        greedy_decode(net, torch.zeros(2, 3, dtype=torch.long), 9)
