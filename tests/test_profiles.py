"""The execution profiles in workflow/profiles/: both are accepted by the real
``snakemake`` command (a dry run on the tiny config), so every key is a valid option."""
import re
import subprocess

import pytest
import yaml

from helpers import ROOT, TINY_CONFIG, snakemake_command, write_tiny_config

pytestmark = pytest.mark.slow  # each test runs Snakemake on the workflow (seconds)

PROFILES = ROOT / "workflow" / "profiles"


@pytest.fixture(scope="module")
def tiny_config(tmp_path_factory):
    work = tmp_path_factory.mktemp("profiles")
    write_tiny_config(work)
    return work


def dry_run(work, *args):
    return subprocess.run(snakemake_command(work, "-n", *args), cwd=work,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", ["default", "slurm"])
def test_profile_dry_run_succeeds(tiny_config, name):
    proc = dry_run(tiny_config, "--profile", PROFILES / name)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert f"Using profiles {PROFILES / name} and workflow specific profile {ROOT / 'profiles' / 'default'}" in output
    assert "train" in output and "report" in output  # the jobs of a first run


def test_only_the_workflows_own_profile_is_loaded_implicitly(tiny_config):
    """Snakemake loads profiles/default/ beside the Snakefile (the repository root) by
    itself, not workflow/profiles/: that one only redoes jobs a killed run left unfinished,
    prints a failed job's log, picks jobs greedily and wakes the scheduler less often."""
    proc = dry_run(tiny_config)
    assert proc.returncode == 0, proc.stderr[-3000:]
    own = ROOT / "profiles" / "default"
    assert f"Using workflow specific profile {own} for setting default" in proc.stdout + proc.stderr
    assert yaml.safe_load((own / "config.yaml").read_text()) == {"rerun-incomplete": True,
                                                                  "show-failed-logs": True,
                                                                  "scheduler": "greedy",
                                                                  "max-jobs-per-timespan": "1000/5s"}


def test_the_scheduler_is_woken_by_finished_jobs_not_every_second():
    """The job-rate limiter's timespan is how often Snakemake re-checks every waiting job's
    inputs while the cores are busy: at least every five seconds, never every second, and a
    count so high that a local run never waits on the limit itself."""
    setting = yaml.safe_load((ROOT / "profiles" / "default" / "config.yaml").read_text())[
        "max-jobs-per-timespan"]
    count, span = re.fullmatch(r"(\d+)/(\d+)s", setting).groups()
    assert int(span) >= 5
    assert int(count) / int(span) >= 100  # Snakemake's default rate, never lowered


def test_slurm_profile_sets_partition_not_account():
    profile = yaml.safe_load((PROFILES / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm"
    resources = profile["default-resources"]
    assert resources["slurm_partition"]
    assert "slurm_account" not in resources
    assert resources["mem_mb"] > 0 and resources["runtime"] > 0


def test_seeds_per_job_groups_the_seeds_of_each_variant_into_one_job(tmp_path):
    config = yaml.safe_load(TINY_CONFIG.read_text())
    config.update(seeds=[0, 1, 2], extra_rules=[], experiments={})
    config["train"]["seeds_per_job"] = 2
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.run(snakemake_command(tmp_path, "-n", "--cores", "1"), cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    for variant in config["variants"]:
        assert f"train_{variant}_seeds0_1 " in out and f"train_{variant}_seeds2 " in out
    assert "\ntrain " not in out  # no per-seed training job
