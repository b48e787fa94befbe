"""The formation atlas: its grid, the check of its settings, its tables on fits whose law
is known, and (end to end) a tiny grid trained and read by the real workflow."""
import copy
import math
import subprocess

import numpy as np
import pandas as pd
import pytest
import yaml

from helpers import TINY_CONFIG, snakemake_command
from inductionlab.config import ConfigError, validate_experiment
from inductionlab.experiments.atlas.analysis import (CHANGES_COLUMNS, POINTS_COLUMNS, atlas_band,
                                                     atlas_changes, atlas_law, atlas_midpoints,
                                                     atlas_points, atlas_sentences)
from inductionlab.experiments.atlas.settings import (atlas_tasks, check_settings, grid_points,
                                                     model_changes)
from inductionlab.experiments import available

SCHEMA = available()["atlas"].schema
VARIANTS = {"one_layer": {"n_layers": 1, "d_model": 32},
            "one_layer_smeared": {"n_layers": 1, "d_model": 32, "smear_layers": [0]},
            "two_layer": {"n_layers": 2, "d_model": 32}}
CONFIG = {"task": {"vocab_size": 26}, "variants": VARIANTS, "tasks": {}}


def settings(**given):
    """The atlas's settings with the schema's defaults and the check applied (ConfigError)."""
    config = copy.deepcopy(CONFIG) | {"experiments": {"atlas": dict(given)}}
    return validate_experiment(config, "atlas", SCHEMA, check_settings)


def test_the_default_grid_names_every_model():
    grid = grid_points(settings(), CONFIG)
    names = [p.model for p in grid]
    assert len(names) == len(set(names)) == 26
    assert names[:5] == [f"atlas_two_layer_T{t}" for t in (12, 16, 24, 32, 48)]
    assert "atlas_one_layer_T24" in names and "atlas_two_layer_normal" in names
    assert "atlas_two_layer_freeze_layer0" in names
    # a freeze of the only layer does not apply to the smeared one-layer model
    assert "atlas_one_layer_smeared_freeze_layer0" not in names
    assert {p.model for p in grid if p.role == "intervention"} >= {
        f"atlas_one_layer_smeared_clamp{part}_{ref}" for part in "ABC"
        for ref in ("trained", "handbuilt")}
    clamp = next(p for p in grid if p.model == "atlas_two_layer_clampB_trained")
    assert (clamp.reference, clamp.baseline, clamp.context) == ("atlas_two_layer_T24",) * 2 + (24,)
    assert next(p for p in grid if p.model == "atlas_two_layer_clampB_handbuilt").reference is None


def test_the_task_at_each_context_holds_two_copies_of_its_longest_period():
    s = settings()
    assert atlas_tasks(s) == {
        "atlas_periods3to6": {"kind": "variable_period", "min_period": 3, "max_period": 6},
        "atlas_periods3to8": {"kind": "variable_period", "min_period": 3, "max_period": 8}}
    point = next(p for p in grid_points(s, CONFIG) if p.model == "atlas_two_layer_T12")
    assert model_changes(s, point) == {"task": "atlas_periods3to6", "context": 12}
    normal = next(p for p in grid_points(s, CONFIG) if p.model == "atlas_one_layer_smeared_normal")
    assert model_changes(s, normal) == {"task": "atlas_periods3to8", "context": 24,
                                        "embedding_init": "normal"}


def test_the_settings_are_checked_one_line_a_bad_value():
    with pytest.raises(ConfigError) as err:
        settings(contexts=[4, 24], variants=["two_layer", "nope"], control="none_such")
    lines = str(err.value).splitlines()[1:]
    assert lines == [
        "  - experiments.atlas.contexts: 4 tokens do not hold two copies of min_period 3; use at least 6",
        "  - experiments.atlas.variants: 'nope' is not in variants ['one_layer', 'one_layer_smeared', "
        "'two_layer']",
        "  - experiments.atlas.control: 'none_such' is not in variants ['one_layer', "
        "'one_layer_smeared', 'two_layer']"]
    with pytest.raises(ConfigError, match=r"experiments.atlas.interventions\[0\].part: no variant of "
                                          r"\['one_layer_smeared'\] has part 'layer0'"):
        settings(variants=["one_layer_smeared"], interventions=[{"kind": "freeze", "part": "layer0"}])
    with pytest.raises(ConfigError, match=r"interventions\[0\].part: 'A' is no part of a freeze"):
        settings(interventions=[{"kind": "freeze", "part": "A"}])
    with pytest.raises(ConfigError, match="reference_context: 20 is not one of contexts"):
        settings(reference_context=20)
    taken = copy.deepcopy(CONFIG) | {"tasks": {"atlas_periods3to8": {"kind": "variable_period"}},
                                     "experiments": {"atlas": {}}}
    with pytest.raises(ConfigError, match="tasks.atlas_periods3to8: the atlas registers this task"):
        validate_experiment(taken, "atlas", SCHEMA, check_settings)


def _fit_rows(model, seed, content, loss, shape="phase change", formed=1.0):
    base = {"variant": model, "seed": seed, "midpoint_low": math.nan, "midpoint_high": math.nan,
            "span": 2.0, "span_low": 1.5, "span_high": 2.5, "verdict": "holds", "formed": formed,
            "note": ""}
    return [base | {"metric": "induction_content", "midpoint": content, "shape": shape},
            base | {"metric": "loss_pred", "midpoint": loss, "shape": "smooth"}]


def _grid(points):
    return [p.to_dict() | {"task": "atlas_periods3to8"} for p in points]


def test_the_tables_recover_a_quadratic_law_and_a_doubled_midpoint(tmp_path):
    s = settings(contexts=[12, 16, 24, 32], variants=["two_layer"], control=None, inits=["uniform"],
                 interventions=[{"kind": "clamp", "part": "A", "reference": "handbuilt"}])
    grid = grid_points(s, CONFIG)
    rng = np.random.default_rng(0)
    rows = []
    for seed in range(3):
        for t in s["contexts"]:
            content = 0.5 * t ** 2 * math.exp(rng.normal(0, 0.02))
            rows += _fit_rows(f"atlas_two_layer_T{t}", seed, content, content / 3)
        base = next(r["midpoint"] for r in rows if r["variant"] == "atlas_two_layer_T24"
                    and r["seed"] == seed and r["metric"] == "induction_content")
        rows += _fit_rows("atlas_two_layer_clampA_handbuilt", seed, 2 * base, base, shape="smooth")
    behaviour = pd.DataFrame([{"variant": p.model, "seed": seed, "metric": m, "value": v,
                               "low": v - 0.01, "high": v + 0.01, "task": "atlas_periods3to8"}
                              for p in grid for seed in range(3)
                              for m, v in (("acc_pred", 0.9), ("floor_acc_pred", 0.5))])
    points = atlas_points(pd.DataFrame(rows), behaviour, _grid(grid))
    assert list(points.columns) == POINTS_COLUMNS and len(points) == 5 * 3
    assert np.allclose(points["floor_share"], 0.9 / 0.5)
    clamped = points[points["intervention"] == "clampA_handbuilt"]
    assert np.allclose(clamped["content_ratio"], 2.0) and points["content_ratio"].notna().sum() == 3

    law = atlas_law(points, steps=10_000, batch_size=64).set_index(["quantity", "clock"])
    steps = law.loc[("induction_content", "steps")]
    assert steps["slope_low"] < 2 < steps["slope_high"] and steps["verdict"] == "contains"
    assert steps["n_points"] == 12
    assert law.loc[("induction_content", "tokens"), "slope"] == pytest.approx(steps["slope"] + 1)
    assert law.loc[("induction_content", "tokens"), "verdict"] == "not compared"

    words = atlas_sentences(law.reset_index(), ["two_layer"]).iloc[0]
    assert words["variant"] == "atlas_two_layer" and "α = 2.0" in words["text"]
    assert "the interval holds 2" in words["text"] and "on tokens seen" in words["text"]

    from inductionlab.experiments.atlas.plots import midpoints_figure
    from inductionlab.formatting.plots import save

    figure = tmp_path / "atlas.png"
    save(midpoints_figure(atlas_midpoints(points, 10_000, 64), atlas_band(points, 10_000, 64)), figure)
    assert figure.stat().st_size > 10_000

    changes = atlas_changes(points)
    assert list(changes.columns) == CHANGES_COLUMNS and len(changes) == 1
    row = changes.iloc[0]
    assert row["ratio"] == pytest.approx(2.0) and row["shapes"] == "smooth in 3 of 3"
    assert row["loss_ratio"] == pytest.approx(3.0)
    assert row["formed"] == "3 of 3"


def test_a_change_without_a_head_has_no_ratio():
    s = settings(contexts=[24], variants=["two_layer"], control=None, inits=["uniform", "normal"],
                 interventions=[])
    grid = grid_points(s, CONFIG)
    rows = (_fit_rows("atlas_two_layer_T24", 0, 100.0, 50.0)
            + _fit_rows("atlas_two_layer_normal", 0, 300.0, 50.0, formed=0.0))
    points = atlas_points(pd.DataFrame(rows), pd.DataFrame(columns=["variant", "seed", "metric", "value",
                                                                    "low", "high"]), _grid(grid))
    assert math.isnan(points.loc[points["model"] == "atlas_two_layer_normal", "content_ratio"].iloc[0])
    row = atlas_changes(points).iloc[0]
    assert math.isnan(row["ratio"]) and row["formed"] == "0 of 1" and "1 of 1 seeds" in row["note"]


def test_a_held_match_is_named_in_its_row_and_no_other():
    """A clamp of B holds the pattern the content part reads: its row says so."""
    from inductionlab.experiments.atlas.analysis import HELD_MATCH_NOTE

    s = settings(contexts=[24], variants=["two_layer"], control=None, inits=["uniform"],
                 interventions=[{"kind": "clamp", "part": "B", "reference": "handbuilt"},
                                {"kind": "clamp", "part": "C", "reference": "handbuilt"}])
    grid = grid_points(s, CONFIG)
    rows = (_fit_rows("atlas_two_layer_T24", 0, 100.0, 50.0)
            + _fit_rows("atlas_two_layer_clampB_handbuilt", 0, 300.0, 50.0)
            + _fit_rows("atlas_two_layer_clampC_handbuilt", 0, 300.0, 50.0))
    points = atlas_points(pd.DataFrame(rows), pd.DataFrame(columns=["variant", "seed", "metric", "value",
                                                                    "low", "high"]), _grid(grid))
    notes = atlas_changes(points).set_index("intervention")["note"]
    assert notes["clampB_handbuilt"] == HELD_MATCH_NOTE and notes["clampC_handbuilt"] == ""


def test_a_held_pattern_is_timed_by_its_loss_alone():
    """A clamp of B holds an induction pattern from step 0: its content curve is flat at a
    fitted midpoint below 0 and its head counts as formed. It gives no content ratio (not a
    negative one), while its loss, learning 5 times sooner, gives a loss ratio of 0.2."""
    s = settings(contexts=[24], variants=["two_layer"], control=None, inits=["uniform"],
                 interventions=[{"kind": "clamp", "part": "B", "reference": "handbuilt"}])
    grid = grid_points(s, CONFIG)
    rows = []
    for seed in range(3):
        rows += _fit_rows("atlas_two_layer_T24", seed, 1000.0 + seed, 500.0 + 10 * seed)
        rows += _fit_rows("atlas_two_layer_clampB_handbuilt", seed, -0.39, 100.0 + 2 * seed,
                          shape="flat")
    points = atlas_points(pd.DataFrame(rows), pd.DataFrame(columns=["variant", "seed", "metric", "value",
                                                                    "low", "high"]), _grid(grid))
    held = points[points["intervention"] == "clampB_handbuilt"]
    assert held["content_ratio"].isna().all() and (held["formed"] == 1.0).all()
    assert held["content_midpoint"].isna().all() and held["content_span"].isna().all()
    assert (held["content_shape"] == "flat").all()
    assert np.allclose(held["loss_ratio"], 0.2)
    row = atlas_changes(points).iloc[0]
    assert math.isnan(row["ratio"]) and row["loss_ratio"] == pytest.approx(0.2)
    assert row["loss_ratio_low"] == pytest.approx(0.2) == row["loss_ratio_high"] and row["shapes"] == "flat in 3 of 3"


TABLES = ("points", "midpoints", "law", "band", "changes", "sentences")


@pytest.mark.slow
@pytest.mark.e2e
def test_a_tiny_atlas_runs_to_its_tables(tmp_path):
    config = yaml.safe_load(TINY_CONFIG.read_text())
    config.pop("experiments")
    config.update(seeds=[0, 1], variants={"one_layer": {"n_layers": 1}, "two_layer": {"n_layers": 2}})
    config["train"]["steps"] = 40
    config["experiments"] = {"atlas": {
        "contexts": [12, 16, 24], "variants": ["two_layer"], "inits": ["uniform", "normal"],
        "interventions": [{"kind": "clamp", "part": "A", "reference": "trained"},
                          {"kind": "clamp", "part": "C", "reference": "handbuilt"},
                          {"kind": "freeze", "part": "layer0"}]}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    targets = [f"results/tables/atlas_{name}.csv" for name in TABLES]
    figure = "results/figures/study/atlas_midpoints.png"
    run = subprocess.run(snakemake_command(tmp_path, "--cores", "2", *targets, figure),
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    log = (tmp_path / "logs/train/atlas_two_layer_clampA_trained/seed1.log").read_text()
    assert log.strip()
    points = pd.read_csv(tmp_path / targets[0])
    models = ["atlas_two_layer_T12", "atlas_two_layer_T16", "atlas_two_layer_T24",
              "atlas_one_layer_T24", "atlas_two_layer_normal", "atlas_two_layer_clampA_trained",
              "atlas_two_layer_clampC_handbuilt", "atlas_two_layer_freeze_layer0"]
    assert list(points.columns) == POINTS_COLUMNS
    assert list(points["model"].unique()) == models and len(points) == 2 * len(models)
    assert sorted(points["context"].unique()) == [12, 16, 24]
    law = pd.read_csv(tmp_path / targets[2])
    assert set(zip(law["quantity"], law["clock"])) == {
        (q, c) for q in ("induction_content", "loss_pred") for c in ("steps", "tokens")}
    assert law["sentence"].str.len().gt(0).all()
    changes = pd.read_csv(tmp_path / targets[4])
    assert list(changes["model"]) == models[4:]
    assert list(pd.read_csv(tmp_path / targets[5])["variant"]) == ["atlas_two_layer"]
    assert (tmp_path / figure).stat().st_size > 0
    # the trained clamp read the same seed's unclamped model at the reference context
    spec = yaml.safe_load((tmp_path / "results/atlas_two_layer_clampA_trained/seed0/spec.json").read_text())
    assert spec["train"]["intervention"] == {"kind": "clamp", "part": "A", "reference": "trained"}
    assert spec["task"]["seq_len"] == 24
    short = yaml.safe_load((tmp_path / "results/atlas_two_layer_T12/seed0/spec.json").read_text())
    assert (short["task"]["seq_len"], short["task"]["max_period"]) == (12, 6)


def test_the_cost_grows_with_the_context_and_is_printed_as_an_estimate():
    from inductionlab.config import CONFIG_NOTES
    from inductionlab.experiments.atlas.cost import ANALYSES_S, point_seconds

    config = copy.deepcopy(CONFIG) | {"seeds": [0, 1, 2], "train": {"steps": 10_000, "batch_size": 256}}
    s = settings()
    seconds = point_seconds(s, config)
    assert set(seconds) == {p.model for p in grid_points(s, config)}
    train = {m: v - ANALYSES_S for m, v in seconds.items()}
    assert train["atlas_two_layer_T48"] > 2 * train["atlas_two_layer_T24"] > 4 * train["atlas_two_layer_T12"]
    # a clamped model trains uncompiled: dearer than its unclamped twin; a frozen one compiles
    assert train["atlas_two_layer_clampA_trained"] > train["atlas_two_layer_T24"]
    # a clamp to a trained reference runs the reference's forward pass too
    for part in "ABC":
        assert train[f"atlas_two_layer_clamp{part}_trained"] > train[f"atlas_two_layer_clamp{part}_handbuilt"]
    assert train["atlas_two_layer_clampC_trained"] > 2 * train["atlas_two_layer_T24"]
    assert train["atlas_two_layer_freeze_layer0"] == train["atlas_two_layer_T24"]
    assert train["atlas_two_layer_T24"] > train["atlas_one_layer_smeared_T24"]
    lines = CONFIG_NOTES["atlas"](s, config)
    assert "an estimate" in lines[0] and "26 models x 3 seed(s)" in lines[1]
    assert f"{sum(seconds.values()) * 3:,.0f} CPU seconds" in lines[1]


@pytest.mark.parametrize("interventions,says,never", [
    ([{"kind": "clamp", "part": "A", "reference": "handbuilt"}, {"kind": "freeze", "part": "layer0"}],
     "(the previous-token part A clamped to a hand-built solution; layer 0 frozen at its "
     "initialisation;", ["the match B", "trained model"]),
    ([{"kind": "clamp", "part": "C"}], "(the copy C clamped to the same seed's trained model;",
     ["hand-built", "frozen"]),
    ([], "no intervention during training", ["clamped", "frozen"]),
])
def test_the_section_names_the_interventions_it_ran(interventions, says, never):
    from pathlib import Path

    from inductionlab.experiments.atlas.settings import intervention_words
    from inductionlab.report.prose import read_prose

    folder = Path(grid_points.__code__.co_filename).parent
    s = settings(interventions=interventions)
    points = grid_points(s, CONFIG)
    counts = {role: sum(p.role == role for p in points) for role in ("context", "init", "intervention", "control")}
    text = " ".join(read_prose(folder / "prose.yaml", variants=s["variants"], contexts=s["contexts"],
                               reference=24, control=s["control"], inits=s["inits"], counts=counts,
                               n_models=len(points), n_seeds=3, min_period=3, max_period=8,
                               batch_size=256, variant="",
                               interventions=[intervention_words(i) for i in interventions])["text"].split())
    assert says in text, text
    for words in never:
        assert words not in text, text


def test_the_figure_draws_a_change_not_over_hollow_at_the_last_checkpoint():
    import matplotlib

    matplotlib.use("Agg")
    from inductionlab.experiments.atlas.plots import midpoints_figure

    rows = [{"variant": "two_layer", "context": t, "seed": s, "quantity": q, "clock": "steps",
             "midpoint": 100.0 * t, "later_than": math.nan}
            for t in (12, 24, 48) for s in (0, 1) for q in ("induction_content", "loss_pred")]
    frame = pd.DataFrame(rows)
    late = (frame["context"] == 12) & (frame["seed"] == 1) & (frame["quantity"] == "induction_content")
    frame.loc[late, ["midpoint", "later_than"]] = [math.nan, 10_000.0]
    fig = midpoints_figure(frame, frame.iloc[:0].assign(midpoint_low=[], midpoint_high=[]))
    content, loss = fig.axes
    labels = content.get_legend_handles_labels()[1]
    assert "two_layer: not over by the last step (midpoint later)" in labels
    hollow = [c for c in content.collections if len(c.get_offsets()) == 1]
    assert [tuple(c.get_offsets()[0]) for c in hollow] == [(12.0, 10_000.0)]
    assert not any("not over" in label for label in loss.get_legend_handles_labels()[1])
    # one legend, outside the panels, so that it hides no point
    (legend,) = fig.legends
    assert "two_layer: not over by the last step (midpoint later)" in [t.get_text() for t in legend.get_texts()]
    assert content.get_legend() is None and loss.get_legend() is None
