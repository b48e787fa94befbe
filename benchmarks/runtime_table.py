"""Per-stage costs of a finished run, as the Markdown tables of docs/runtime.md.

    python benchmarks/runtime_table.py [RUN_DIR] [--cores N] [--models NAME ...]

RUN_DIR defaults to the current directory, N to 2; ``--models`` keeps only those models' jobs
and the run-wide ones (e.g. the default config's part of a run that also has a study).

Reads ``RUN_DIR/results/benchmarks/**.tsv``, the file Snakemake's ``benchmark:`` directive
writes for every job of a rule that runs a command (first column ``s``: the job's wall
seconds, imports included; ``cpu_time``; ``max_rss``: peak resident memory in MB). A file
holds the job's last run, so a job rerun with ``--forcerun`` counts once, at its last cost.

Prints, as Markdown:

- per rule: jobs, total seconds, mean and longest job, CPU seconds, the largest peak
  memory of any of its jobs;
- per model: the seconds of every per-model rule, summed over the model's seeds and its
  cross-seed figures, and the model's total;
- the totals: job-seconds (the run's serial cost, one job after another), CPU seconds,
  and that sum divided by ``--cores``, a lower bound on the wall time with that many cores
  (the scheduler's time between jobs, and any idle core, is in no file).

Asserts nothing; ``benchmarks/stage_costs.py`` prints the same files as mean seconds per job.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def job_table(run_dir: Path) -> pd.DataFrame:
    """One row per benchmark file: rule, model ('-' for a run-wide job), s, cpu, max_rss."""
    root = run_dir / "results" / "benchmarks"
    rows = []
    for path in sorted(root.rglob("*.tsv")):
        parts = path.relative_to(root).with_suffix("").parts
        # per model: rule/model/seedN (seedsA-B when stacked; an experiment's rule may nest
        # one level deeper, experiment/rule/model/seedN for rule experiment_rule) and
        # figure/model/name (a figure over a model's seeds); run-wide: rule.tsv, or
        # rule/name.tsv (aggregate/train_log)
        if parts[-1].startswith("seed"):
            rule, model = "_".join(parts[:-2]), parts[-2]
        elif parts[0] == "figure" and len(parts) == 3:
            rule, model = "figure", parts[1]
        else:
            rule, model = parts[0], "-"
        frame = pd.read_csv(path, sep="\t", na_values=["-", "NA"])
        if frame.empty:
            raise SystemExit(f"{path}: no rows (a damaged benchmark file: delete it and rerun the job)")
        rows.append({"rule": rule, "model": model,
                     "s": float(frame.iloc[:, 0].mean()),
                     "cpu": float(pd.to_numeric(frame["cpu_time"], errors="coerce").mean()),
                     "max_rss": float(pd.to_numeric(frame["max_rss"], errors="coerce").max())})
    if not rows:
        raise SystemExit(f"{root}: no benchmark files (has the workflow run here?)")
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame) -> str:
    """A frame as a Markdown table, index first; numbers as they are formatted in the frame."""
    frame = frame.reset_index()
    lines = ["| " + " | ".join(str(c) for c in frame.columns) + " |",
             "|" + "|".join("---" for _ in frame.columns) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def seconds(value: float) -> str:
    return "–" if pd.isna(value) else f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def per_rule(jobs: pd.DataFrame) -> pd.DataFrame:
    table = jobs.groupby("rule").agg(jobs=("s", "size"), total_s=("s", "sum"), mean_s=("s", "mean"),
                                     longest_s=("s", "max"), cpu_s=("cpu", "sum"),
                                     peak_rss_mb=("max_rss", "max"))
    table = table.sort_values("total_s", ascending=False)
    share = table["total_s"] / table["total_s"].sum()
    out = pd.DataFrame({
        "jobs": table["jobs"],
        "total s": table["total_s"].map(seconds),
        "share": share.map(lambda v: f"{v:.1%}"),
        "mean s": table["mean_s"].map(seconds),
        "longest s": table["longest_s"].map(seconds),
        "CPU s": table["cpu_s"].map(seconds),
        "peak RSS MB": table["peak_rss_mb"].map(lambda v: "–" if pd.isna(v) else f"{v:,.0f}"),
    })
    out.index.name = "rule"
    return out


def per_model(jobs: pd.DataFrame) -> pd.DataFrame:
    models = jobs[jobs["model"] != "-"]
    sums = models.pivot_table(index="model", columns="rule", values="s", aggfunc="sum")
    order = sums.sum().sort_values(ascending=False).index
    sums = sums[order]
    sums["total"] = sums.sum(axis=1)
    sums = sums.sort_values("total", ascending=False)
    out = sums.map(seconds)
    out.index.name = "model"
    return out


def totals(jobs: pd.DataFrame, cores: int) -> pd.DataFrame:
    total = jobs["s"].sum()
    train = jobs.loc[jobs["rule"] == "train", "s"].sum()
    rows = {
        "jobs": f"{len(jobs)}",
        "models (with seeds)": f"{jobs.loc[jobs['rule'] == 'train', 'model'].nunique()} "
                               f"({(jobs['rule'] == 'train').sum()} trained)",
        "job-seconds (serial)": f"{total:,.0f} s = {total / 60:,.1f} min",
        "CPU seconds": f"{jobs['cpu'].sum():,.0f} s",
        "training": f"{train:,.0f} s ({train / total:.1%})",
        "everything else": f"{total - train:,.0f} s ({(total - train) / total:.1%})",
        f"lower bound on wall time, {cores} cores": f"{total / cores:,.0f} s = {total / cores / 60:,.1f} min",
        "largest peak RSS of a job": f"{jobs['max_rss'].max():,.0f} MB",
    }
    out = pd.DataFrame({"value": rows})
    out.index.name = "total"
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", nargs="?", default=".", type=Path)
    parser.add_argument("--cores", type=int, default=2, help="cores for the wall-time lower bound (2)")
    parser.add_argument("--models", nargs="+", metavar="NAME",
                        help="only these models' jobs, and the run-wide ones")
    args = parser.parse_args(argv)
    if args.cores < 1:
        parser.error("--cores must be at least 1")
    jobs = job_table(args.run_dir)
    if args.models:
        unknown = sorted(set(args.models) - set(jobs["model"]))
        if unknown:
            parser.error(f"no benchmark files for model(s) {', '.join(unknown)}")
        jobs = jobs[jobs["model"].isin(["-", *args.models])]
    print("### Totals\n")
    print(markdown(totals(jobs, args.cores)))
    print("\n### Per rule\n")
    print(markdown(per_rule(jobs)))
    print("\n### Per model (seconds, summed over its seeds)\n")
    print(markdown(per_model(jobs)))


if __name__ == "__main__":
    main()
