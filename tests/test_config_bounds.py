"""The memory a config's jobs need, estimated before any job starts (core/bounds.py), and
the threads a command may use: a config that cannot fit is refused naming the key; the
project's own configs fit with room to spare."""
import copy
import os
import json
import subprocess
import sys

import pytest
import yaml

from helpers import ROOT, SCHEMA, TINY_CONFIG, tiny_spec
from inductionlab.config import memory_problems, validate_config
from inductionlab.core import bounds


def _config(path):
    return validate_config(yaml.safe_load(path.read_text()), SCHEMA)


@pytest.mark.parametrize("path", [ROOT / "config.yaml", TINY_CONFIG])
def test_the_projects_configs_need_little(path):
    config = _config(path)
    for variant in config["variants"].values():
        assert bounds.training_bytes(variant, config["task"], config["train"]) < 2**30
        assert bounds.analysis_bytes(variant, config["task"], config["behaviour"]["n_sequences"]) < 2**30
    assert memory_problems(config, available=4 * 2**30) == []


def test_the_estimate_grows_with_what_a_job_holds():
    config = _config(TINY_CONFIG)
    variant, task = config["variants"]["two_layer"], config["task"]
    train = {**config["train"], "val_size": 16}  # the training step, not the validation pass
    one = bounds.training_bytes(variant, task, train)
    assert bounds.training_bytes(variant, task, {**train, "batch_size": 2 * train["batch_size"]}) > one
    assert bounds.training_bytes(variant, task, {**train, "seeds_per_job": 4}) > 3 * (one - bounds.BASE)
    assert bounds.training_bytes({**variant, "n_heads": 8}, task, train) > one
    assert bounds.training_bytes(variant, {**task, "n_blocks": 8}, train) > one


def test_a_config_that_does_not_fit_names_the_key():
    config = _config(TINY_CONFIG)
    big = copy.deepcopy(config)
    big["train"]["batch_size"] = 65536
    (problem,) = memory_problems(big, available=4 * 2**30)
    assert problem.startswith("train.batch_size: a training job of variant 'one_layer' needs about ")
    assert "more than the 4.0 GB this machine gives a process" in problem
    # a cluster job that asks for the memory may have it
    big["train"]["mem_mb"] = 10_000_000
    assert memory_problems(big, available=4 * 2**30) == []
    stacked = copy.deepcopy(config)
    stacked["train"].update(batch_size=8192, seeds_per_job=8, mem_mb=100)
    (problem,) = memory_problems(stacked, available=4 * 2**30)
    assert problem.startswith("train.seeds_per_job: ") and "8 seeds at once" in problem
    wide = copy.deepcopy(config)
    wide["behaviour"]["n_sequences"] = 65536
    (problem,) = memory_problems(wide, available=4 * 2**30)
    assert problem.startswith("behaviour.n_sequences: scoring 65536 sequences of variant 'one_layer'")


def test_the_machines_memory_is_known_here():
    available = bounds.available_memory()
    assert available is None or available > 2**28


@pytest.mark.slow
def test_a_training_step_stays_below_its_estimate(tmp_path):
    """A real training job's peak memory, in a process of its own, against the estimate."""
    spec = tiny_spec(steps=2, n_layers=2, d_model=32, n_heads=4)
    spec["train"].update(batch_size=4096, val_size=64, eval_every=1, n_checkpoints=6, compile="never")
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    code = ("import json, resource, sys\n"
            "from inductionlab.core.train import train\n"
            f"train(json.load(open({str(tmp_path / 'spec.json')!r})), {str(tmp_path / 'out')!r}, log=lambda m: None)\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    peak = int(proc.stdout.split()[-1])
    estimate = bounds.training_bytes(spec["model"], spec["task"], spec["train"])
    assert peak < estimate, (peak, estimate)


def test_threads_are_capped_at_the_usable_cores(capsys):
    from inductionlab.cli import usable_threads
    from inductionlab.workflow_checks import usable_cores

    cores = usable_cores()
    assert usable_threads("train", 100_000) == cores
    assert "inductionlab train: --threads 100000 is more than the" in capsys.readouterr().err
    assert usable_threads("train", 0) == 1 and usable_threads("train", 1) == 1
    assert capsys.readouterr().err == ""


def _floor_config(max_period: int) -> dict:
    """The tiny config over a context of 384 tokens, with a variable_period task of periods
    3..max_period and little else to hold."""
    config = _config(TINY_CONFIG)
    config["task"]["n_blocks"] = 64
    config["tasks"]["variable_period"] = {"kind": "variable_period", "min_period": 3,
                                          "max_period": max_period}
    config["train"].update(batch_size=8, val_size=8)
    config["behaviour"]["n_sequences"] = config["dynamics"]["n_sequences"] = 16
    return config


def test_a_task_s_exact_floor_is_counted_before_any_job_starts():
    """The floor of a variable_period task enumerates every repetition pattern of its
    longest block: Bell(10) = 115,975 patterns x 384 positions."""
    assert memory_problems(_floor_config(8), available=4 * 2**30) == []
    (problem,) = memory_problems(_floor_config(10), available=4 * 2**30)
    assert problem.startswith("tasks.variable_period.max_period: the exact floor of task "
                              "'variable_period' (variable_period, 384 tokens) needs about ")
    assert problem.endswith("more than the 4.0 GB this machine gives a process; lower "
                            "tasks.variable_period.max_period, or task.n_blocks (the context)")
    assert memory_problems(_floor_config(10), available=16 * 2**30) == []


def test_a_behaviour_job_counts_its_samples_and_the_task_s_predictor():
    config = _floor_config(8)
    config["behaviour"]["n_sequences"] = 512
    # the model's passes alone fit (about 8.1 GB); with the samples of a task over 384
    # tokens and a variable_period task's floor they do not
    assert bounds.analysis_bytes(config["variants"]["one_layer"], config["task"], 512) < 9 * 2**30
    (problem,) = memory_problems(config, available=10 * 2**30)
    assert problem.startswith("behaviour.n_sequences: the behaviour job of variant 'one_layer' "
                              "on task 'variable_period' needs about ")
    assert "(512 sequences of 384 tokens scored, their samples and the task's Bayes predictor)" in problem


@pytest.mark.parametrize("n, letters, count", [(0, 26, 1), (4, 26, 15), (10, 26, 115_975),
                                               (4, 2, 8), (10, 3, 9_842)])
def test_the_patterns_a_floor_enumerates_are_counted_without_listing_them(n, letters, count):
    from inductionlab.core.variable_period import pattern_probability, set_partitions

    assert bounds.patterns_with_letters(n, letters) == count
    assert int((pattern_probability(set_partitions(n), letters) > 0).sum()) == count


def test_every_kind_s_hypotheses_and_floor_are_counted():
    from inductionlab.core.tasks import task_from_dict

    vp = task_from_dict({"kind": "variable_period", "min_period": 3, "max_period": 8})
    ro = task_from_dict({"kind": "random_offset", "max_offset": 6})
    rb = task_from_dict({"kind": "repeated_block"})
    assert [bounds.hypothesis_count(t) for t in (vp, ro, rb)] == [6, 7, 1]
    assert bounds.task_floor_bytes(ro) == bounds.task_floor_bytes(rb) == 0  # closed forms
    # the longest block's patterns: Bell(8) = 4,140 rows of 24 positions, in one pass
    assert bounds.task_floor_bytes(vp) == 8 * 4140 * 24 + bounds.bayes_bytes(4140, 24, 26, 6)


# One process measures its own peak over each part (VmHWM reset between parts).
_MEASURE = """
import ctypes, json, sys
import torch
from inductionlab.core import bounds
from inductionlab.core.bayes_predictor import target_scores
from inductionlab.core.tasks import task_from_dict
from inductionlab.stages.behaviour.behaviour import evaluation_samples

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024

def peak(run):
    ctypes.CDLL(None).malloc_trim(0)  # memory freed earlier goes back, not counted as in use
    open("/proc/self/clear_refs", "w").write("5")  # the peak starts again from here
    before = status("VmRSS:")
    run()
    return status("VmHWM:") - before

torch.set_num_threads(1)
vp = task_from_dict({"kind": "variable_period", "seq_len": 96, "min_period": 3, "max_period": 8})
ro = task_from_dict({"kind": "random_offset", "seq_len": 96, "max_offset": 20})
tokens = vp.sample_tokens(2048, torch.Generator().manual_seed(0))
target_scores(ro.bayes_probs(tokens[:4]), tokens[:4])  # the first call's one-off costs
out = {
    "floor": (peak(vp.floor), bounds.task_floor_bytes(vp)),
    "predictor": (peak(lambda: target_scores(ro.bayes_probs(tokens), tokens)),
                  bounds.bayes_bytes(2048, 96, 26, 21)),
    "samples": (peak(lambda: evaluation_samples(vp, 1024, 0)),
                bounds.evaluation_sample_bytes(1024, 96)),
}
print(json.dumps(out))
"""


@pytest.mark.slow
def test_a_task_s_floor_predictor_and_samples_stay_below_their_estimates():
    """Measured peaks, in a process of their own, against the estimates: below each, and
    within a factor of three (an estimate that grew without bound would refuse configs that
    fit)."""
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("no /proc/self/clear_refs to measure a peak with")
    proc = subprocess.run([sys.executable, "-c", _MEASURE], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    for part, (peak, estimate) in json.loads(proc.stdout.split("\n")[-2]).items():
        assert estimate / 3 < peak < estimate, (part, peak, estimate)
