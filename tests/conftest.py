"""The fixtures every test module may use: the tiny workflow run, one torch thread."""
import subprocess

import pytest
import torch

from helpers import snakemake_command, write_tiny_config
from inductionlab import experiments, stages
from inductionlab.stages import tables  # noqa: F401 - every table's format, for the figures

# every test sees the declared figures and commands, as the workflow and the figure command do
stages.available()
experiments.available()


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """One real local run of the workflow on the tiny config, with the test-only extra
    stage; shared by every test module that needs its outputs."""
    work = tmp_path_factory.mktemp("tiny")
    write_tiny_config(work)
    proc = subprocess.run(snakemake_command(work, "--cores", "2"), cwd=work,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return work


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


