"""Every script in benchmarks/ runs, at a tiny size, and prints its figures.

The scripts assert nothing themselves and no workflow stage imports them, so a change to
the package they call would otherwise go unnoticed until someone next measures. Each one is
run as its own process, as ``python benchmarks/<name>.py ...``, with the package of this
checkout first on the path. A script added to benchmarks/ needs an entry in ``TINY``.
"""
import os
import re
import subprocess
import sys

import pytest

from helpers import ROOT

BENCHMARKS = ROOT / "benchmarks"
RUN = "{run}"  # stands for a folder with a fabricated results/benchmarks/

# script: (its arguments at a tiny size, what its output must contain: one pattern a line)
TINY = {
    "train_speed.py": (
        ["--steps", "2", "--rounds", "1", "--batch", "8", "--stack", "2", "--variants", "one_layer"],
        [r"^torch \S+, 1 thread\(s\), batch 8, median of 1 blocks of 2 steps",
         # plain, plain compiled, project, two ratios, eager, its ratio, stacked, its ratio
         r"^one_layer" + r"\s+\d+\.\d\d" * 9 + r"\s+\d+ s, saves -?\d+ s per 10,000 steps$",
         r"^core: .+: \d+\.\d GFLOP/s FP32 peak$",
         r"^one_layer: project step \d+\.\d GFLOP/s of matrix work = \d+\.\d% of peak$",
         r"^peak resident memory of this process: \d+ MB$"]),
    "step_profile.py": (
        # eager: train_speed.py compiles the same step already
        ["--variant", "one_layer", "--steps", "2", "--top", "3", "--batch", "8", "--eager"],
        [r"^one_layer, (kernel|explicit) attention, eager: \d+\.\d ms per step unprofiled",
         r"^\s*\d+\.\d%\s+\d+\.\d\d\s+\d+\.\d\s+\S"]),
    "runtime_table.py": (
        [RUN, "--cores", "2"],
        [r"^\| jobs \| 4 \|$",
         r"^\| job-seconds \(serial\) \| 432 s = 7\.2 min \|$",
         r"^\| train \| 2 \| 400 \| 92\.6% \| 200 \| 250 \| 300 \| 800 \|$",
         r"^\| one_layer \| 150 \| 10\.0 \| 160 \|$"]),
    "run_cost.py": (
        # one model of the tiny config trained: a real workflow run, counted by the kernel
        ["--config", str(ROOT / "tests" / "config.tiny.yaml"), "--cores", "1", "--workdir", "work",
         "--target", "results/one_layer/seed0/model.pt"],
        [r"^core: .+: (16|32|64) FP32 flop/cycle x \d+\.\d\d GHz = \d+\.\d GFLOP/s per core",
         r"^train\s+1\s+\d+\.\d\s+\d+\.\d%",
         r"^orphans \(compiler workers\)\s+\d+\.\d",
         r"^snakemake and the rest\s+-?\d+\.\d",
         r"^commands run: 1; CPU in all \(kernel\): [\d,]+\.\d s",
         r"^training share: [\d,.]+ of [\d,.]+ CPU s = \d+\.\d%",
         r"^training matrix work: \S+ FLOP; at the core's peak [\d,.]+ CPU s; done in",
         r"^one_layer\s+1\s+\d+\.\d"]),
    "clamp_speed.py": (
        ["--steps", "1", "--rounds", "1", "--batch", "4"],
        [r"^two_layer \(batch 4, 1 thread\(s\)\)$",
         r"^  plain\s+\d+\.\d\d ms/step\s+1\.00x$",
         r"^  clamp C to trained\s+\d+\.\d\d ms/step\s+\d+\.\d\dx$",
         r"^  freeze layer0\s+\d+\.\d\d ms/step",
         r"^one_layer_smeared \(batch 4"]),
    "stage_costs.py": (
        [RUN],
        [r"^jobs 4: 432 job-seconds wall, 324 CPU$",
         r"^training 400 s \(92\.6%\); analyses, figures, tables and report 32 s \(7\.4%"]),
}


def test_every_benchmark_has_a_tiny_invocation():
    scripts = {path.name for path in BENCHMARKS.glob("*.py")}
    assert scripts == set(TINY), ("give every script in benchmarks/ a tiny invocation in TINY: "
                                  f"missing {sorted(scripts - set(TINY))}, "
                                  f"no such script {sorted(set(TINY) - scripts)}")


def fabricated_run(folder):
    """A run folder holding only the benchmark files four jobs of the workflow would write."""
    bench = folder / "results" / "benchmarks"
    jobs = {"train/one_layer/seed0.tsv": (150, 100, 500), "train/two_layer/seed0.tsv": (250, 200, 800),
            "ablations/one_layer/seed0.tsv": (10, 6, 300), "report.tsv": (22, 18, 400)}
    for name, (s, cpu, rss) in jobs.items():
        path = bench / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
                        f"{s}\t0:00:00\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n")
    return folder


@pytest.mark.parametrize("script", sorted(TINY))
def test_benchmark_runs_at_a_tiny_size(script, tmp_path):
    args, expected = TINY[script]
    run = fabricated_run(tmp_path / "run")
    args = [str(run) if arg == RUN else arg for arg in args]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for pattern in expected:
        assert re.search(pattern, proc.stdout, re.MULTILINE), (pattern, proc.stdout)
