"""Stacking per-model tables and summarising them across seeds, on hand-made frames."""
import math

import numpy as np
import pandas as pd
import pytest

from inductionlab.stages.aggregate import aggregate, key_columns, stack, summarise


def _model(variant, seed, **columns):
    n = len(next(iter(columns.values())))
    return pd.DataFrame({"variant": [variant] * n, "seed": [seed] * n, **columns})


def _heads(variant, seed, induction, local, roles):
    return _model(variant, seed, layer=[0, 0], head=[0, 1], induction=induction, local=local,
                  roles=roles)


def _row(summary, **where):
    rows = summary
    for column, value in where.items():
        rows = rows[rows[column] == value]
    assert len(rows) == 1, (where, rows)
    return rows.iloc[0]


@pytest.fixture
def heads():
    return stack([
        _heads("a", 0, [1.0, 0.1], [0.5, 0.9], ["induction", "local"]),
        _heads("a", 1, [3.0, 0.2], [0.5, 0.7], ["induction", "local"]),
        _heads("a", 2, [5.0, 0.6], [0.5, 0.8], ["local", "local"]),
        _heads("b", 0, [2.0, 0.0], [0.1, 0.1], ["none", "none"]),
    ])


def test_stack_keeps_every_row(heads):
    assert len(heads) == 8
    assert heads["seed"].tolist() == [0, 0, 1, 1, 2, 2, 0, 0]
    assert heads["induction"].dtype == float


def test_summary_has_mean_std_min_max_per_variant_key_and_metric(heads):
    summary = summarise(heads, "head_scores")
    assert list(summary.columns) == ["variant", "layer", "head", "metric", "n", "mean", "std",
                                     "min", "max"]
    # 2 variants x 2 heads x 2 metrics
    assert len(summary) == 8
    row = _row(summary, variant="a", layer=0, head=0, metric="induction")
    assert (row["n"], row["mean"], row["min"], row["max"]) == (3, 3.0, 1.0, 5.0)
    assert row["std"] == pytest.approx(2.0)  # sample std (ddof=1) of 1, 3, 5; ddof=0 is 1.633
    row = _row(summary, variant="a", layer=0, head=1, metric="induction")
    assert row["mean"] == pytest.approx(0.3)
    assert row["std"] == pytest.approx(np.std([0.1, 0.2, 0.6], ddof=1))
    row = _row(summary, variant="a", layer=0, head=0, metric="local")
    assert (row["mean"], row["std"], row["min"], row["max"]) == (0.5, 0.0, 0.5, 0.5)


def test_one_seed_has_nan_std(heads):
    row = _row(summarise(heads, "head_scores"), variant="b", layer=0, head=0, metric="induction")
    assert row["n"] == 1 and row["mean"] == 2.0 and row["min"] == 2.0 and row["max"] == 2.0
    assert math.isnan(row["std"])


def test_declared_keys_leave_other_columns_out(heads):
    """head_scores: the roles (a string that differs between seeds) are no key and no metric."""
    assert key_columns(heads, "head_scores") == ["layer", "head"]
    summary = summarise(heads, "head_scores")
    assert "roles" not in summary.columns
    assert set(summary["metric"]) == {"induction", "local"}
    # inferred instead, the roles would split the rows of a head by seed
    inferred = summarise(heads, "not_a_declared_table")
    assert "roles" in inferred.columns
    assert _row(inferred, variant="a", layer=0, head=0, metric="induction", roles="induction")["n"] == 2
    assert _row(inferred, variant="a", layer=0, head=0, metric="induction", roles="local")["n"] == 1


def test_inferred_keys_are_the_non_float_columns():
    frame = _model("a", 0, circuit=["ov", "qk"], layer=[0, 0], flag=[True, False],
                   positivity=[0.5, -0.5])
    assert key_columns(frame) == ["circuit", "layer", "flag"]
    summary = summarise(stack([frame, frame.assign(seed=1, positivity=[0.7, -0.1])]))
    row = _row(summary, circuit="ov", metric="positivity")
    assert (row["n"], row["mean"], row["min"], row["max"]) == (2, pytest.approx(0.6), 0.5, 0.7)


def test_declared_float_keys_are_not_metrics():
    """Read from CSV, an integer key with gaps (the ablations' layer) is a float column."""
    rows = dict(ablation=["baseline", "zero_heads_L0H0"], kind=["baseline", "zero_heads"],
                layer=[np.nan, 0.0], head=[np.nan, 0.0], status=["ok", "ok"])
    long = stack([_model("a", 0, **rows, loss_all=[1.0, 2.0]),
                  _model("a", 1, **rows, loss_all=[1.5, 3.0])])
    summary = summarise(long, "ablations")
    assert set(summary["metric"]) == {"loss_all"}
    assert len(summary) == 2
    baseline = _row(summary, ablation="baseline")
    assert math.isnan(baseline["layer"])  # a missing key stays a group of its own
    assert baseline["mean"] == pytest.approx(1.25)
    assert _row(summary, ablation="zero_heads_L0H0")["mean"] == pytest.approx(2.5)


def test_tidy_table_is_summarised_as_it_is():
    """A metric/value table: the metric names stay, "value" does not become a metric."""
    long = stack([_model("a", s, metric=["loss_all", "acc_pred"], value=v)
                  for s, v in ((0, [2.0, 0.1]), (1, [1.0, 0.3]), (2, [1.5, 0.2]))])
    summary = summarise(long, "behaviour")
    assert list(summary.columns) == ["variant", "metric", "n", "mean", "std", "min", "max"]
    assert summary["metric"].tolist() == ["loss_all", "acc_pred"]
    loss = _row(summary, metric="loss_all")
    assert (loss["n"], loss["mean"], loss["std"], loss["min"], loss["max"]) == (
        3, 1.5, pytest.approx(0.5), 1.0, 2.0)
    # the same without a declared name: metric is a string column, hence a key
    assert summarise(long).equals(summary)


def test_tidy_dynamics_keeps_its_keys():
    rows = dict(step=[0, 0, 10], metric=["loss_pos", "loss_pos", "induction"], layer=[-1, -1, 0],
                head=[-1, -1, 1], position=[0, 1, -1])
    long = stack([_model("a", 0, **rows, value=[3.0, 2.0, 0.1]),
                  _model("a", 1, **rows, value=[3.2, 2.4, 0.3])])
    summary = summarise(long, "dynamics")
    assert len(summary) == 3
    assert _row(summary, metric="loss_pos", position=1)["mean"] == pytest.approx(2.2)
    assert _row(summary, metric="induction")["max"] == pytest.approx(0.3)


@pytest.mark.parametrize("drop, named", [(["seed"], "'seed'"), (["variant"], "'variant'"),
                                         (["variant", "seed"], "'variant', 'seed'")])
def test_table_without_variant_or_seed_is_an_error(heads, drop, named):
    good = _heads("a", 0, [1.0, 0.1], [0.5, 0.9], ["x", "y"])
    with pytest.raises(ValueError, match=named):
        stack([good, good.drop(columns=drop)])


def test_every_declared_key_set_is_a_list_of_names():
    from inductionlab.stages.tables import declared

    assert {"train_log", "head_scores", "ablations", "phase_change", "offset_profile"} <= set(declared())
    for name, fmt in declared().items():
        assert fmt.keys and len(set(fmt.keys)) == len(fmt.keys), name
        assert not set(fmt.keys) & {"variant", "seed", "value"}, name
        assert set(fmt.keys) <= set(fmt.columns), name


def test_aggregate_writes_long_and_summary(tmp_path):
    inputs = []
    for seed, losses in ((0, [3.0, 2.0]), (1, [2.8, 1.0])):
        path = tmp_path / f"seed{seed}.csv"
        _model("a", seed, step=[0, 60], val_loss_all=losses, val_acc_pred=[0.0, 0.5]).to_csv(
            path, index=False)
        inputs.append(path)
    aggregate("train_log", inputs, tmp_path / "train_log.csv", tmp_path / "train_log_summary.csv")
    long = pd.read_csv(tmp_path / "train_log.csv")
    assert len(long) == 4 and long["seed"].tolist() == [0, 0, 1, 1]
    summary = pd.read_csv(tmp_path / "train_log_summary.csv")
    assert len(summary) == 4  # 2 steps x 2 metrics
    row = _row(summary, step=60, metric="val_loss_all")
    assert (row["n"], row["mean"], row["min"], row["max"]) == (2, 1.5, 1.0, 2.0)
    assert row["std"] == pytest.approx(math.sqrt(0.5))


def test_a_value_column_beside_its_interval_is_summarised_as_metrics():
    frame = pd.DataFrame({"variant": "m", "seed": [0, 1], "component": "all", "kind": "group",
                          "sample": "task", "source": "offset", "offset": 5,
                          "value": [1.0, 3.0], "low": [0.5, 2.5], "high": [1.5, 3.5]})
    summary = summarise(frame, "offset_profile").set_index("metric")
    assert summary.loc["value", "mean"] == 2.0 and summary.loc["low", "min"] == 0.5
    assert set(summary.index) == {"value", "low", "high"}
