"""The C++ causal attention kernel against the explicit softmax attention, and its build."""
import math

import pytest
import torch

from inductionlab.core import causal_attention as kernel
from inductionlab.core.data import TaskConfig, sample_sequences
from inductionlab.core.metrics import mean_loss
from inductionlab.core.model import ModelConfig, build_model, choose_attention
from inductionlab.core.seeding import generator
from inductionlab.core.compile_policy import loss_function
from inductionlab.core.train import optimizer, train_step

pytestmark = pytest.mark.skipif(not kernel.available(24, 8)[0],
                                reason=f"the attention kernel does not build here: {kernel.available(24, 8)[1]}")


def explicit(q, k, v, scale):
    T = q.shape[2]
    mask = torch.full((T, T), float("-inf"), dtype=q.dtype).triu(1)
    pattern = torch.softmax(q @ k.transpose(-1, -2) * scale + mask, dim=-1)
    return pattern @ v, pattern


def qkv(shape, seed, spread=1.0, grad=False):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(shape, generator=gen) * spread).requires_grad_(grad) for _ in range(3)]


@pytest.mark.parametrize("T,d", [(24, 8), (9, 8), (1, 8), (17, 4), (24, 16), (8, 2)])
def test_forward_and_backward_equal_the_explicit_attention_in_float64(T, d):
    q, k, v = qkv((3, 2, T, d), seed=T * d, grad=True)
    scale = 1 / math.sqrt(d)
    z, pattern = kernel.causal_attention(q, k, v, scale)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    z64, pattern64 = explicit(q64, k64, v64, scale)
    assert torch.allclose(pattern.double(), pattern64, atol=1e-6)
    assert torch.allclose(z.double(), z64, atol=1e-6)
    assert torch.equal(pattern.triu(1), torch.zeros_like(pattern))  # exactly causal
    assert z.transpose(1, 2).is_contiguous()  # position-major: the heads join without a copy
    dz = torch.randn(z.shape, generator=torch.Generator().manual_seed(1))
    grads = torch.autograd.grad(z, (q, k, v), dz)
    raw = kernel.causal_attention_backward(q.detach(), k.detach(), v.detach(), pattern, dz, scale)
    for g, g_raw in zip(grads, raw):
        assert torch.equal(g, g_raw) and g_raw.transpose(1, 2).is_contiguous()
    grads64 = torch.autograd.grad(z64, (q64, k64, v64), dz.double())
    for g, g64, name in zip(grads, grads64, "qkv"):
        assert torch.allclose(g.double(), g64, atol=1e-5), name


def test_queries_of_zero_attend_uniformly_and_average_the_values():
    T, d = 24, 8
    _, k, v = qkv((2, 4, T, d), seed=3)
    z, pattern = kernel.causal_attention(torch.zeros(2, 4, T, d), k, v, 1 / math.sqrt(d))
    counts = torch.arange(1, T + 1, dtype=torch.float32)
    uniform = torch.ones(T, T).tril() / counts[:, None]
    assert torch.allclose(pattern, uniform.expand_as(pattern), atol=1e-7)
    running_mean = v.cumsum(dim=2) / counts[:, None]
    assert torch.allclose(z, running_mean, atol=1e-6)


def test_peaked_scores_neither_overflow_nor_lose_the_maximum():
    q, k, v = qkv((2, 4, 24, 8), seed=5, spread=30.0)  # scores in the hundreds
    z, pattern = kernel.causal_attention(q, k, v, 1.0)
    z_ref, pattern_ref = explicit(q.double(), k.double(), v.double(), 1.0)
    assert torch.isfinite(z).all() and torch.isfinite(pattern).all()
    assert torch.allclose(pattern.double(), pattern_ref, atol=1e-6)
    assert torch.allclose(z.double(), z_ref, atol=1e-4)


def test_a_nan_input_gives_nan_not_a_number_that_hides_it():
    q, k, v = qkv((1, 1, 24, 8), seed=7)
    q[0, 0, 5, 0] = float("nan")
    z, _ = kernel.causal_attention(q, k, v, 0.35)
    assert torch.isnan(z[0, 0, 5]).all() and not torch.isnan(z[0, 0, 4]).any()


@pytest.mark.slow
@pytest.mark.parametrize("model", [{"n_layers": 2}, {"n_layers": 1, "smear_layers": (0,)}])
def test_compiled_training_with_the_kernel_follows_the_explicit_attention(model):
    """The numbers a training run takes: the same losses to 1e-4 over a short run."""
    cfg, task = ModelConfig(**model), TaskConfig()
    losses = {}
    for form, compiled in (("explicit", False), ("kernel", True)):
        m = build_model(cfg, 0)
        m.attention_form = form
        opt = optimizer(m.parameters(), lr=1e-3, weight_decay=1.0)
        fn, gen = loss_function(m, compiled, log=print), generator(0, "batches")
        losses[form] = [train_step(fn(sample_sequences(64, task, gen)), opt).item() for _ in range(40)]
    assert max(abs(a - b) for a, b in zip(losses["kernel"], losses["explicit"])) < 1e-4
    assert losses["kernel"][-1] < losses["kernel"][0] - 0.005  # it did train


def test_a_model_on_the_kernel_gives_the_explicit_logits_and_patterns():
    explicit_model, m = build_model(ModelConfig(n_layers=2), 1), build_model(ModelConfig(n_layers=2), 1)
    assert choose_attention(m, torch.device("cpu")) == "kernel"
    tokens = sample_sequences(4, TaskConfig(), generator(1, "t"))
    with torch.no_grad():  # the analyses' passes: the kernel's patterns
        logits, cache = m.run_with_cache(tokens)
        ref_logits, ref = explicit_model.run_with_cache(tokens)
        assert torch.allclose(m(tokens[:, :13]), explicit_model(tokens[:, :13]), atol=1e-5)
    assert torch.allclose(logits, ref_logits, atol=1e-5)
    for p, p_ref in zip(cache.pattern, ref.pattern):
        assert torch.allclose(p, p_ref, atol=1e-6)
    # a pass that keeps patterns with gradients takes the explicit form: they carry one
    weights = torch.rand(tokens.shape[1], tokens.shape[1], generator=torch.Generator().manual_seed(0))
    for model in (m, explicit_model):
        _, with_grad = model.run_with_cache(tokens)
        (with_grad.pattern[1] * weights).sum().backward()
    assert m.W_Q.grad.abs().max() > 0
    assert torch.allclose(m.W_Q.grad, explicit_model.W_Q.grad, atol=1e-5)
    assert torch.allclose(mean_loss(m(tokens), tokens), mean_loss(ref_logits, tokens), atol=1e-6)


@pytest.mark.parametrize("T,H,d", [(24, 4, 8), (9, 2, 4), (1, 3, 8)])
def test_heads_from_the_table_are_the_index_split_into_heads_and_its_gradient_the_same_bits(T, H, d):
    """Layer 0's gather: the values of ``table[tokens]`` split into heads, and the table's
    gradient equal bit for bit to the index's backward pass (rows added in the same order)."""
    gen = torch.Generator().manual_seed(T * H)
    table = torch.randn(26, 3 * H * d, generator=gen, requires_grad=True)
    tokens = torch.randint(0, 26, (5, T), generator=gen)
    q, k, v = kernel.heads_from_table(table, tokens, H)
    by_index = table[tokens].view(5, T, 3 * H, d).transpose(1, 2).split(H, dim=1)
    for got, want in zip((q, k, v), by_index):
        assert torch.equal(got, want) and got.is_contiguous()
    grads = [torch.randn(q.shape, generator=gen) for _ in range(3)]
    (d_table,) = torch.autograd.grad((q, k, v), table, grads)
    (d_index,) = torch.autograd.grad(by_index, table, grads)
    assert torch.equal(d_table, d_index)
    position_major = [g.transpose(1, 2).contiguous().transpose(1, 2) for g in grads]
    assert torch.equal(kernel.table_from_heads(tokens, *position_major, 26), d_index)
    unused = sorted(set(range(26)) - set(tokens.flatten().tolist()))
    assert (d_table[unused] == 0).all() and d_table.abs().sum() > 0


def test_a_letter_outside_the_table_is_refused():
    table = torch.zeros(26, 96)
    with pytest.raises(IndexError, match="letter 26 at position 3"):
        kernel.heads_from_table(table, torch.tensor([[0, 1, 2, 26]]), 4)
    with pytest.raises(ValueError, match="int64"):
        kernel.heads_from_table(table, torch.zeros(1, 4, dtype=torch.int32), 4)


def test_the_kernel_for_a_head_size_it_is_not_written_for_is_refused():
    ok, why = kernel.available(24, 6)
    assert not ok and "power of two" in why
    m = build_model(ModelConfig(d_model=24, n_heads=4), 0)
    said = []
    assert choose_attention(m, torch.device("cpu"), log=said.append) == "explicit"
    assert "not available" in said[0]


def test_a_failed_build_leaves_nothing_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CXX", "false")  # a "compiler" that always fails
    with pytest.raises(kernel.KernelUnavailable, match="failed"):
        kernel.build(24, 8)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_a_built_library_is_reused_not_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    first = kernel.build(12, 4)
    built = first.stat().st_mtime_ns
    assert kernel.build(12, 4) == first and first.stat().st_mtime_ns == built
    assert first.parent == tmp_path / "inductionlab"


def test_compiled_graphs_are_keyed_by_the_operators_source(tmp_path, monkeypatch):
    """Inductor's cache knows an operator only by its name: a graph compiled against an
    older kernel must not be found once the kernel changes."""
    from inductionlab.core import compile_policy

    with torch.compiler.config.patch(cache_key_tag="theirs"):
        first = compile_policy.tag_cache_keys()
        assert first.startswith("theirs,") and first.endswith(kernel.source_tag())
        assert compile_policy.tag_cache_keys() == first  # set twice, the tag does not grow
        changed = tmp_path / "causal_attention.cc"
        changed.write_text(kernel.SOURCE.read_text() + "\n// another kernel\n")
        monkeypatch.setattr(kernel, "SOURCE", changed)
        second = compile_policy.tag_cache_keys()
        assert second.startswith("theirs,") and second != first and second.count(",") == 1
    assert torch.compiler.config.cache_key_tag != second  # the patch is undone


@pytest.mark.skipif(__import__("platform").machine() not in ("x86_64", "AMD64"),
                    reason="inductor probes vector instruction sets by CPU flags on x86 only")
def test_the_vector_isa_probe_is_run_once_a_machine_and_trusted_only_when_all_passed(tmp_path, monkeypatch):
    """Inductor's probe of AVX2/AVX-512 (a test library built and loaded in a fresh
    interpreter) costs every compiling process; once it has passed here, later processes
    take the CPU's flags, which must pick what the probe picked."""
    from torch._inductor import config, cpu_vec_isa

    from inductionlab.core import compile_policy

    marker = tmp_path / "vector-isa.ok"
    monkeypatch.setattr(compile_policy, "_isa_marker", lambda: marker)
    with config.patch({"cpp.vec_isa_ok": None}):
        probed = [str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()]
        cpu_vec_isa.valid_vec_isa_list.cache_clear()
        assert compile_policy.settle_vector_isa() and config.cpp.vec_isa_ok is True
        assert marker.read_text().split("\n")[:-1] == probed  # recorded: every set passed
        cpu_vec_isa.valid_vec_isa_list.cache_clear()
        assert [str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()] == probed  # the same pick

    with config.patch({"cpp.vec_isa_ok": None}):  # the marker found: no probe
        monkeypatch.setattr(cpu_vec_isa, "valid_vec_isa_list", lambda: pytest.fail("probed again"))
        assert compile_policy.settle_vector_isa() and config.cpp.vec_isa_ok is True
    monkeypatch.undo()

    marker = tmp_path / "another-machine.ok"
    monkeypatch.setattr(compile_policy, "_isa_marker", lambda: marker)
    # the probe rejects a set the CPU's flags name
    failing = lambda: probed if config.cpp.vec_isa_ok else probed[1:]  # noqa: E731
    failing.cache_clear = lambda: None
    monkeypatch.setattr(cpu_vec_isa, "valid_vec_isa_list", failing)
    with config.patch({"cpp.vec_isa_ok": None}):
        assert not compile_policy.settle_vector_isa() and config.cpp.vec_isa_ok is None
    assert not marker.exists()
    with config.patch({"cpp.vec_isa_ok": False}):  # a user's setting stands
        assert not compile_policy.settle_vector_isa() and config.cpp.vec_isa_ok is False
