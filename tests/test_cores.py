"""A local run never has more jobs' threads at work than the machine has cores."""
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from helpers import tiny_spec
from inductionlab.core.spec import Spec
from inductionlab.core.compile_policy import compile_lock
from inductionlab.workflow_checks import usable_cores

SNAKEFILE = textwrap.dedent('''
    from inductionlab.workflow_checks import cap_local_cores

    if config.get("cap", True):
        cap_local_cores(workflow)

    rule all:
        input: expand("done/{i}", i=range(4))

    rule job:
        output: "done/{i}"
        threads: 1
        shell: "echo start $(date +%s.%N) >> times.txt; sleep 0.5; echo end $(date +%s.%N) >> times.txt; touch {output}"
''')


def _most_at_once(times_txt):
    events = sorted((float(t), kind) for kind, t in (line.split() for line in times_txt.read_text().splitlines()))
    now = most = 0
    for _, kind in events:
        now += 1 if kind == "start" else -1
        most = max(most, now)
    return most


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
@pytest.mark.parametrize("cap", [True, False])
def test_cores_beyond_the_machines_are_not_used(tmp_path, cap):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    one_cpu = min(os.sched_getaffinity(0))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "8", "--config", f"cap={cap}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: os.sched_setaffinity(0, {one_cpu}))
    assert proc.returncode == 0, proc.stderr[-2000:]
    if cap:
        assert "this machine has 1 core(s): jobs use at most 1 at once (--cores 8" in proc.stderr
        assert _most_at_once(tmp_path / "times.txt") == 1
    else:  # the control: Snakemake alone runs them all at once
        assert _most_at_once(tmp_path / "times.txt") > 1


def test_usable_cores_follow_the_affinity_mask():
    assert 1 <= usable_cores() <= len(os.sched_getaffinity(0))


def test_one_job_compiles_a_step_while_the_others_wait(tmp_path, monkeypatch):
    import torch

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    spec, other_seed = Spec.from_dict(tiny_spec(seed=0)), Spec.from_dict(tiny_spec(seed=3))
    order, logs = [], []

    def second_job():
        with compile_lock(other_seed, torch.device("cpu"), logs.append):
            order.append("second in")

    with compile_lock(spec, torch.device("cpu"), logs.append):
        waiter = threading.Thread(target=second_job)
        waiter.start()
        time.sleep(0.5)
        order.append("first done")
    waiter.join(10)
    assert order == ["first done", "second in"]  # the same step for another seed waited
    assert "waiting for another job that compiles the same training step" in logs
    different = Spec.from_dict(tiny_spec(seed=0, n_layers=1))
    with compile_lock(spec, torch.device("cpu"), logs.append):
        with compile_lock(different, torch.device("cpu"), logs.append):  # another step: no wait
            pass
