"""The memory a config's jobs need, estimated before any job starts (core/bounds.py), and
the threads a command may use: a config that cannot fit is refused naming the key; the
project's own configs fit with room to spare."""
import copy
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
