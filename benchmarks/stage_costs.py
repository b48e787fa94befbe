"""What each stage of a finished run cost, from the benchmark file every rule writes.

    python benchmarks/stage_costs.py [RUN_DIR]      (default: the current directory)

Reads ``RUN_DIR/results/benchmarks/**.tsv`` (Snakemake's ``benchmark:`` files: wall seconds
``s`` and ``cpu_time`` of each job) and prints

- per rule and model: the mean wall seconds of one job, CPU seconds in brackets;
- per rule: jobs, total wall and CPU seconds;
- the job-seconds of training against everything else (analyses, figures, tables, the
  report): the share the analyses and the report take of the run's job time.

A job's wall time is the time its command ran, imports included; the scheduler's own
time between jobs is in no file. Asserts nothing.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runtime_table import job_table  # noqa: E402  one reader of the benchmark files


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", nargs="?", default=".", type=Path,
                        help="the folder the workflow ran in (default: the current directory)")
    args = parser.parse_args(argv)
    jobs = job_table(args.run_dir)
    per_model = jobs.groupby(["rule", "model"]).agg(s=("s", "mean"), cpu=("cpu", "mean"))
    cells = per_model.apply(lambda r: f"{r.s:.1f} ({r.cpu:.1f})", axis=1).unstack("model")
    pd.set_option("display.width", 250)
    print("mean wall (CPU) seconds of one job, per rule and model\n")
    print(cells.fillna("").to_string())
    totals = jobs.groupby("rule").agg(jobs=("s", "size"), wall_s=("s", "sum"), cpu_s=("cpu", "sum"))
    print("\nper rule\n")
    print(totals.round(1).sort_values("wall_s", ascending=False).to_string())
    train = jobs["rule"] == "train"
    total = jobs["s"].sum()
    print(f"\njobs {len(jobs)}: {total:,.0f} job-seconds wall, {jobs['cpu'].sum():,.0f} CPU")
    print(f"training {jobs.loc[train, 's'].sum():,.0f} s ({jobs.loc[train, 's'].sum() / total:.1%}); "
          f"analyses, figures, tables and report {jobs.loc[~train, 's'].sum():,.0f} s "
          f"({jobs.loc[~train, 's'].sum() / total:.1%}; CPU "
          f"{jobs.loc[~train, 'cpu'].sum() / jobs['cpu'].sum():.1%})")


if __name__ == "__main__":
    main(sys.argv[1:])
