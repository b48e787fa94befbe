"""The workflow after a kill and on damaged or misplaced files (on a copy of the tiny run)."""
import json
import os
import shutil
import signal
import subprocess
import time

import pandas as pd
import pytest
import yaml

from helpers import snakemake_command
from inductionlab import records

pytestmark = pytest.mark.e2e  # the end-to-end tests: python -m pytest -m 'not e2e' runs the rest

ANALYSIS = ["ablations.csv", "ablated_attention.npz"]


@pytest.fixture
def copy_of_run(tiny_run, tmp_path):
    """The finished tiny run, copied with its times and Snakemake's records."""
    work = tmp_path / "work"
    shutil.copytree(tiny_run, work, symlinks=True, ignore=shutil.ignore_patterns("locks"))
    return work


def _models(work):
    return sorted(p for p in (work / "results").glob("*/seed*") if (p / "ablations.csv").exists())


def _run(work, *args, timeout=900):
    return subprocess.run(snakemake_command(work, "--cores", "1", *args), cwd=work,
                          capture_output=True, text=True, timeout=timeout)


def test_a_snakemake_killed_mid_analysis_reruns_to_identical_tables(copy_of_run):
    work = copy_of_run
    models = _models(work)
    assert len(models) >= 4
    before = {m: {n: (m / n).read_bytes() for n in ANALYSIS} for m in models}
    table = work / "results" / "tables" / "ablations.csv"
    table_before = table.read_bytes()
    for m in models:
        for name in ANALYSIS:
            (m / name).unlink()
    log = work / "killed.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(snakemake_command(work, "--cores", "1"), cwd=work, stdout=out,
                                stderr=out, start_new_session=True)
    try:
        deadline = time.time() + 600
        while sum((m / "ablations.csv").exists() for m in models) < 1:  # one job done, more to do
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.time() < deadline
            time.sleep(0.1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # Snakemake and the job it runs, as a node failure
        proc.wait()
    done = sum((m / "ablations.csv").exists() for m in models)
    assert done < len(models), "the run finished before it was killed"

    locked = _run(work)
    assert locked.returncode != 0 and "--unlock" in locked.stdout + locked.stderr
    assert _run(work, "--unlock").returncode == 0
    rerun = _run(work)  # the same command: jobs Snakemake did not see finish are redone
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    for m in models:
        for name in ANALYSIS:
            assert (m / name).read_bytes() == before[m][name], (m, name)
    assert table.read_bytes() == table_before


def test_a_directory_at_an_output_path_is_an_error(copy_of_run):
    work = copy_of_run
    weights = next(iter(_models(work))) / "weights.npz"
    weights.unlink()
    weights.mkdir()
    proc = _run(work, "-n")
    assert proc.returncode == 1
    assert f"{weights.relative_to(work)} is a directory, but the workflow writes a file there" in proc.stderr


def _damaging(work, path, damage):
    """Damage ``path`` of the finished run, run snakemake; returns (proc, outputs of claims
    and report before, and after)."""
    watched = [work / "results" / "tables" / "claims.csv", work / "results" / "tables" / "scorecard.csv",
               work / "reports" / "report.html"]
    before = [p.read_bytes() for p in watched]
    damage(path)
    proc = _run(work)
    return proc, before, [p.read_bytes() for p in watched]


def test_a_damaged_table_stops_the_run_before_claims_and_report(copy_of_run):
    work = copy_of_run
    scores = work / "results" / "one_layer_smeared" / "seed0" / "head_scores.csv"

    def cut(path):  # whole lines kept: only the recorded digest tells
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:2]))

    proc, before, after = _damaging(work, scores, cut)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert f"{scores.relative_to(work)}: is not the file the workflow wrote: it was cut short or edited" in out
    assert "delete it and rerun snakemake to rebuild it" in out
    assert after == before  # claims, scorecard and report untouched
    scores.unlink()  # the one step the message gives: the model's behaviour is redone, then the rest
    plan = _run(work, "-n")
    assert plan.returncode == 0, plan.stderr[-3000:]
    jobs = plan.stdout.split("Job stats:")[1]
    assert all(f"\n{rule} " in jobs for rule in ("analyse", "aggregate", "claims", "report")), jobs


def test_a_hand_edited_spec_is_never_trained(copy_of_run):
    work = copy_of_run
    spec = work / "results" / "one_layer" / "seed0" / "spec.json"
    model = spec.parent / "model.pt"
    weights = model.read_bytes()

    def edit(path):
        path.write_text(path.read_text().replace('"n_heads": 4', '"n_heads": 2'))

    proc, before, after = _damaging(work, spec, edit)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    # named by the first job that reads it, or a file of its model (whose spec it no longer is)
    assert (f"{spec.relative_to(work)}: is not the file the workflow wrote" in out
            or f"{spec.relative_to(work)} was edited since it was written" in out), out[-3000:]
    assert "writes it from config.yaml again" in out
    assert after == before
    assert model.read_bytes() == weights  # the model's analyses refused the spec; nothing trained on it
    spec.unlink()  # the one step the message gives: the training job writes it again (and
    # trains the model from the config, to the same bytes)
    rebuilt = _run(work, spec.relative_to(work))
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    assert '"n_heads": 4' in spec.read_text() and model.read_bytes() == weights


def test_another_runs_stacked_table_stops_claims_until_it_is_rebuilt(copy_of_run):
    """A stacked table of another spec of two_layer seed 0, copied in with its record (its
    values halved, its record's spec digest another): claims refuses it, naming the table and
    the spec.json it differs from, and writes nothing; deleted, the table is stacked again
    and claims is as before."""
    work = copy_of_run
    tables = work / "results" / "tables"
    table = tables / "behaviour.csv"
    before = (tables / "claims.csv").read_bytes()
    frame = pd.read_csv(table)
    floats = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c])]
    frame[floats] = frame[floats] * 0.5
    frame.to_csv(table, index=False)
    record = json.loads(records.record_path(table).read_text())
    record["covers"] = [c | {"spec": "f" * 64} if (c["model"], c["seed"]) == ("two_layer", 0) else c
                        for c in record["covers"]]
    record.update(sha256=records.sha256(table), size=table.stat().st_size)
    records.record_path(table).write_text(json.dumps(record))

    proc = _run(work, "results/tables/claims.csv")
    assert proc.returncode != 0
    assert ("results/tables/behaviour.csv: holds two_layer seed 0 from another spec (its record's "
            "spec digest ffffffffffff… differs from results/two_layer/seed0/spec.json's"
            in proc.stdout + proc.stderr), proc.stderr[-3000:]
    assert not (tables / "claims.csv").exists()  # the failed job's outputs are removed
    table.unlink()  # the step the message gives
    proc = _run(work, "results/tables/claims.csv")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tables / "claims.csv").read_bytes() == before


def test_a_changed_spec_reruns_its_model_and_what_reads_it_without_a_refusal(copy_of_run, tmp_path):
    """A model's spec changed in the config: its training writes the new spec.json, and every
    file made from the old one is made again before anything reads it."""
    work = copy_of_run
    overlay = tmp_path / "change.yaml"
    overlay.write_text(yaml.safe_dump({"variants": {"three_layer": {"n_layers": 3, "n_heads": 2}}}))
    proc = _run(work, "--configfile", overlay, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    spec = json.loads(records.record_path(work / "results" / "three_layer" / "seed0" / "spec.json")
                      .read_text())["spec"]
    claims = work / "results" / "tables" / "claims.csv"
    covers = json.loads(records.record_path(claims).read_text())["covers"]
    assert {"model": "three_layer", "seed": 0, "spec": spec} in covers


def _published(work) -> set[str]:
    """Every file the workflow publishes (its `published_outputs()`), read as Snakemake
    reads the Snakefile in ``work``."""
    from pathlib import Path

    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import OutputSettings, ResourceSettings

    from helpers import ROOT

    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL}, dryrun=True)) as api:
        parsed = api.workflow(resource_settings=ResourceSettings(cores=1),
                              snakefile=Path(ROOT) / "Snakefile", workdir=Path(work))
        return set(parsed._workflow.globals["published_outputs"]())


def _job_counts(dry_run_output: str) -> dict[str, int]:
    """Rule -> jobs, from the job stats of a dry run."""
    counts, table = {}, dry_run_output.split("Job stats:", 1)[-1].splitlines()
    for line in table[3:]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit() or parts[0] == "total":
            break
        counts[parts[0]] = int(parts[1])
    return counts


def test_every_file_the_workflow_publishes_is_a_target(copy_of_run):
    work = copy_of_run
    published = _published(work)
    written = {str(p.relative_to(work)) for root in ("results", "reports")
               for p in (work / root).rglob("*") if p.is_file()
               and not any(part.startswith(".") for part in p.relative_to(work).parts)
               and "benchmarks" not in p.parts}
    # a file inside a figure folder (a directory output) is published with its folder
    loose = sorted(f for f in written - published
                   if not any(f.startswith(d + "/") for d in published))
    assert not loose, loose


def test_deleted_results_are_rebuilt_with_what_depends_on_them_and_nothing_else(copy_of_run):
    work = copy_of_run
    results = work / "results"
    tables = results / "tables"
    (tables / "claims.csv").unlink()
    (tables / "scorecard.csv").unlink()
    proc = _run(work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _job_counts(proc.stderr) == {"claims": 1, "report": 1, "all": 1}
    assert (tables / "claims.csv").is_file() and (tables / "scorecard.csv").is_file()

    models = _models(work)
    one, other = models[0], models[-1]
    (one / "model.pt").unlink()
    next((other / "checkpoints").glob("step*.pt")).unlink()
    proc = _run(work, "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = _job_counts(proc.stdout + proc.stderr)
    # the two models retrain (a model.pt and its checkpoints are one job's outputs); no
    # other model trains, and no spec or settings file is written again
    assert jobs.get("train") == 2, jobs
    assert "stage_settings" not in jobs, jobs
    assert jobs.get("analyse") == 2, jobs  # each model's analyses, one job
