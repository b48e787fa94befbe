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

**The peak** (``inductionlab.core.flop_count.core_peak``): flop per cycle from the core's
vector units times its clock, or the rate a one-thread matrix product reaches here where
that is higher (the kernel reports the base clock, not the boost). ``--peak-gflops``
overrides it where the detection cannot know (an Intel part with one 512-bit FMA unit is
32 flop a cycle, not 64).

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


def run_workflow(configs: list[Path], workdir: Path, cores: int, targets: list[str],
                 log: Path, options: list[str] = ()) -> tuple[int, float, float, float]:
    """Run snakemake; (exit status, CPU seconds of every process below this one, of those the
    orphans' (processes that outlived the job that started them, such as compiler workers,
    reaped here), wall seconds)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of the run are reaped here
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, INDUCTIONLAB_CPU_LOG=str(log))
    command = [sys.executable, "-m", "snakemake", *targets, "-s", str(ROOT / "Snakefile"),
               "-d", str(workdir), "--cores", str(cores), *options, "--configfile", *map(str, configs)]
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, cwd=workdir)
    _, raw, tree = os.wait4(proc.pid, 0)  # Snakemake and every process it waited for
    proc.returncode = status = os.waitstatus_to_exitcode(raw)
    wall = time.perf_counter() - start
    while True:  # every orphan left (a compiler worker outliving its job), waited for
        try:
            if os.waitpid(-1, 0)[0] == 0:
                break
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return status, cpu, cpu - (tree.ru_utime + tree.ru_stime), wall


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


def report(records: list[dict], total_cpu: float, orphans: float, wall: float, cores: int,
           peak: dict, matmul: float, workdir: Path) -> None:
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
    rest = total_cpu - commands - orphans
    print(f"{'orphans (compiler workers)':<30s} {'':5s} {orphans:9.1f} {orphans / total_cpu:7.1%}")
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
    parser.add_argument("--snakemake", nargs="*", default=[], metavar="OPTION",
                        help="more options for snakemake (e.g. --scheduler greedy), as one word each")
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
    status, cpu, orphans, wall = run_workflow(configs, workdir, args.cores, args.target, log,
                                              args.snakemake)
    if status:
        print(f"snakemake exited with status {status}; the figures cover what ran")
    from inductionlab.core.flop_count import at_least_measured, core_peak, measured_matmul_gflops

    peak, matmul = core_peak(), measured_matmul_gflops()
    if args.peak_gflops:
        peak |= {"gflops": args.peak_gflops, "units": peak["units"] + ", peak given"}
    else:
        peak = at_least_measured(peak, matmul)
    report(read_log(log), cpu, orphans, wall, args.cores, peak, matmul, workdir)
    return status


if __name__ == "__main__":
    sys.exit(main())
