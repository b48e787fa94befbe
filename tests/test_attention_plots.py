"""Prompt attention (teacher-forced), the attention figures and the all-seeds grid."""
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch

from figurecheck import legibility_problems
from handbuilt import ShiftCopyModel
from inductionlab.formatting import plots
from inductionlab.stages.behaviour import attention_plots as ap
from inductionlab.formatting.figure_registry import write_figure
from inductionlab.stages.behaviour.attention import offset_profile
from inductionlab.stages.behaviour.behaviour import check_prompt, expected_completion, prompt_attention
from inductionlab.core.decoding import greedy_complete
from inductionlab.core.data import TaskConfig, decode, encode
from inductionlab.core.model import ModelConfig, build_model

TASK = TaskConfig()
PROMPTS = ["ABCDEF", "ABCDEFABCDEF", "AAABBBAAABBB", "ABCDEFXYZRST"]  # the last: no correct completion


def greedy_of(model, prompts):
    return [decode(greedy_complete(model, check_prompt(p, TASK)[None], TASK.seq_len)[0, len(p):])
            for p in prompts]


def legible(fig, **kwargs):
    """figurecheck.legibility_problems, and independently: every text ≥ 7 pt, figure ≤ 7 x 9 in."""
    from matplotlib.text import Text

    problems = legibility_problems(fig, **kwargs)
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert min(sizes) >= 7, min(sizes)
    w, h = fig.get_size_inches()
    assert w <= 7.0 and h <= 9.0
    return problems


def check_png(path):
    width, height, dpi = plots.png_size(path)
    assert dpi is not None and dpi > 0, f"{path}: no dpi stored"
    assert width <= 7.0 + 1e-6 and height <= 9.0 + 1e-6, (path, width, height)


# ---------------------------------------------------------------- teacher-forced prompts


@pytest.mark.parametrize("n_layers", [1, 2])
def test_teacher_forced_attention_is_the_model_pattern_on_the_correct_sequence(n_layers):
    model = build_model(ModelConfig(n_layers=n_layers), 3)
    greedy = greedy_of(model, PROMPTS)
    arrays = prompt_attention(model, PROMPTS, greedy, TASK)
    assert list(arrays["prompts"]) == PROMPTS
    assert arrays["prompt_length"].tolist() == [6, 12, 12, 12]
    assert arrays["prompt_teacher_forced"].tolist() == [True, True, True, False]
    for k, prompt in enumerate(PROMPTS):
        expected = expected_completion(prompt, TASK)
        sequence = prompt + (expected if expected is not None else greedy[k])
        tokens = encode(sequence)
        assert arrays["prompt_tokens"][k].tolist() == tokens.tolist()
        assert arrays["prompt_greedy_tokens"][k].tolist() == encode(prompt + greedy[k]).tolist()
        with torch.no_grad():
            _, cache = model.run_with_cache(tokens[None])
        for l in range(n_layers):
            assert arrays[f"prompt_pattern_L{l}"].shape == (len(PROMPTS), 4, 24, 24)
            np.testing.assert_allclose(arrays[f"prompt_pattern_L{l}"][k], cache.pattern[l][0].numpy(),
                                       atol=1e-6)


def test_teacher_forcing_uses_the_correct_letters_where_greedy_goes_wrong():
    # a head that copies the previous token: greedy from ABCDEF repeats F forever, the
    # correct sequence continues ABCDEF; the stored pattern is on the correct one
    model = ShiftCopyModel(shift=1)
    greedy = greedy_of(model, ["ABCDEF"])
    assert greedy[0] != expected_completion("ABCDEF", TASK)
    arrays = prompt_attention(model, ["ABCDEF"], greedy, TASK)
    assert decode(arrays["prompt_tokens"][0]) == "ABCDEF" * 4
    assert decode(arrays["prompt_greedy_tokens"][0]) == "ABCDEF" + greedy[0]
    assert bool(arrays["prompt_teacher_forced"][0])


def test_prompt_attention_checks_its_inputs():
    model = build_model(ModelConfig(n_layers=1), 0)
    with pytest.raises(ValueError, match="greedy completions"):
        prompt_attention(model, ["ABCDEF"], [], TASK)


# ---------------------------------------------------------------- one model's figures


def attention_npz(path, n_layers, seed=0):
    """attention.npz as the behaviour stage writes it, for a random model."""
    model = build_model(ModelConfig(n_layers=n_layers), seed)
    arrays = prompt_attention(model, PROMPTS, greedy_of(model, PROMPTS), TASK)
    with torch.no_grad():
        _, cache = model.run_with_cache(torch.randint(0, 26, (32, 24), generator=torch.Generator().manual_seed(seed)))
    for l, pattern in enumerate(cache.pattern):
        mean = pattern.mean(0)
        arrays[f"mean_pattern_L{l}"] = mean.numpy()
        arrays[f"offset_profile_L{l}"] = offset_profile(mean).numpy()
    np.savez(path, **arrays)
    return arrays


@pytest.mark.slow
@pytest.mark.parametrize("n_layers", [1, 2])
def test_attention_figures_are_legible_and_name_their_sequence(tmp_path, n_layers):
    arrays = attention_npz(tmp_path / "attention.npz", n_layers)
    written = ap.write_attention_figures(tmp_path / "attention.npz", tmp_path / "out", "m seed 0:")
    names = {p.name for p in written}
    assert {"mean.png", "offset_profile.png"} <= names
    for k, prompt in enumerate(PROMPTS):
        assert f"prompt{k}_{prompt}.png" in names  # the last layer
        assert (f"prompt{k}_{prompt}_L0.png" in names) == (n_layers == 2)
    for path in written:
        check_png(path)
    # the figures themselves
    means = [arrays[f"mean_pattern_L{l}"] for l in range(n_layers)]
    assert legible(ap.attention_grid(means, "m seed 0: mean")) == []
    assert legible(ap.offset_profiles([arrays[f"offset_profile_L{l}"] for l in range(n_layers)],
                                      "m seed 0: by offset")) == []
    for k, forced in enumerate(arrays["prompt_teacher_forced"]):
        fig = ap.prompt_figure(arrays[f"prompt_pattern_L{n_layers - 1}"][k], arrays["prompt_tokens"][k],
                               int(arrays["prompt_length"][k]), n_layers - 1, "m seed 0:", bool(forced))
        assert legible(fig) == []
        title = fig._suptitle.get_text().replace("\n", " ")
        if forced:
            assert "teacher-forced on the correct sequence" in title
        else:
            assert "greedy completion" in title and "out of distribution" in title
        ax = fig.axes[0]
        letters = [t.get_text() for t in ax.get_xticklabels()]
        assert "".join(letters) == decode(arrays["prompt_tokens"][k])  # every position, its letter
        assert min(t.get_fontsize() for t in ax.get_xticklabels()) >= 7
        P = int(arrays["prompt_length"][k])
        lines = [ln.get_xdata()[0] for ln in ax.get_lines() if ln.get_linestyle() == "--"]
        assert P - 0.5 in lines  # the end of the prompt is marked
        plt.close(fig)


# ---------------------------------------------------------------- across seeds


def seed_inputs(tmp_path, n_layers, seeds=(0, 1), smear_layers=()):
    rows = []
    inputs = []
    for seed in seeds:
        folder = tmp_path / "m" / f"seed{seed}"
        folder.mkdir(parents=True)
        means = {f"mean_pattern_L{l}": np.full((4, 24, 24), 0.01 * (l + 1)) for l in range(n_layers)}
        np.savez(folder / "attention.npz", **means)
        inputs.append(folder / "attention.npz")
        for l in range(n_layers):
            for h in range(4):
                # head 3 has the highest induction score of every layer, head 1 the highest
                # previous-token score
                rows.append({"variant": "m", "seed": seed, "layer": l, "head": h,
                             "induction": [0.1, 0.2, 0.3, 0.9][h],
                             "previous_token": [0.2, 0.95, 0.1, 0.05][h],
                             "local": 0.3, "copying": 0.0,
                             "roles": "induction+copying" if h == 3 else "none"})
        rows.append({"variant": "other", "seed": seed, "layer": 0, "head": 0, "induction": 9.0,
                     "previous_token": 9.0, "local": 0, "copying": 0, "roles": "none"})
    pd.DataFrame(rows).to_csv(tmp_path / "head_scores.csv", index=False)
    (tmp_path / "spec.json").write_text(json.dumps({"model": {"n_layers": n_layers,
                                                              "smear_layers": list(smear_layers)}}))
    return inputs + [tmp_path / "head_scores.csv", tmp_path / "spec.json"]


def named_inputs(inputs):
    """seed_inputs' files by the names the attention_seeds figure gives them."""
    return {"attention": inputs[:-2], "head_scores": inputs[-2], "spec": inputs[-1]}


def panel_titles(fig):
    return [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")]


def test_head_with_the_highest_induction_score_comes_first(tmp_path):
    inputs = seed_inputs(tmp_path, n_layers=2)
    scores = pd.read_csv(inputs[-2])
    means = {s: [np.load(inputs[i])[f"mean_pattern_L{l}"] for l in range(2)] for i, s in enumerate((0, 1))}
    fig = ap.attention_seeds_figure(means, scores[scores["variant"] == "m"], "m")
    titles = panel_titles(fig)
    assert len(titles) == 2 * 8
    for r, seed in enumerate((0, 1)):
        row = [t.split("\n")[0] for t in titles[8 * r:8 * r + 8]]
        # layer 0 of a 2-layer model: previous-token score (head 1 first); layer 1: induction
        assert row[:4] == [f"s{seed} L0H{h}" for h in (1, 0, 2, 3)]
        assert row[4:] == [f"s{seed} L1H{h}" for h in (3, 2, 1, 0)]
    assert titles[4].split("\n")[1] == "ind 0.90"
    assert "ind+copy" in titles[4]
    assert "induction" in fig._suptitle.get_text().replace("\n", " ")
    assert legible(fig) == []
    plt.close(fig)


def test_smeared_one_layer_model_is_ordered_by_induction(tmp_path):
    inputs = seed_inputs(tmp_path, n_layers=1, smear_layers=[0])
    assert ap.order_heads(pd.read_csv(inputs[-2]).query("variant == 'm' and seed == 0"), 1, [0]) == \
        [(0, [3, 2, 1, 0], "induction")]
    # without smeared keys layer 0 cannot form an induction head: previous-token order
    assert ap.order_heads(pd.read_csv(inputs[-2]).query("variant == 'm' and seed == 0"), 1, []) == \
        [(0, [1, 0, 2, 3], "previous_token")]
    out = tmp_path / "attention_seeds.png"
    write_figure("attention_seeds", "m", named_inputs(inputs), out)
    check_png(out)
    scores = pd.read_csv(inputs[-2]).query("variant == 'm'")
    means = {s: [np.load(inputs[i])["mean_pattern_L0"]] for i, s in enumerate((0, 1))}
    fig = ap.attention_seeds_figure(means, scores, "m", smear_layers=[0])
    assert panel_titles(fig)[0].startswith("s0 L0H3 · ind 0.90")
    assert legible(fig) == []
    plt.close(fig)


@pytest.mark.slow
@pytest.mark.parametrize("n_layers", [1, 2, 3])
def test_five_seeds_fit_the_page(tmp_path, n_layers):
    inputs = seed_inputs(tmp_path, n_layers=n_layers, seeds=range(5))
    out = tmp_path / "attention_seeds.png"
    write_figure("attention_seeds", "m", named_inputs(inputs), out)
    check_png(out)
    scores = pd.read_csv(inputs[-2]).query("variant == 'm'")
    means = {s: [np.load(inputs[s])[f"mean_pattern_L{l}"] for l in range(n_layers)] for s in range(5)}
    fig = ap.attention_seeds_figure(means, scores, "m")
    assert legible(fig) == []
    plt.close(fig)


def test_panel_titles_fit_narrow_panels():
    assert ap.panel_title(2, 1, 3, "induction", 0.612, "induction+copying") == "s2 L1H3 · ind 0.61\nind+copy"
    assert ap.panel_title(2, 1, 3, "induction", 0.612, "previous_token+local+anti_copying", 8) == \
        "s2 L1H3\nind 0.61\nprev+\nlocal+\nanti-copy"
    assert ap.panel_title(0, 0, 1, "previous_token", 0.5, "none").endswith("prev 0.50\nno role")


def test_missing_seed_in_head_scores_is_named(tmp_path):
    inputs = seed_inputs(tmp_path, n_layers=1)
    scores = pd.read_csv(inputs[-2]).query("variant == 'm' and seed == 0")
    means = {s: [np.load(inputs[i])["mean_pattern_L0"]] for i, s in enumerate((0, 1))}
    with pytest.raises(ValueError, match="seed 1"):
        ap.attention_seeds_figure(means, scores, "m")
