"""The workflow on a real SLURM cluster.

A one-node cluster runs on this machine (tests/slurm_cluster.py); the tiny config, cut to
one model, goes through ``snakemake --executor slurm --profile workflow/profiles/slurm``,
every non-local job submitted with sbatch, and the result is compared with the local run
of the tiny config (the ``tiny_run`` fixture): the model's spec is the same there, so its
files must be the same and its weights bit-identical.

One model rather than all of them keeps the run to a few minutes on two cores: every
SLURM job starts Snakemake twice (once in the batch script, once in its job step), which
costs more CPU time than most of the tiny jobs themselves.

Needs root and Debian's slurm-wlm and munge (.ci/run installs them); without them the
module is skipped, saying why, unless INDUCTIONLAB_REQUIRE_SLURM is set (as in CI), in
which case a cluster that cannot start is a failure.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers import ROOT, TINY_CONFIG, snakemake_command
from services import started
from slurm_cluster import ClusterUnavailable, LocalCluster

pytestmark = [pytest.mark.e2e, pytest.mark.slurm]  # the end-to-end tests: python -m pytest -m 'not e2e' runs the rest

VARIANT = "two_layer"  # two layers: the composition tables and ablations have work to do
PROFILE = ROOT / "workflow" / "profiles" / "slurm"
RUN_TIMEOUT_S = 900  # the run takes a few minutes on two cores; this bounds a hang


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    with started(LocalCluster(tmp_path_factory.mktemp("slurm_cluster")), ClusterUnavailable,
                 "INDUCTIONLAB_REQUIRE_SLURM", "local SLURM cluster") as cluster:
        yield cluster


def run_bounded(command, cwd, env, timeout, log):
    """Run ``command`` with its output in ``log``; past ``timeout`` seconds send it SIGINT
    (Snakemake then cancels its SLURM jobs and exits), and SIGKILL if it is still there a
    minute later. Returns (exit status, output, seconds, whether it timed out)."""
    start = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    seconds = time.monotonic() - start
    return proc.returncode, Path(log).read_text(errors="replace"), seconds, timed_out


def default_resources(partition):
    """The profile's default resources with the test cluster's partition, as
    ``--default-resources`` arguments (given on the command line they replace the
    profile's whole mapping, so every entry is repeated)."""
    resources = yaml.safe_load((PROFILE / "config.yaml").read_text())["default-resources"]
    resources["slurm_partition"] = partition
    return [f"{key}={value!r}" if isinstance(value, str) else f"{key}={value}"
            for key, value in resources.items()]


def write_one_model_config(work):
    """tests/config.tiny.yaml with only VARIANT and no extra stages, as work/config.yaml."""
    config = yaml.safe_load(TINY_CONFIG.read_text())
    config["variants"] = {VARIANT: config["variants"][VARIANT]}
    config["extra_rules"], config["experiments"] = [], {}
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.fixture(scope="module")
def slurm_run(slurm_cluster, tmp_path_factory):
    """The one-model tiny config run through the SLURM executor and the slurm profile."""
    work = tmp_path_factory.mktemp("tiny_slurm")
    write_one_model_config(work)
    env = slurm_cluster.env
    # sbatch jobs inherit this environment (--export=ALL): the `inductionlab` script and
    # this Python, which runs Snakemake inside each job, come first on PATH.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    command = snakemake_command(
        work, "--executor", "slurm", "--profile", PROFILE,
        "--default-resources", *default_resources(slurm_cluster.partition),
        # No accounting database: status from squeue, and the first check after a second.
        "--slurm-status-command", "squeue",
        "--slurm-init-seconds-before-status-checks", "1",
        "--slurm-keep-successful-logs")
    status, output, seconds, timed_out = run_bounded(
        command, work, env, RUN_TIMEOUT_S, work / "snakemake_slurm.log")
    print(f"SLURM run of the tiny config: {seconds:.0f} s")
    assert not timed_out, f"stopped after {RUN_TIMEOUT_S} s:\n{output[-4000:]}"
    assert status == 0, output[-4000:] + "\n" + slurm_cluster.log_tails()
    return work, output


def test_jobs_were_submitted_to_slurm(slurm_run):
    work, output = slurm_run
    assert "has been submitted with SLURM jobid" in output
    logs = work / ".snakemake" / "slurm_logs"
    for rule in ("train", "analyse"):  # the heavy rules
        assert list((logs / f"rule_{rule}").rglob("*.log")), rule


def test_second_run_has_nothing_to_do(slurm_run):
    work, _ = slurm_run
    proc = subprocess.run(snakemake_command(work, "-n", "--cores", "1"), cwd=work,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_every_output_exists(slurm_run, tiny_run):
    work, _ = slurm_run
    proc = subprocess.run(snakemake_command(work, "--summary"), cwd=work,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split("\t") for line in proc.stdout.splitlines()[1:] if "\t" in line]
    assert len(rows) > 20
    missing = [row[0] for row in rows if not (work / row[0]).exists()]
    assert missing == []
    for name in ("report.html", "report.pdf"):
        assert (work / "reports" / name).stat().st_size > 0

    def model_files(root):
        folder = root / "results" / VARIANT / "seed0"
        return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}

    # the tiny run's formation study also reads the variant it retrains (formation.csv and
    # its record); the one-model run has no experiment
    study = {"formation.csv", ".formation.csv.sha256"}
    assert "weights.npz" in model_files(work)
    assert model_files(work) == model_files(tiny_run) - study


def test_weights_equal_the_local_run(slurm_run, tiny_run):
    work, _ = slurm_run
    folder = Path("results") / VARIANT / "seed0"
    spec = (work / folder / "spec.json").read_text()
    assert spec == (tiny_run / folder / "spec.json").read_text()  # the same model
    with np.load(work / folder / "weights.npz") as remote, \
            np.load(tiny_run / folder / "weights.npz") as local:
        assert sorted(remote.files) == sorted(local.files)
        for name in local.files:
            assert np.array_equal(remote[name], local[name]), name
