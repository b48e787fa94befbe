"""The offset-profile figure: heatmaps of every term's self-logit effect by offset, and
the group sums across seeds, on synthetic tables shaped like offset_profile.csv."""
import itertools
import zlib

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib import pyplot as plt

from figurecheck import legibility_problems
from inductionlab.formatting.figure_registry import write_figure
from inductionlab.stages.offsets import plots as op
from inductionlab.formatting.plots import DPI, MAX_HEIGHT_IN, MAX_WIDTH_IN, png_size, save

T = 24
PEAK = 5  # the induction head copies the letter 5 back (the next letter's nearest copy)


def _roles(seed: int, n_layers: int, n_heads: int) -> dict:
    """(layer, head) -> roles, with different head indices in different seeds: the last
    layer has an induction head (copying, peak at k=5) and an anti-copying head; layer 0
    a copying previous-token head."""
    last = n_layers - 1
    roles = {(l, h): "" for l in range(n_layers) for h in range(n_heads)}
    roles[0, (seed + 1) % n_heads] = "previous_token+copying" if n_layers > 1 else "copying"
    roles[last, seed % n_heads] = ("induction+prefix_matching+copying" if n_layers > 1
                                   else "positional_induction+copying")
    roles[last, (seed + 2) % n_heads] = "anti_copying"
    return roles


def _profile(role: str, hops: int) -> np.ndarray:
    k = np.arange(T)
    scale = 0.5 ** (hops - 1)
    if "induction" in role:
        return scale * (2.0 * np.exp(-(k - PEAK) ** 2) + 0.5 * np.exp(-(k - 11) ** 2))
    if "previous_token" in role:
        return scale * 1.0 * np.exp(-(k - 1) ** 2)
    if "anti_copying" in role:
        return -scale * 0.8 * np.exp(-(k - PEAK) ** 2 / 2)
    if "copying" in role:
        return scale * 0.6 * np.exp(-k / 3)
    return scale * 0.05 * np.cos(k)


def synthetic_frame(n_layers=2, seeds=(0, 1), n_heads=4, variant="two_layer", groups=True):
    """An offset_profile table of one model: every path up to ``n_layers`` heads long
    (layer 0 ... last), the groups, both samples; plus the two ``*_of_next`` rows."""
    rows = []

    def add(seed, component, kind, layer, head, role, values, sample):
        for k, v in enumerate(values):
            v = float(v)
            rows.append({"variant": variant, "seed": seed, "component": component, "kind": kind,
                         "layer": layer, "head": head, "role": role, "sample": sample,
                         "source": "offset", "offset": k, "value": v, "low": v - 0.05,
                         "high": v + 0.05, "n": 100 * (T - k)})

    for seed in seeds:
        roles = _roles(seed, n_layers, n_heads)
        for sample in ("task", "control"):
            damp = (1.0 if sample == "task" else 0.3) * (1 + 0.15 * seed)
            paths = {"direct": (-1, -1, "", 0.3 * damp * (np.arange(T) == 0))}
            for hops in range(1, n_layers + 1):
                for layers in itertools.combinations(range(n_layers), hops):
                    for heads in itertools.product(range(n_heads), repeat=hops):
                        chain = list(zip(layers, heads))
                        name = ">".join(f"L{l}H{h}" for l, h in chain)
                        role = roles[chain[-1]]
                        rng = np.random.default_rng(zlib.crc32(f"{seed} {name} {sample}".encode()))
                        paths[name] = (chain[-1][0], chain[-1][1], role,
                                       damp * _profile(role, hops) + rng.normal(0, 0.01, T))
            for name, (layer, head, role, values) in paths.items():
                add(seed, name, "path", layer, head, role, values, sample)
            if groups:
                sums = {"all": [n for n in paths], "heads": [n for n in paths if n != "direct"]}
                for l in range(n_layers):
                    sums[f"L{l}"] = [n for n, p in paths.items() if p[0] == l]
                    if l >= 1:
                        sums[f"L{l}:embedding"] = [n for n, p in paths.items() if p[0] == l and ">" not in n]
                        sums[f"L{l}:composed"] = [n for n, p in paths.items() if p[0] == l and ">" in n]
                for role in ("copying", "anti_copying"):
                    sums[f"role:{role}"] = [n for n, p in paths.items()
                                            if role in p[2].split("+")]
                sums["role:anti_copying+direct"] = ["direct"] + sums["role:anti_copying"]
                for name, members in sums.items():
                    add(seed, name, "group", -1, -1, "", sum(paths[n][3] for n in members), sample)
            for source in ("first_copy_of_next", "nearest_copy_of_next"):
                rows.append({"variant": variant, "seed": seed, "component": "all", "kind": "group",
                             "layer": -1, "head": -1, "role": "", "sample": sample,
                             "source": source, "offset": -1, "value": 9.0, "low": 8.0,
                             "high": 10.0, "n": 50})
    return pd.DataFrame(rows)


def _heatmap(fig):
    return fig.axes[0]


def _labels(fig):
    return [t.get_text() for t in _heatmap(fig).get_yticklabels()]


def _assert_order(fig, frame):
    """direct first; then by the last head's layer; within a layer copying heads before
    anti-copying heads before the others."""
    labels = _labels(fig)
    assert labels[0] == "direct"
    seed = frame["seed"].min()
    role = (frame[(frame["seed"] == seed) & (frame["kind"] == "path")]
            .groupby("component")["role"].first().fillna("").to_dict())
    keys = []
    for label in labels[1:]:
        component = label.split()[0]
        roles = str(role[component]).split("+")
        rank = 0 if "copying" in roles else 1 if "anti_copying" in roles else 2
        keys.append((op.path_heads(component)[-1][0], rank))
    assert keys == sorted(keys), labels


def _assert_legible(fig, tmp_path=None, name=""):
    """No legibility problem; with ``tmp_path``, saved as a print-sized PNG (slower)."""
    problems = legibility_problems(fig)
    assert not problems, "\n".join(problems)
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip()]
    assert min(sizes) >= 7
    if tmp_path is None:
        return
    save(fig, tmp_path / f"{name}.png")
    assert (tmp_path / f"{name}.png").exists()
    width, height, dpi = png_size(tmp_path / f"{name}.png")
    assert dpi == pytest.approx(DPI, abs=0.5)
    assert width <= MAX_WIDTH_IN + 0.01 and height <= MAX_HEIGHT_IN + 0.01


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_one_layer_rows_in_order_and_colour_limits_symmetric(tmp_path):
    frame = synthetic_frame(n_layers=1, variant="one_layer")
    fig = op.offset_profile_figure(frame, "one_layer")
    # seed 0: L0H0 positional induction (copying), L0H1 copying, L0H2 anti-copying, L0H3 none
    assert _labels(fig) == ["direct", "L0H0 positional induction", "L0H1 copying", "L0H2 anti-copying",
                            "L0H3"]
    _assert_order(fig, frame)
    task, control = fig.axes[0].images[0], fig.axes[1].images[0]
    low, high = task.get_clim()
    assert low == pytest.approx(-high) and high > 0
    assert control.get_clim() == task.get_clim()  # one colour scale for both samples
    shown = frame[(frame["seed"] == 0) & (frame["kind"] == "path") & (frame["source"] == "offset")]
    assert high == pytest.approx(shown["value"].abs().max())
    # the induction head's row peaks at k = 5 (the task sample)
    grid = np.asarray(task.get_array())
    assert int(np.argmax(grid[1])) == PEAK
    assert fig._suptitle.get_text() == "one_layer: offset profile"
    assert fig.axes[0].get_title() == "task sample (seed 0)"
    _assert_legible(fig, tmp_path, "one_layer")


def test_two_layers_copying_before_anti_copying_within_each_layer(tmp_path):
    frame = synthetic_frame(n_layers=2)
    fig = op.offset_profile_figure(frame, "two_layer")
    labels = _labels(fig)
    _assert_order(fig, frame)
    # seed 0's layer-1 induction head L1H0: its own term, then the composed ones
    first_l1 = next(i for i, label in enumerate(labels) if label.split()[0].endswith("L1H0"))
    assert labels[first_l1] == "L1H0 induction"
    assert labels[first_l1 + 1] == "L0H0>L1H0 induction"
    assert labels.index("L1H2 anti-copying") > labels.index("L0H3>L1H0 induction")
    assert "−" in fig.axes[0].get_xlabel()  # a true minus sign
    low, high = fig.axes[0].images[0].get_clim()
    assert low == pytest.approx(-high)
    # the group panels: one line per group, drawn with a band; the "*_of_next" rows ignored
    bottom = fig.axes[3:]
    assert [ax.get_title() for ax in bottom] == ["by layer of the last head",
                                                 "embedding vs composed terms",
                                                 "by OV role of the last head"]
    names = [t.get_text() for t in fig.subfigs[1].legends[0].get_texts() if t.get_text()]
    assert names == ["all terms", "layer 0 heads", "layer 1 heads", "layer 1: from the embedding",
                     "layer 1: through earlier heads", "copying heads", "anti-copying heads",
                     "anti-copying heads + direct path"]
    assert all(ax.get_ylim()[1] < 9 for ax in bottom)
    assert all(len(ax.collections) == len(ax.get_lines()) - 1 for ax in bottom)  # bands; 0 line
    _assert_legible(fig, tmp_path, "two_layer")


def test_three_layers_show_the_largest_24_paths(tmp_path):
    frame = synthetic_frame(n_layers=3, seeds=(3, 1), variant="three_layer")
    fig = op.offset_profile_figure(frame, "three_layer")
    labels = _labels(fig)
    assert len(labels) == 1 + op.MAX_PATH_ROWS
    n_paths = frame[(frame["seed"] == 1) & (frame["kind"] == "path")]["component"].nunique() - 1
    title = fig.axes[0].get_title().replace("\n", " ")
    assert title.startswith("task sample (seed 1)") and f"24 of {n_paths} paths" in title
    _assert_order(fig, frame[frame["seed"] == 1])
    _assert_legible(fig)  # the longest row labels


def test_single_seed_and_missing_groups(tmp_path):
    frame = synthetic_frame(n_layers=2, seeds=(7,), groups=False)
    fig = op.offset_profile_figure(frame, "two_layer")
    assert _labels(fig)[0] == "direct"
    heading = fig.subfigs[1]._suptitle.get_text().replace("\n", " ")
    assert "summed from the path rows" in heading and "1 seed" in heading
    names = [t.get_text() for t in fig.subfigs[1].legends[0].get_texts() if t.get_text()]
    assert "layer 1: through earlier heads" in names and "anti-copying heads" in names
    # only the direct path and one head, no groups, no control sample
    small = synthetic_frame(n_layers=1, seeds=(0,), n_heads=1, groups=False)
    small = small[small["sample"] == "task"]
    fig = op.offset_profile_figure(small, "tiny")
    assert _labels(fig) == ["direct", "L0H0 anti-copying"]
    assert "not recorded" in fig.axes[1].get_title()
    _assert_legible(fig)


def test_derived_groups_are_the_sums_of_their_paths():
    frame = synthetic_frame(n_layers=2, seeds=(0,))
    task = frame[(frame["sample"] == "task") & (frame["source"] == "offset")]
    derived = op.derived_groups(task).set_index(["component", "offset"])["value"]
    given = task[task["kind"] == "group"].set_index(["component", "offset"])["value"]
    for name in ("all", "L0", "L1", "L1:embedding", "L1:composed", "role:copying",
                 "role:anti_copying"):
        np.testing.assert_allclose(derived[name].sort_index(), given[name].sort_index(), atol=1e-9)


def test_registered_figure_reads_the_aggregated_table(tmp_path):
    both = pd.concat([synthetic_frame(n_layers=1, n_heads=2, variant="one_layer_smeared"),
                      synthetic_frame(n_layers=1, n_heads=2, variant="one_layer")],
                     ignore_index=True)
    both.to_csv(tmp_path / "offset_profile.csv", index=False)
    out = tmp_path / "offset_profile.png"
    write_figure("offset_profile", "one_layer_smeared", {"offset_profile": tmp_path / "offset_profile.csv"},
                 out)
    width, height, dpi = png_size(out)
    assert width <= MAX_WIDTH_IN + 0.01 and height <= MAX_HEIGHT_IN + 0.01


def test_path_rows_are_named_by_their_last_heads_roles_from_the_stacked_table():
    """The offsets stage names a path by the roles the stacked head_scores table gives its
    last head (the rule applied once, where head scores are stacked), for its own model and
    seed only; the figure draws those names as they are."""
    from inductionlab.stages.offsets.offset_attribution import roles_by_head

    scores = pd.DataFrame({"variant": ["m", "m", "m", "other"], "seed": [0, 0, 1, 0],
                           "layer": 0, "head": [0, 1, 0, 0],
                           "roles": ["induction+copying", "none", "previous_token", "local"]})
    assert roles_by_head(scores, "m", 0) == {(0, 0): "induction+copying"}
    assert roles_by_head(scores, "m", 1) == {(0, 0): "previous_token"}
    with pytest.raises(ValueError, match="no row of m seed 2"):
        roles_by_head(scores, "m", 2)
    assert [op.row_label(c, r) for c, r in zip(["L0H0", "L0H1", "L0H0"],
                                               ["induction+copying", "", "previous_token"])] == [
        "L0H0 induction", "L0H1", "L0H0 previous token"]
