"""Records: every file says what it is, writes land only on regular files, and a file of
another model or seed, or with no record under results/, is refused."""
import contextlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import time

import pandas as pd
import pytest
import torch
import yaml

from helpers import stage_settings, tiny_spec
from inductionlab import cli, records
from inductionlab.atomic import NotOurs, atomic_path, write_csv, write_text
from inductionlab.core.loading import BadInput, load_model, read_spec, read_table, save_model
from inductionlab.core.model import ModelConfig, build_model
from inductionlab.core.spec import Spec, write_spec
from inductionlab.stages.aggregate import aggregate


def _model_files(root, seed):
    """spec.json and model.pt of a tiny model of ``seed`` in results/two_layer/seed{seed}/."""
    folder = root / "results" / "two_layer" / f"seed{seed}"
    spec = Spec.from_dict(tiny_spec(seed=seed))
    write_spec(folder / "spec.json", spec)
    save_model(folder / "model.pt", build_model(spec.model, seed), spec)
    return folder


def _record(path):
    return json.loads(records.record_path(path).read_text())


def test_a_record_names_the_file_its_writer_model_seed_spec_and_inputs(tmp_path):
    folder = _model_files(tmp_path, 0)
    record = _record(folder / "model.pt")
    spec = read_spec(folder / "spec.json")
    assert record["file"] == "model.pt" and record["model"] == "two_layer" and record["seed"] == 0
    assert record["spec"] == records.spec_identity(spec.to_dict()).spec
    assert record["sha256"] == records.sha256(folder / "model.pt")
    # inside a command: the writer and the inputs it read
    with records.recording("inductionlab test", one_model=True):
        written = folder / "t.csv"
        load_model(folder / "model.pt")
        write_csv(written, pd.DataFrame({"variant": ["two_layer"], "seed": [0]}))
    table = _record(written)
    assert table["writer"] == "inductionlab test" and (table["model"], table["seed"]) == ("two_layer", 0)
    assert table["inputs"] == {str(folder / "model.pt"): record["sha256"]}


def test_another_seeds_model_copied_with_its_record_is_refused(tmp_path):
    seed0, seed1 = _model_files(tmp_path, 0), _model_files(tmp_path, 1)
    for name in ("model.pt", ".model.pt.sha256"):
        shutil.copy(seed1 / name, seed0 / name)
    with pytest.raises(BadInput, match="is the file of two_layer seed 1, not of two_layer seed 0"):
        load_model(seed0 / "model.pt")


def test_a_record_edited_to_another_seed_is_refused_by_the_models_own_spec(tmp_path):
    seed0, seed1 = _model_files(tmp_path, 0), _model_files(tmp_path, 1)
    shutil.copy(seed1 / "model.pt", seed0 / "model.pt")
    record = _record(seed1 / "model.pt") | {"seed": 0, "spec": _record(seed0 / "model.pt")["spec"]}
    records.record_path(seed0 / "model.pt").write_text(json.dumps(record))
    with pytest.raises(BadInput, match="holds two_layer seed 1, but its record says two_layer seed 0"):
        load_model(seed0 / "model.pt")


def test_a_command_about_one_model_reading_anothers_file_is_refused(tmp_path):
    seed0, seed1 = _model_files(tmp_path, 0), _model_files(tmp_path, 1)
    with records.recording("inductionlab offsets", one_model=True):
        load_model(seed0 / "model.pt")
        with pytest.raises(BadInput, match="is a file of two_layer seed 1, but .* is of two_layer seed 0"):
            read_spec(seed1 / "spec.json")
    # reading many models is what a command about several does
    with records.recording("inductionlab aggregate"):
        load_model(seed0 / "model.pt")
        read_spec(seed1 / "spec.json")


def test_a_file_written_into_another_models_folder_is_refused(tmp_path):
    seed0 = _model_files(tmp_path, 0)
    out = tmp_path / "results" / "one_layer" / "seed0" / "weights.csv"
    with records.recording("inductionlab extract-weights", one_model=True):
        load_model(seed0 / "model.pt")
        with pytest.raises(records.RecordProblem, match="does not belong in the folder of one_layer seed 0"):
            write_text(out, "x\n")
    assert not out.exists()


@pytest.mark.parametrize("record", ["missing", "directory", "binary", "symlink_to_zero", "huge",
                                    "old_format"])
def test_a_table_under_results_without_a_sound_record_is_refused(tmp_path, record):
    table = tmp_path / "results" / "tables" / "x.csv"
    write_csv(table, pd.DataFrame({"a": [1.0]}))
    rec = records.record_path(table)
    rec.unlink()
    if record == "directory":
        rec.mkdir()
    elif record == "binary":
        rec.write_bytes(b"\x00\xff" * 10)
    elif record == "symlink_to_zero":
        rec.symlink_to("/dev/zero")
    elif record == "huge":
        rec.write_text(" " * (records.MAX_RECORD_BYTES + 1))
    elif record == "old_format":
        rec.write_text(f"{records.sha256(table)} {table.stat().st_size}\n")
    start = time.monotonic()
    with pytest.raises(BadInput, match="record"):
        read_table(table)
    assert time.monotonic() - start < 5  # a record is read with a size limit, never in full


def test_a_file_outside_results_needs_no_record(tmp_path):
    table = tmp_path / "by_hand" / "x.csv"
    table.parent.mkdir()
    table.write_text("a\n1.0\n")
    assert read_table(table)["a"].tolist() == [1.0]


def test_a_table_edited_after_it_was_written_is_refused(tmp_path):
    table = tmp_path / "results" / "tables" / "x.csv"
    write_csv(table, pd.DataFrame({"a": [1.0]}))
    table.write_text("a\n2.0\n")
    with pytest.raises(BadInput, match="damaged or edited"):
        read_table(table)


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory"])
def test_a_write_never_replaces_anything_but_a_regular_file(tmp_path, kind):
    target = tmp_path / "out.csv"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink":
        target.symlink_to(victim)
    else:
        target.mkdir()
    with pytest.raises(NotOurs, match="nothing was written"):
        write_text(target, "new\n")
    assert victim.read_text() == "keep\n"
    assert (target.is_symlink() if kind == "symlink" else
            target.is_dir() if kind == "directory" else not target.is_file())
    assert not records.record_path(target).exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_write_over_a_device_is_refused_by_the_command(tmp_path):
    """extract-weights --out <a device>: one line, and the device stays one (a node made
    here, a copy of /dev/null, so that a failure harms nothing else)."""
    folder = _model_files(tmp_path, 0)
    device = tmp_path / "null"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    proc = subprocess.run([sys.executable, "-m", "inductionlab.cli", "extract-weights", "--model",
                           str(folder / "model.pt"), "--out", str(device)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{device}: is a device" in proc.stderr
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert not records.record_path(device).exists()


def test_leftovers_of_every_kind_go_with_the_next_write(tmp_path):
    target = tmp_path / "t.csv"
    for stale in (f".tmp-{target.name}.abc", f".tmp-.{target.name}.sha256.def"):
        (tmp_path / stale).write_text("partial")
    write_text(target, "a\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".t.csv.sha256", "t.csv"]


def test_aggregate_counts_each_model_and_seed_once(tmp_path):
    table = tmp_path / "results" / "two_layer" / "seed0" / "extra.csv"
    write_csv(table, pd.DataFrame({"variant": ["two_layer"], "seed": [0], "loss": [1.0]}))
    with pytest.raises(BadInput, match="holds two_layer seed 0, as .* does"):
        aggregate("extra", [table, table], tmp_path / "long.csv", tmp_path / "summary.csv")


def test_a_model_with_no_heads_is_one_message():
    with pytest.raises(ValueError, match="n_heads=0 is not a positive integer"):
        ModelConfig(n_heads=0)
    with pytest.raises(ValueError, match="n_heads=0"):
        Spec.from_dict(tiny_spec(n_heads=0))


def test_complete_on_a_link_to_a_text_file_is_one_line(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a model\n" * 50)
    link = tmp_path / "model.pt"
    link.symlink_to(text)
    proc = subprocess.run([sys.executable, "-m", "inductionlab.cli", "complete", str(link), "ABC"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{link}: cannot be read as a model.pt" in proc.stderr


def test_a_file_of_another_spec_with_its_record_edited_is_refused_beside_the_model(tmp_path):
    """A checkpoint holds no spec: its record says whose it is. Edited to name this model,
    it still carries another spec's digest, which the model's own spec is not."""
    seed0 = _model_files(tmp_path, 0)
    other = tmp_path / "elsewhere" / "results" / "two_layer" / "seed0"
    spec = Spec.from_dict(tiny_spec(seed=0, d_model=16))
    write_spec(other / "spec.json", spec)
    with records.recording("inductionlab dynamics", one_model=True):
        load_model(seed0 / "model.pt")
        with pytest.raises(BadInput, match="is a file of two_layer seed 0 from another spec"):
            read_spec(other / "spec.json")


def test_a_record_of_another_file_is_refused(tmp_path):
    folder = tmp_path / "results" / "tables"
    write_csv(folder / "a.csv", pd.DataFrame({"x": [1.0]}))
    shutil.copy(folder / "a.csv", folder / "b.csv")
    shutil.copy(records.record_path(folder / "a.csv"), records.record_path(folder / "b.csv"))
    with pytest.raises(BadInput, match="is the record of 'a.csv', another file"):
        read_table(folder / "b.csv")


def test_a_table_from_outside_results_of_another_model_is_refused_beside_the_model(tmp_path):
    seed0 = _model_files(tmp_path, 0)
    table = tmp_path / "by_hand" / "head_scores.csv"
    table.parent.mkdir()
    table.write_text("variant,seed,layer,head\none_layer,0,0,0\n")
    with records.recording("inductionlab offsets", one_model=True):
        load_model(seed0 / "model.pt")
        with pytest.raises(BadInput, match="its rows are of one_layer seed 0, but .* is of two_layer seed 0"):
            read_table(table)


# ---------------------------------------------------------------- a file of another run

def _run_files(root, seeds=(0,), steps=30):
    """A run in ``root``: the spec.json of one_layer and two_layer for each of ``seeds``
    (trained for ``steps``), a per-model behaviour.csv of each with its record, and the
    stacked results/tables/behaviour.csv (as rule aggregate writes it)."""
    per_model = []
    for variant in ("one_layer", "two_layer"):
        for seed in seeds:
            folder = root / "results" / variant / f"seed{seed}"
            spec = tiny_spec(variant, seed, steps=steps)
            write_spec(folder / "spec.json", spec)
            frame = pd.DataFrame({"variant": [variant], "seed": [seed], "task": ["write_up"],
                                  "metric": ["never_repeats"],
                                  "value": [0.7 if steps == 30 else 0.27]})
            with atomic_path(folder / "behaviour.csv",
                             identity=records.spec_identity(Spec.from_dict(spec).to_dict())) as tmp:
                frame.to_csv(tmp, index=False)
            per_model.append(folder / "behaviour.csv")
    tables = root / "results" / "tables"
    with records.recording("inductionlab aggregate"):
        aggregate("behaviour", per_model, tables / "behaviour.csv",
                  tables / "behaviour_summary.csv")
    return tables / "behaviour.csv"


def _copy_with_record(source, target):
    for src, dst in ((source, target), (records.record_path(source), records.record_path(target))):
        shutil.copy(src, dst)


def test_a_stacked_tables_record_names_every_model_and_spec_it_holds(tmp_path):
    table = _run_files(tmp_path, seeds=(0, 1))
    covers = {(c["model"], c["seed"], c["spec"]) for c in _record(table)["covers"]}
    assert covers == {(m, s, _record(tmp_path / "results" / m / f"seed{s}" / "spec.json")["spec"])
                      for m in ("one_layer", "two_layer") for s in (0, 1)}
    assert len(read_table(table)) == 4  # this run's own table is read as it is


def test_another_runs_stacked_table_with_its_record_is_refused(tmp_path):
    """Copied from a run of another spec (more steps), with its record: refused, naming the
    model and the spec.json its spec differs from, where it read 0.27 for 0.70 before."""
    ours = _run_files(tmp_path / "ours")
    theirs = _run_files(tmp_path / "theirs", steps=40)
    _copy_with_record(theirs, ours)
    spec_json = tmp_path / "ours" / "results" / "one_layer" / "seed0" / "spec.json"
    with pytest.raises(BadInput, match=rf"{ours}: holds one_layer seed 0 from another spec \(its "
                       rf"record's spec digest [0-9a-f]{{12}}… differs from {spec_json}'s "
                       r"[0-9a-f]{12}…\) \(if the workflow wrote it, delete it and rerun snakemake"):
        read_table(ours)


def test_another_specs_per_model_table_with_its_record_is_not_stacked(tmp_path):
    _run_files(tmp_path / "ours")
    _run_files(tmp_path / "theirs", steps=40)
    mine = tmp_path / "ours" / "results" / "two_layer" / "seed0" / "behaviour.csv"
    _copy_with_record(tmp_path / "theirs" / mine.relative_to(tmp_path / "ours"), mine)
    out = tmp_path / "ours" / "results" / "tables"
    (out / "behaviour.csv").unlink()
    with records.recording("inductionlab aggregate"), pytest.raises(
            BadInput, match=rf"{mine}: holds two_layer seed 0 from another spec .* differs from "
                            rf"{mine.parent / 'spec.json'}'s"):
        other = tmp_path / "ours" / "results" / "one_layer" / "seed0" / "behaviour.csv"
        aggregate("behaviour", [other, mine], out / "behaviour.csv", out / "behaviour_summary.csv")
    assert not (out / "behaviour.csv").exists()


def test_a_stacked_table_of_a_model_this_run_has_not_is_refused(tmp_path):
    ours = _run_files(tmp_path / "ours", seeds=(0,))
    theirs = _run_files(tmp_path / "theirs", seeds=(0, 1))
    _copy_with_record(theirs, ours)
    with pytest.raises(BadInput, match="holds one_layer seed 1, which is not a model of this run "
                                       rf"\(there is no .*one_layer/seed1/spec.json\)"):
        read_table(ours)


def test_a_record_of_an_earlier_version_is_refused_as_such(tmp_path):
    table = _run_files(tmp_path)
    record = _record(table)
    del record["covers"]
    records.record_path(table).write_text(json.dumps(record | {"format": "inductionlab record 1"}))
    with pytest.raises(BadInput, match="is of an earlier version of this project, which names no "
                                       "spec of the models a file covers"):
        read_table(table)


def _claims(tmp_path, tables, specs):
    """``inductionlab claims`` on ``tables`` and ``specs``: (exit status, standard error)."""
    roles = tmp_path / "roles.json"
    roles.write_text(json.dumps(stage_settings("roles")))
    claims_yaml = tmp_path / "claims.yaml"
    claims_yaml.write_text(yaml.safe_dump({"claims": [{
        "id": "never", "variant": "two_layer", "quote": "q", "compare": ">", "threshold": 0.5,
        "metric": {"table": "behaviour", "where": {"metric": "never_repeats"},
                   "column": "value"}}]}))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = cli.main(["claims", "--claims-yaml", str(claims_yaml), "--claims",
                           str(tmp_path / "claims.csv"), "--scorecard", str(tmp_path / "card.csv"),
                           "--tables", *map(str, tables), "--specs", *map(str, specs),
                           "--roles", str(roles)])
    return status, err.getvalue()


def test_claims_reads_only_this_runs_stacked_tables_of_every_model(tmp_path):
    table = _run_files(tmp_path, seeds=(0, 1))
    specs = sorted((tmp_path / "results").glob("*/seed*/spec.json"))
    assert _claims(tmp_path, [table], specs) == (0, "")
    assert set(pd.read_csv(tmp_path / "claims.csv")["status"]) == {"holds"}
    # one model's table: one line naming what it holds and what this run has
    one = tmp_path / "results" / "two_layer" / "seed0" / "behaviour.csv"
    status, err = _claims(tmp_path, [one], specs)
    assert status == 1 and len(err.splitlines()) == 1, err
    assert err.startswith(f"inductionlab claims: error: {one}: holds rows of two_layer seed 0 but "
                          "none of one_layer seeds 0, 1, two_layer seed 1, which this run has")
    assert "give the stacked tables of every model, results/tables/<name>.csv" in err
    # a table given by hand (no record) that holds a model this run has not
    by_hand = tmp_path / "by_hand" / "behaviour.csv"
    by_hand.parent.mkdir()
    frame = pd.read_csv(table)
    pd.concat([frame, frame.iloc[:1].assign(variant="four_layer")]).to_csv(by_hand, index=False)
    status, err = _claims(tmp_path, [by_hand], specs)
    assert status == 1 and err.startswith(
        f"inductionlab claims: error: {by_hand}: holds four_layer seed 0, not a model of this run "
        "(the spec.json files given are of one_layer seeds 0, 1, two_layer seeds 0, 1)"), err


def test_claims_refuses_a_stacked_table_of_a_run_with_fewer_seeds(tmp_path):
    """Of the same specs, so that every model it holds is this run's: the seeds it lacks
    are what differs."""
    ours = _run_files(tmp_path / "ours", seeds=(0, 1))
    theirs = _run_files(tmp_path / "theirs", seeds=(0,))
    _copy_with_record(theirs, ours)
    specs = sorted((tmp_path / "ours" / "results").glob("*/seed*/spec.json"))
    status, err = _claims(tmp_path, [ours], specs)
    assert status == 1 and "Traceback" not in err, err
    assert "but none of one_layer seed 1, two_layer seed 1, which this run has" in err
    # and of another spec: refused by its record, whichever spec files are given
    _copy_with_record(_run_files(tmp_path / "other", seeds=(0, 1), steps=40), ours)
    status, err = _claims(tmp_path, [ours], specs)
    assert status == 1 and f"{ours}: holds one_layer seed 0 from another spec" in err, err


def test_a_stacked_table_beside_a_hand_edited_spec_names_the_spec(tmp_path):
    table = _run_files(tmp_path)
    spec = tmp_path / "results" / "two_layer" / "seed0" / "spec.json"
    spec.write_text(spec.read_text().replace('"n_heads": 4', '"n_heads": 2'))
    with pytest.raises(BadInput, match=rf"{table}: holds two_layer seed 0, whose {spec} was edited "
                                       r"since it was written .* delete it and rerun snakemake, "
                                       r"which writes it from config.yaml again$"):
        read_table(table)
