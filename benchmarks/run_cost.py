"""What a whole run costs the machine, from the kernel's accounting: CPU seconds per
command and in all, the training share, and training's distance from the core's peak.

    python benchmarks/run_cost.py [--config config.yaml [OVERLAY ...]] [--cores 2] [--workdir DIR]
                                  [--target PATH ...] [--peak-gflops G]

Runs the workflow (``snakemake --cores N``) on ``--config`` (later files overlay earlier
ones, as ``--configfile`` does) in ``--workdir`` (default: a
new folder under the system's temporary folder; an existing run there is continued, so
point it at an empty folder to measure a whole run), as a child of this process that is
made the reaper of every orphan below it. Then it counts:

- **in all**: the user and system seconds of every process of the run, Snakemake included,
  as the kernel adds them up for the processes this one waited for (``getrusage
  RUSAGE_CHILDREN``): short-lived children, compiler workers and threads included;
- **per command**: each ``inductionlab`` command appends its own figure as it exits
  (``inductionlab.process_cost``); what is left of the total is Snakemake's own process and
  anything that is not a command;
- **training**: the ``train`` commands' share of the total, the matrix work of their steps
  (``inductionlab.core.flop_count``) and the rate it was done at, as a share of the core's
  FP32 peak.

**The peak.** Flop per cycle from the core's vector units (``/proc/cpuinfo``): AVX-512 on
two full-width 512-bit FMA pipes is 64 per cycle; AMD's Zen 4 runs AVX-512 on two 256-bit
pipes, 32 per cycle, as does AVX2 with FMA; without FMA, 16. Times the clock the kernel
reports (``cpu MHz``). ``--peak-gflops`` overrides the result where the detection cannot
know (an Intel part with one 512-bit FMA unit is 32, not 64). A one-thread matrix product
measured here is printed beside it, as the rate the library reaches on large matrices.

Asserts nothing; prints its figures.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PR_SET_CHILD_SUBREAPER = 36


def core_peak() -> dict:
    """The core's name, vector width, FP32 flop per cycle, clock (GHz) and peak (GFLOP/s)."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    fields = {}
    for line in info.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    vendor, family = fields.get("vendor_id", ""), int(fields.get("cpu family", "0") or 0)
    if "avx512f" in flags and vendor == "AuthenticAMD" and family == 25:
        units, per_cycle = "AVX-512 on two 256-bit FMA pipes (Zen 4)", 32
    elif "avx512f" in flags:
        units, per_cycle = "AVX-512, two 512-bit FMA pipes assumed", 64
    elif "fma" in flags and "avx2" in flags:
        units, per_cycle = "AVX2 with two 256-bit FMA pipes", 32
    else:
        units, per_cycle = "no FMA (SSE/AVX)", 16
    ghz = float(fields.get("cpu MHz", "0") or 0) / 1000
    return {"name": fields.get("model name", "unknown core"), "units": units,
            "flop_per_cycle": per_cycle, "ghz": ghz, "gflops": per_cycle * ghz}


def measured_matmul_gflops(n: int = 768, repeats: int = 20) -> float:
    """The rate of a one-thread n x n float32 matrix product (best of ``repeats``)."""
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


def run_workflow(configs: list[Path], workdir: Path, cores: int, targets: list[str], log: Path) -> tuple[int, float, float]:
    """Run snakemake; (exit status, CPU seconds of every process below this one, wall seconds)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of the run are reaped here
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, INDUCTIONLAB_CPU_LOG=str(log))
    command = [sys.executable, "-m", "snakemake", *targets, "-s", str(ROOT / "Snakefile"),
               "-d", str(workdir), "--cores", str(cores), "--configfile", *map(str, configs)]
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, cwd=workdir)
    status = proc.wait()
    wall = time.perf_counter() - start
    while True:  # every orphan left (a compiler worker outliving its job), waited for
        try:
            if os.waitpid(-1, 0)[0] == 0:
                break
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return status, cpu, wall


def read_log(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


def spec_of(record: dict, workdir: Path):
    """The spec a train command trained, or None."""
    from inductionlab.core.spec import Spec

    argv = record["argv"]
    if "--spec" not in argv:
        return None
    path = Path(argv[argv.index("--spec") + 1])
    path = path if path.is_absolute() else workdir / path
    return Spec.of(json.loads(path.read_text())) if path.exists() else None


def training_rows(records: list[dict], workdir: Path) -> list[dict]:
    """Per train command: model, seed, CPU seconds, matrix FLOP of its steps."""
    from inductionlab.core.flop_count import training_flop

    rows = []
    for r in records:
        spec = spec_of(r, workdir) if r["command"] == "train" else None
        if spec is None:
            continue
        m = spec.model
        flop = training_flop(m.seq_len, m.vocab_size, m.d_model, m.n_layers,
                             spec.train.batch_size, spec.train.steps)
        rows.append({"model": spec.variant, "seed": spec.seed, "cpu_s": r["user_s"] + r["sys_s"],
                     "flop": flop})
    return rows


def report(records: list[dict], total_cpu: float, wall: float, cores: int, peak: dict,
           matmul: float, workdir: Path) -> None:
    per = defaultdict(lambda: {"jobs": 0, "cpu": 0.0, "rss": 0.0})
    for r in records:
        p = per[r["command"]]
        p["jobs"] += 1
        p["cpu"] += r["user_s"] + r["sys_s"]
        p["rss"] = max(p["rss"], r["max_rss_mb"])
    commands = sum(p["cpu"] for p in per.values())
    print(f"core: {peak['name']}, {peak['units']}: {peak['flop_per_cycle']} FP32 flop/cycle x "
          f"{peak['ghz']:.2f} GHz = {peak['gflops']:.1f} GFLOP/s per core; a one-thread matrix "
          f"product reaches {matmul:.1f} GFLOP/s here")
    print(f"\n{'command':<30s} {'jobs':>5s} {'CPU s':>9s} {'share':>7s} {'per job':>8s} {'peak MB':>8s}")
    for name, p in sorted(per.items(), key=lambda kv: -kv[1]["cpu"]):
        print(f"{name:<30s} {p['jobs']:5d} {p['cpu']:9.1f} {p['cpu'] / total_cpu:7.1%} "
              f"{p['cpu'] / p['jobs']:8.2f} {p['rss']:8.0f}")
    rest = total_cpu - commands
    print(f"{'snakemake and the rest':<30s} {'':5s} {rest:9.1f} {rest / total_cpu:7.1%}")
    print(f"\ncommands run: {len(records)}; CPU in all (kernel): {total_cpu:,.1f} s = "
          f"{total_cpu / 60:.1f} min, / {cores} cores = {total_cpu / cores / 60:.1f} min; "
          f"wall {wall / 60:.1f} min")
    train = per.get("train", {"cpu": 0.0})["cpu"]
    print(f"training share: {train:,.1f} of {total_cpu:,.1f} CPU s = {train / total_cpu:.1%}")
    rows = training_rows(records, workdir)
    if not rows:
        return
    flop = sum(r["flop"] for r in rows)
    cpu = sum(r["cpu_s"] for r in rows)
    at_peak = flop / (peak["gflops"] * 1e9) if peak["gflops"] else float("nan")
    print(f"training matrix work: {flop:.3g} FLOP; at the core's peak {at_peak:,.1f} CPU s; "
          f"done in {cpu:,.1f} CPU s: {flop / cpu / 1e9:.1f} GFLOP/s = "
          f"{flop / cpu / 1e9 / peak['gflops']:.1%} of peak (whole jobs: imports, compiling, "
          "validation and writes included)")
    print(f"\n{'model':<34s} {'seeds':>5s} {'CPU s/job':>10s} {'GFLOP/s':>8s} {'of peak':>8s}")
    by_model = defaultdict(list)
    for r in rows:
        by_model[r["model"]].append(r)
    for model, rs in sorted(by_model.items()):
        c, f = sum(r["cpu_s"] for r in rs), sum(r["flop"] for r in rs)
        print(f"{model:<34s} {len(rs):5d} {c / len(rs):10.1f} {f / c / 1e9:8.1f} "
              f"{f / c / 1e9 / peak['gflops']:8.1%}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, nargs="+", default=[ROOT / "config.yaml"],
                        help="config file, then any overlays")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--target", nargs="*", default=[], help="snakemake targets (default: the whole run)")
    parser.add_argument("--peak-gflops", type=float, default=None,
                        help="the core's FP32 peak, where the detection cannot know it")
    args = parser.parse_args(argv)
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="run_cost_"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    configs = [c.resolve() for c in args.config]
    log = workdir / "process_cost.jsonl"
    if log.exists():
        log.unlink()
    print(f"running the workflow on {' + '.join(map(str, configs))} in {workdir}, --cores "
          f"{args.cores}", flush=True)
    status, cpu, wall = run_workflow(configs, workdir, args.cores, args.target, log)
    if status:
        print(f"snakemake exited with status {status}; the figures cover what ran")
    peak, matmul = core_peak(), measured_matmul_gflops()
    if args.peak_gflops:
        peak |= {"gflops": args.peak_gflops, "units": peak["units"] + ", peak given"}
    elif matmul > peak["gflops"]:
        # the kernel reports the base clock; the core runs faster (boost): the clock is at
        # least what the measured product implies
        peak |= {"ghz": matmul / peak["flop_per_cycle"], "gflops": matmul,
                 "units": peak["units"] + ", clock at least the matrix product's"}
    report(read_log(log), cpu, wall, args.cores, peak, matmul, workdir)
    return status


if __name__ == "__main__":
    sys.exit(main())
