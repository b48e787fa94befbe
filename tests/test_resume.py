"""Training survives a kill: it resumes from its last saved state, bit for bit, and
never publishes non-finite weights."""
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
import torch

from helpers import tiny_spec
from inductionlab.core.spec import write_spec
from inductionlab.core.stacked import train_stacked
from inductionlab.core.train import TrainingDiverged, train


def _state(path):
    return torch.load(path, weights_only=True)["state_dict"]


def assert_same_outputs(a, b):
    """model.pt, weights.npz, train_log.csv (but its wall-clock column) and checkpoints equal."""
    for name, value in _state(a / "model.pt").items():
        assert torch.equal(value, _state(b / "model.pt")[name]), name
    log_a, log_b = (pd.read_csv(d / "train_log.csv").drop(columns="elapsed_s") for d in (a, b))
    pd.testing.assert_frame_equal(log_a, log_b, check_exact=True)
    names = sorted(p.name for p in (a / "checkpoints").glob("step*.pt"))
    assert names == sorted(p.name for p in (b / "checkpoints").glob("step*.pt"))
    for name in names:
        for key, value in _state(a / "checkpoints" / name).items():
            assert torch.equal(value, _state(b / "checkpoints" / name)[key]), (name, key)
    if (a / "weights.npz").exists():
        with np.load(a / "weights.npz") as wa, np.load(b / "weights.npz") as wb:
            for key in wa.files:
                assert np.array_equal(wa[key], wb[key]), key


def _cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "inductionlab.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300, **kwargs)


def _kill_when_logged(spec_path, out_dir, log_path, pattern, timeout=120):
    """Run ``inductionlab train`` and SIGKILL it once its log matches ``pattern``."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "inductionlab.cli", "train",
                                 "--spec", str(spec_path), "--out-dir", str(out_dir)], stdout=log, stderr=log)
    deadline = time.time() + timeout
    try:
        while not re.search(pattern, log_path.read_text()):
            assert proc.poll() is None, "training ended before it could be killed:\n" + log_path.read_text()
            assert time.time() < deadline, "training never reached the kill point"
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


@pytest.mark.slow
def test_sigkilled_training_resumes_bit_identical(tmp_path):
    spec = tiny_spec(steps=600)
    spec["train"]["n_checkpoints"] = 20
    write_spec(tmp_path / "spec.json", spec)
    full, killed = tmp_path / "full", tmp_path / "killed"
    assert _cli("train", "--spec", tmp_path / "spec.json", "--out-dir", full).returncode == 0
    _cli("extract-weights", "--model", full / "model.pt", "--out", full / "weights.npz")

    _kill_when_logged(tmp_path / "spec.json", killed, tmp_path / "kill.log", r"step\s+400/600")
    assert not (killed / "model.pt").exists() and not (killed / "checkpoints").exists()
    (killed / ".tmp-checkpoints.left-by-a-kill").mkdir()  # an older run's temporary folder
    proc = _cli("train", "--spec", tmp_path / "spec.json", "--out-dir", killed)
    assert proc.returncode == 0, proc.stderr
    resumed = int(re.search(r"resumed from step (\d+) of 600", proc.stderr).group(1))
    assert 300 <= resumed < 600
    assert f"step {resumed:>6}/600" not in proc.stderr  # nothing before it was redone
    assert "removed" in proc.stderr and ".tmp-checkpoints.left-by-a-kill" in proc.stderr
    assert sorted(p.name for p in killed.iterdir() if not p.name.endswith(".sha256")) == [
        "checkpoints", "model.pt", "train_log.csv"]
    _cli("extract-weights", "--model", killed / "model.pt", "--out", killed / "weights.npz")
    assert_same_outputs(full, killed)


class _Killed(Exception):
    pass


def _killed_at(step):
    """A log callback that stops the run when it logs ``step`` (after earlier states are saved)."""
    def log(msg):
        if re.search(rf"step\s+{step}/", msg):
            raise _Killed
    return log


def test_stacked_training_resumes_bit_identical(tmp_path):
    specs = [tiny_spec(seed=s, steps=40, smear_layers=[1]) for s in (0, 1)]
    full = [tmp_path / f"full{s}" for s in (0, 1)]
    killed = [tmp_path / f"killed{s}" for s in (0, 1)]
    train_stacked(specs, full)
    with pytest.raises(_Killed):
        train_stacked(specs, killed, log=_killed_at(30))
    lines = []
    train_stacked(specs, killed, log=lines.append)
    assert sum("resumed from step 20 of 40" in line for line in lines) == 2
    for a, b in zip(full, killed):
        assert_same_outputs(a, b)


def test_a_changed_spec_starts_afresh(tmp_path):
    spec = tiny_spec(steps=40)
    with pytest.raises(_Killed):
        train(spec, tmp_path, log=_killed_at(30))
    (old,) = tmp_path.glob(".partial-*")
    spec["train"]["lr"] = 2e-3
    lines = []
    train(spec, tmp_path, log=lines.append)
    assert not any("resumed" in line for line in lines)
    assert any(f"removed {old}" in line for line in lines)
    assert not list(tmp_path.glob(".partial-*"))
    fresh = tmp_path / "fresh"
    train(spec, fresh)
    assert_same_outputs(tmp_path, fresh)


def test_the_error_names_the_first_non_finite_training_step(tmp_path):
    spec = tiny_spec(steps=50)
    spec["train"]["lr"] = float("inf")  # the first update makes every weight NaN
    with pytest.raises(TrainingDiverged, match="first non-finite at step 1 "):
        train(spec, tmp_path)
    assert not list(tmp_path.iterdir())  # nothing published, no state kept


def test_non_finite_final_weights_publish_nothing(tmp_path):
    spec = tiny_spec(steps=1)
    spec["train"].update(lr=float("inf"), eval_every=1)  # the only loss (step 0) is finite
    with pytest.raises(TrainingDiverged, match="final weights .* not finite"):
        train(spec, tmp_path)
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_the_command_line_reports_divergence_in_one_line(tmp_path):
    spec = tiny_spec(steps=20)
    spec["train"]["lr"] = 10.0
    write_spec(tmp_path / "spec.json", spec)
    proc = _cli("train", "--spec", tmp_path / "spec.json", "--out-dir", tmp_path / "out")
    assert proc.returncode == 1
    (line,) = [l for l in proc.stderr.splitlines() if "error" in l]
    assert re.search(r"first non-finite at step \d+ ", line) and "Traceback" not in proc.stderr
    assert not (tmp_path / "out" / "model.pt").exists()


def test_a_damaged_state_is_set_aside_and_training_resumes_from_an_earlier_one(tmp_path):
    spec = tiny_spec(steps=40)
    train(spec, tmp_path / "full")
    with pytest.raises(_Killed):
        train(spec, tmp_path, log=_killed_at(30))
    (state,) = tmp_path.glob(".partial-*/state-step*.pt")  # the newest state only: step 20
    data = state.read_bytes()
    state.write_bytes(data[: len(data) // 2])  # cut short, as by a full disk
    lines = []
    train(spec, tmp_path, log=lines.append)
    said = " ".join(lines)
    assert f"{state}: cannot be read" in said and "set aside as damaged-state-step000020.pt" in said
    assert "from step 0 if there is none" in said and "resumed" not in said
    assert_same_outputs(tmp_path / "full", tmp_path)


def test_a_damaged_stacked_state_resumes_every_member_from_step_0(tmp_path):
    specs = [tiny_spec(seed=s, steps=40) for s in (0, 1)]
    killed = [tmp_path / f"killed{s}" for s in (0, 1)]
    with pytest.raises(_Killed):
        train_stacked(specs, killed, log=_killed_at(30))
    (state,) = killed[1].glob(".partial-*/state-step*.pt")
    state.write_bytes(b"PK\x03\x04" + bytes(64))
    lines = []
    train_stacked(specs, killed, log=lines.append)
    assert any("set aside" in line for line in lines) and not any("resumed" in line for line in lines)
    full = [tmp_path / f"full{s}" for s in (0, 1)]
    train_stacked(specs, full)
    for a, b in zip(full, killed):
        assert_same_outputs(a, b)


@pytest.mark.slow
def test_a_full_disk_is_one_line_naming_the_file_and_a_rerun_completes_the_model(tmp_path):
    """A file size limit stands in for a full disk: every write past it fails."""
    spec = tiny_spec(steps=40)
    write_spec(tmp_path / "spec.json", spec)
    limited = ("import resource, signal, sys; from inductionlab.cli import main; "
               "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
               "resource.setrlimit(resource.RLIMIT_FSIZE, (60000, 60000)); "
               f"sys.exit(main(['train', '--spec', '{tmp_path / 'spec.json'}', '--out-dir', '{tmp_path / 'out'}']))")
    proc = subprocess.run([sys.executable, "-c", limited], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = [l for l in proc.stderr.splitlines() if "error" in l]
    assert "could not be written" in line and "Free disk space" in line and str(tmp_path / "out") in line
    assert not (tmp_path / "out" / "model.pt").exists()
    rerun = _cli("train", "--spec", tmp_path / "spec.json", "--out-dir", tmp_path / "out")
    assert rerun.returncode == 0, rerun.stderr
    train(spec, tmp_path / "full")
    assert_same_outputs(tmp_path / "full", tmp_path / "out")
