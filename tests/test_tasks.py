"""Tasks: samplers with the sources of every target, their exact floors, the scores read
from the sources, and the task settings refused in one line."""
import math
import subprocess

import pytest
import torch
import yaml

from handbuilt import InductionCircuitModel, ShiftCopyModel
from helpers import positional_masks, snakemake_command, tiny_spec
from inductionlab.stages.behaviour.attention import (COPY_SCORES, attention_mass, chance_level,
                                             head_score_table, score_masks)
from inductionlab.stages.behaviour.behaviour import distinct_letters, evaluation_samples
from inductionlab.stages.behaviour.period_test import period_measures
from inductionlab.config import ConfigError, validate_config
from inductionlab.core.data import TaskConfig, control_sample
from inductionlab.core.metrics import task_metrics
from inductionlab.core.tasks import WRITE_UP, resolve_task, task_from_dict, task_kinds
from inductionlab.core.variable_period import period_mixture_floor
from inductionlab.core.seeding import generator

KINDS = {"repeated_block": {}, "variable_period": {"min_period": 3, "max_period": 8},
         "random_offset": {"block_len": 6, "max_offset": 6}}


def _task(kind):
    settings = dict(KINDS[kind])
    if kind != "repeated_block":
        settings.update(vocab_size=26, seq_len=24)
    return task_from_dict({"kind": kind, **settings})


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_source_holds_the_target_s_letter_and_sampling_is_reproducible(kind):
    task = _task(kind)
    sample = task.sample(256, generator(0, "t"))
    tokens, sources = sample.tokens, sample.sources
    assert sources.shape == (256, 25, 24) and tokens.shape == (256, 24)
    b, t, j = torch.nonzero(sources[:, :24], as_tuple=True)
    assert len(b) and bool((tokens[b, t] == tokens[b, j]).all()) and bool((j < t).all())
    # the continuation's sources agree with each other (the letter after the sequence)
    again = task.sample(256, generator(0, "t"))
    assert torch.equal(again.tokens, tokens) and torch.equal(again.sources, sources)
    assert sample.predictable.shape == (256, 23)


def test_the_write_up_s_sources_are_its_fixed_positions():
    sample = TaskConfig().sample(8, generator(0, "t"))
    assert bool((sample.predictable == (torch.arange(23) >= 5)).all())
    for name in COPY_SCORES:
        keys, queries = score_masks(name, 24, 3, sample.sources)
        old_keys, old_queries = positional_masks(name)
        assert keys.dim() == 2, name  # the same for every sequence: one pair of masks
        assert torch.equal(queries, old_queries), name
        assert torch.equal(keys[queries], old_keys[queries]), name


def test_variable_period_moves_the_copies():
    sample = _task("variable_period").sample(512, generator(1, "t"))
    keys, _ = score_masks("nearest_copy", 24, 3, sample.sources)
    assert keys.dim() == 3  # per sequence
    offsets = {int(i - j) for _, i, j in torch.nonzero(keys).tolist()}
    assert offsets == {n - 1 for n in range(3, 9)}


def test_the_floor_of_the_write_up_s_task():
    floor = TaskConfig().floor()
    assert floor.loss_all == pytest.approx(5 / 23 * math.log(26))
    assert (floor.loss_pred, floor.acc_pred) == (0.0, 1.0)
    # the general sum over periods and repetition patterns gives the same with one period
    mixture = period_mixture_floor([6], 26, 24)
    assert mixture.loss_all == pytest.approx(floor.loss_all, rel=1e-9)
    assert mixture.loss_pred == pytest.approx(0.0, abs=1e-12)
    assert mixture.acc_pred == pytest.approx(1.0, rel=1e-9)


def test_a_predictor_that_knows_the_period_reaches_the_floor():
    task = TaskConfig()
    sample = task.sample(64, generator(2, "t"))
    logits = torch.full((64, 24, 26), -30.0)
    logits[:, 5:23].scatter_(-1, sample.tokens[:, :18, None], 30.0)  # token i + 1 is token i - 5
    metrics = task_metrics(logits, sample.tokens, sample.predictable)
    assert metrics["loss_pred"] == pytest.approx(task.floor().loss_pred, abs=1e-6)
    assert metrics["acc_pred"] == task.floor().acc_pred
    # uniform over the unpredictable first block: exactly the floor over every target
    assert metrics["loss_all"] == pytest.approx(task.floor().loss_all, rel=1e-6)


def test_distinct_letters_keep_the_copies_and_make_every_fresh_letter_new():
    task = _task("variable_period")
    sample = task.sample(64, generator(5, "t"))
    tokens = distinct_letters(sample, 26, generator(5, "d"))
    b, t, j = torch.nonzero(sample.sources[:, :24], as_tuple=True)
    assert bool((tokens[b, t] == tokens[b, j]).all())
    fresh = ~sample.sources[:, :24].any(-1)
    for row, keep in zip(tokens, fresh):
        assert len(set(row[keep].tolist())) == int(keep.sum())
    # on the write-up's task: blocks of distinct letters, as before
    _, write_up = evaluation_samples(TaskConfig(), 16, 0)
    assert all(len(set(r[:6].tolist())) == 6 for r in write_up)


@pytest.mark.slow
def test_every_score_of_a_trained_model_equals_the_positional_definition():
    """On the write-up's task the scores read from sources equal those written with
    position arithmetic, to 1e-6, task and control alike."""
    from inductionlab.core.train import train

    spec = tiny_spec(steps=40)
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        train(spec, out)
        from inductionlab.core.loading import load_model

        model, _ = load_model(f"{out}/model.pt")
    task = TaskConfig()
    sample, distinct = evaluation_samples(task, 128, 0)
    control = control_sample(128, task, 0)
    frame, _ = head_score_table(model, sample, distinct, 3, control_tokens=control)
    _, cache = model.run_with_cache(sample.tokens)
    _, ctrl = model.run_with_cache(control)
    worst = 0.0
    for name in COPY_SCORES:
        keys, queries = positional_masks(name)
        for l, pattern in enumerate(cache.pattern):
            old = attention_mass(pattern.mean(0), keys, queries).detach()
            old_ctrl = attention_mass(ctrl.pattern[l].mean(0), keys, queries).detach()
            rows = frame[frame["layer"] == l]
            worst = max(worst, float((torch.tensor(rows[name].to_numpy()) - old).abs().max()),
                        float((torch.tensor(rows[f"{name}_control"].to_numpy()) - old_ctrl).abs().max()))
            assert rows[f"{name}_chance"].iloc[0] == pytest.approx(chance_level(keys, queries), abs=1e-9)
    assert worst <= 1e-6


def test_a_handbuilt_induction_circuit_looks_for_the_copy_on_every_period():
    model = InductionCircuitModel(vocab_size=26)
    task = task_from_dict({"kind": "variable_period", "vocab_size": 26, "seq_len": 24})
    sample, distinct = evaluation_samples(task, 256, 0)
    control = control_sample(256, TaskConfig(), 0)
    frame, _ = head_score_table(model, sample, distinct, 3, control_tokens=control, copying=False)
    head = frame[(frame["layer"] == 1) & (frame["head"] == 0)].iloc[0]
    assert head["induction"] > 0.8
    assert head["induction_control"] <= head["induction_chance"] + 0.05
    periods = period_measures(model, TaskConfig(), [4, 5, 6, 7, 8], 64, 0)
    assert all(periods[f"period{n}_acc"].value > 0.95 for n in (4, 5, 6, 7, 8))


def test_a_head_looking_five_back_by_position_solves_period_six_only():
    task = task_from_dict({"kind": "variable_period", "vocab_size": 26, "seq_len": 24})
    sample, distinct = evaluation_samples(task, 256, 0)
    control = control_sample(256, TaskConfig(), 0)
    frame, _ = head_score_table(ShiftCopyModel(shift=5), sample, distinct, 3,
                                control_tokens=control, copying=False)
    # it finds the copy only where the period is 6, a sixth of the sequences
    assert frame.iloc[0]["nearest_copy"] == pytest.approx(1 / 6, abs=0.06)
    # on random letters with the same masks it scores the same: its content part is nil
    assert abs(frame.iloc[0]["induction_content"]) < 1e-6
    assert abs(frame.iloc[0]["nearest_copy_content"]) < 1e-6
    periods = period_measures(ShiftCopyModel(shift=5), TaskConfig(), [4, 5, 6, 7, 8], 64, 0)
    assert periods["period6_acc"].value == 1.0
    assert all(periods[f"period{n}_acc"].value < 0.2 for n in (4, 5, 7, 8))


BASE = {"seeds": [0], "variants": {"two_layer": {"n_layers": 2}}}
BAD_TASKS = {
    "unknown kind": ({"tasks": {"t": {"kind": "nope"}}}, "tasks.t: unknown task kind 'nope'"),
    "period outside the context": ({"tasks": {"t": {"kind": "variable_period", "max_period": 30}}},
                                   "tasks.t: max_period 30 is outside the context"),
    "an unknown setting": ({"tasks": {"t": {"kind": "variable_period", "period": 3}}},
                           "tasks.t.period: task kind 'variable_period' has no setting 'period'; it takes "
                           "min_period, max_period"),
    "a number as text": ({"tasks": {"t": {"kind": "variable_period", "min_period": "3"}}},
                         "tasks.t.min_period: '3' is text, not an integer; write 3 without quotes"),
    "a fraction": ({"tasks": {"t": {"kind": "variable_period", "min_period": 3.5}}},
                   "tasks.t.min_period: 3.5 is not an integer"),
    "a whole float": ({"tasks": {"t": {"kind": "variable_period", "max_period": 8.0}}},
                      "tasks.t.max_period: 8.0 is a float; write an integer (8)"),
    "a boolean period": ({"tasks": {"t": {"kind": "variable_period", "min_period": True}}},
                         "tasks.t.min_period: true is a boolean, not an integer"),
    # true would be a block of one letter: a period-1 task, trained without a word
    "a boolean block": ({"tasks": {"t": {"kind": "random_offset", "block_len": True}}},
                        "tasks.t.block_len: true is a boolean, not an integer"),
    "a negative offset": ({"tasks": {"t": {"kind": "random_offset", "max_offset": -1}}},
                          "tasks.t.max_offset: -1 is outside 0..8192"),
    # the letters and the context are task:'s; a task entry's own would be replaced silently
    "the task's letters": ({"tasks": {"t": {"kind": "variable_period", "vocab_size": 5}}},
                           "tasks.t.vocab_size: every task shares the write-up's letters and "
                           "context, set in task:"),
    "the task's context": ({"tasks": {"t": {"kind": "random_offset", "seq_len": 100}}},
                           "tasks.t.seq_len: every task shares the write-up's letters and "
                           "context, set in task:"),
    "unknown task name": ({"variants": {"two_layer": {"n_layers": 2, "task": "missing"}}},
                          "variants.two_layer.task: 'missing' is neither 'write_up' nor one of tasks"),
}


@pytest.mark.parametrize("case", list(BAD_TASKS))
def test_a_bad_task_setting_is_one_line_naming_the_key(case):
    from helpers import SCHEMA

    overlay, words = BAD_TASKS[case]
    config = {**BASE, **overlay, "variants": {**BASE["variants"], **overlay.get("variants", {})}}
    with pytest.raises(ConfigError) as err:
        validate_config(yaml.safe_load(yaml.safe_dump(config)), SCHEMA)
    assert words in str(err.value)
    assert len([line for line in str(err.value).splitlines() if "tasks" in line or ".task" in line]) == 1


@pytest.mark.parametrize("setting, words", [
    ({"min_period": "3"}, "min_period: '3' is text, not an integer"),
    ({"max_period": 8.0}, "max_period: 8.0 is a float; write an integer (8)"),
    ({"min_period": True}, "min_period: true is a boolean, not an integer"),
    ({"period": 3}, "task kind 'variable_period' has no setting 'period'"),
])
def test_a_spec_s_task_of_the_wrong_type_is_one_line_naming_the_key(setting, words):
    document = {"kind": "variable_period", "vocab_size": 26, "seq_len": 24, **setting}
    with pytest.raises(ValueError) as err:
        task_from_dict(document)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_spec_with_a_bad_task_names_the_task_s_key(tmp_path):
    from inductionlab.config import validate_config
    from inductionlab.core.spec import Spec, make_spec
    from helpers import SCHEMA

    config = validate_config({**BASE, "tasks": {"vp": {"kind": "variable_period"}},
                              "variants": {"two_layer": {"n_layers": 2, "task": "vp"}}}, SCHEMA)
    document = make_spec(config, "two_layer", 0)
    document["task"]["min_period"] = "3"
    with pytest.raises(ValueError, match=r"^task\.min_period: '3' is text, not an integer"):
        Spec.from_dict(document)
    document["task"] = ["variable_period"]
    with pytest.raises(ValueError, match="a task is a JSON object"):
        Spec.from_dict(document)


def test_every_kind_declares_its_settings_with_bounds():
    from dataclasses import fields

    for kind, cls in task_kinds().items():
        for f in fields(cls):
            assert {"minimum", "maximum"} <= set(f.metadata), (kind, f.name)


@pytest.mark.slow
def test_the_workflow_refuses_a_bad_task_before_any_job(tmp_path):
    overlay, words = BAD_TASKS["period outside the context"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({**BASE, **overlay}))
    proc = subprocess.run(snakemake_command(tmp_path, "-n"), cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert words in proc.stderr
    assert not (tmp_path / "results").exists()


def test_a_model_s_spec_records_its_task_in_full():
    from inductionlab.core.spec import Spec, make_spec
    from helpers import SCHEMA

    config = validate_config({**BASE, "tasks": {"vp": {"kind": "variable_period"}},
                              "variants": {"two_layer": {"n_layers": 2},
                                           "two_layer_vp": {"n_layers": 2, "task": "vp"}}}, SCHEMA)
    document = make_spec(config, "two_layer_vp", 0)
    assert document["task"] == {"name": "vp", "kind": "variable_period", "vocab_size": 26,
                                "seq_len": 24, "min_period": 3, "max_period": 8}
    spec = Spec.from_dict(document)
    assert spec.task.kind == "variable_period" and spec.task_name == "vp"
    assert spec.model.seq_len == 24 and "task" not in document["model"]
    assert make_spec(config, "two_layer", 0)["task"]["name"] == WRITE_UP
    assert resolve_task(config, WRITE_UP)["kind"] == "repeated_block"
    assert set(task_kinds()) >= set(KINDS)


def test_the_floors_docs_methods_quotes_are_the_computed_ones():
    from helpers import ROOT

    text = " ".join((ROOT / "docs" / "methods.md").read_text().split())
    vp, ro = _task("variable_period").floor(), _task("random_offset").floor()
    assert f"the floor is {vp.loss_pred:.4f} nats and accuracy {vp.acc_pred:.3f}" in text
    assert f"its floor is {ro.loss_pred:.4f} nats with accuracy {ro.acc_pred:g}" in text
    assert f"accuracy {vp.acc_pred:.3f}, {vp.loss_all:.4f} nats over all targets" in text
    assert f"bound on scored targets is {vp.scored_loss_pred:.4f} nats" in text
    assert f"{ro.loss_all:.4f} nats over all targets" in text
    cross = period_mixture_floor([6], 26, 24, predictor=list(range(3, 9)))
    assert f"{cross.loss_pred:.4f} nats and accuracy {cross.acc_pred:.4f} in expectation" in text


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_training_batch_is_the_sample_s_tokens_from_the_same_draws(kind):
    """Training reads a batch's tokens alone; they, and what the generator draws next, are
    those of the full sample: a model trains on the same batches either way."""
    from inductionlab.core.task_kinds import training_tokens

    task = _task(kind)
    alone, full = generator(3, "batches"), generator(3, "batches")
    for _ in range(3):
        assert torch.equal(training_tokens(task, 64, alone), task.sample(64, full).tokens)
