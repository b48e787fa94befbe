"""Every command given a bad file says which file and what is wrong, in one line,
with no traceback, and exits non-zero."""
import json
import subprocess
import sys

import pytest
import torch

from helpers import stage_settings, tiny_spec
from inductionlab.cli import main
from inductionlab.core.loading import BadInput, load_model
from inductionlab.core.spec import write_spec
from inductionlab.core.train import train
from inductionlab.core.weights import load_weights, save_weights


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny trained model with its weights, and damaged copies of its files."""
    root = tmp_path_factory.mktemp("bad")
    spec = tiny_spec(steps=10)
    spec["train"]["eval_every"] = 5
    train(spec, root / "model")
    model, _ = load_model(root / "model" / "model.pt")
    save_weights(root / "model" / "weights.npz", model, spec)
    write_spec(root / "model" / "spec.json", spec)
    bad = root / "bad"
    bad.mkdir()
    for name in ("model.pt", "weights.npz", "spec.json", "train_log.csv"):
        data = (root / "model" / name).read_bytes()
        (bad / f"truncated_{name}").write_bytes(data[: len(data) // 2])
        (bad / f"empty_{name}").write_bytes(b"")
        (bad / f"dir_{name}").mkdir()
    (bad / "text.pt").write_text("not a model\n")
    (bad / "text.npz").write_text("not an archive\n")
    payload = torch.load(root / "model" / "model.pt", weights_only=True)
    payload["state_dict"] = {k: torch.full_like(v, float("nan")) for k, v in payload["state_dict"].items()}
    torch.save(payload, bad / "nan_model.pt")
    return root


class _Result:
    def __init__(self, returncode, stderr):
        self.returncode, self.stderr = returncode, stderr


@pytest.fixture
def _run(capsys):
    """``inductionlab ARGS`` in this process (an uncaught exception fails the test)."""
    def run(*args):
        capsys.readouterr()
        code = main([str(a) for a in args])
        return _Result(code, capsys.readouterr().err)
    return run


def _assert_one_clear_line(proc, path, words):
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [l for l in proc.stderr.strip().splitlines() if "error" in l]
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0] and words in lines[0], lines[0]


def test_the_installed_command_prints_one_line(trained):
    path = trained / "bad" / "truncated_model.pt"
    proc = subprocess.run([sys.executable, "-m", "inductionlab.cli", "complete", str(path), "ABCDEF"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and str(path) in proc.stderr


MODEL_CASES = [
    ("bad/missing.pt", "no such file"),
    ("bad/empty_model.pt", "is empty"),
    ("bad/truncated_model.pt", "truncated"),
    ("bad/text.pt", "truncated or not a torch file"),
    ("bad/dir_model.pt", "is a directory"),
    ("model/checkpoints/step000005.pt", "a training checkpoint; give its model.pt"),
    ("bad/nan_model.pt", "hold NaN or infinite values"),
    ("model/weights.npz", "truncated or not a torch file"),
]


@pytest.mark.parametrize("name,words", MODEL_CASES)
@pytest.mark.parametrize("command", ["complete", "extract-weights"])
def test_commands_that_load_a_model(_run, trained, command, name, words):
    path = trained / name
    args = [path, "ABCDEF"] if command == "complete" else ["--model", path, "--out",
                                                           trained / "bad" / "out.npz"]
    _assert_one_clear_line(_run(command, *args), path, words)
    assert not (trained / "bad" / "out.npz").exists()


WEIGHT_CASES = [
    ("bad/missing.npz", "no such file"),
    ("bad/empty_weights.npz", "is empty"),
    ("bad/truncated_weights.npz", "truncated or not an .npz"),
    ("bad/text.npz", "truncated or not an .npz"),
    ("bad/dir_weights.npz", "is a directory"),
    ("model/model.pt", "not a weights.npz"),
]


@pytest.mark.parametrize("name,words", WEIGHT_CASES)
def test_commands_that_read_weights(_run, trained, name, words):
    path = trained / name
    _assert_one_clear_line(_run("circuits", path), path, words)
    out = trained / "bad" / "tables"
    _assert_one_clear_line(_run("circuits-tables", "--weights", path, "--circuits", out / "c.csv",
                                "--composition", out / "k.csv", "--eigenvalues", out / "e.npz"),
                           path, words)
    assert not out.exists() or not list(out.iterdir())


def test_a_damaged_intermediate_says_how_to_rebuild_it(_run, trained):
    proc = _run("circuits", trained / "bad" / "truncated_weights.npz")
    assert "delete it and rerun snakemake to rebuild it" in proc.stderr


def test_non_finite_weights_are_refused(trained, tmp_path):
    import numpy as np

    arrays = dict(np.load(trained / "model" / "weights.npz"))
    arrays["W_Q"] = np.full_like(arrays["W_Q"], np.inf)
    np.savez(tmp_path / "weights.npz", **arrays)
    with pytest.raises(BadInput, match="W_Q hold NaN or infinite"):
        load_weights(tmp_path / "weights.npz")


@pytest.mark.parametrize("name,words", [
    ("bad/missing.json", "no such file"),
    ("bad/empty_spec.json", "is empty"),
    ("bad/truncated_spec.json", "is not valid JSON"),
    ("bad/dir_spec.json", "is a directory"),
])
def test_train_with_a_bad_spec(_run, trained, tmp_path, name, words):
    path = trained / name
    _assert_one_clear_line(_run("train", "--spec", path, "--out-dir", tmp_path / "out"), path, words)


@pytest.mark.parametrize("name,words", [
    ("bad/truncated_train_log.csv", "truncated"),
    ("bad/empty_train_log.csv", "is empty"),
    ("bad/dir_train_log.csv", "is a directory"),
])
def test_aggregate_refuses_a_cut_short_table(_run, trained, tmp_path, name, words):
    path = trained / name
    proc = _run("aggregate", "--name", "train_log", "--long", tmp_path / "l.csv",
                "--summary", tmp_path / "s.csv", "--inputs", trained / "model" / "train_log.csv",
                path, "--final-step", 10)
    _assert_one_clear_line(proc, path, words)
    assert not (tmp_path / "l.csv").exists()


def test_aggregate_refuses_a_log_that_stops_early(_run, trained, tmp_path):
    lines = (trained / "model" / "train_log.csv").read_text().splitlines(keepends=True)
    short = tmp_path / "train_log.csv"
    short.write_text("".join(lines[:-1]))  # whole lines: only the final step is missing
    proc = _run("aggregate", "--name", "train_log", "--long", tmp_path / "l.csv",
                "--summary", tmp_path / "s.csv", "--inputs", short, "--final-step", 10)
    _assert_one_clear_line(proc, short, "ends at step 5, not at the final step 10")


def _dynamics(_run, trained, checkpoints, tmp_path):
    settings = tmp_path / "settings"
    settings.mkdir(exist_ok=True)
    task = tiny_spec()["task"]
    (settings / "behaviour.json").write_text(json.dumps(
        stage_settings("behaviour", task, behaviour={"eval_seed": 1, "n_sequences": 16})))
    (settings / "dynamics.json").write_text(json.dumps(
        stage_settings("dynamics", task, dynamics={"eval_size": 8})))
    out = tmp_path / "out"
    return _run("dynamics", "--model", trained / "model" / "model.pt", "--checkpoints", checkpoints,
                "--behaviour-settings", settings / "behaviour.json",
                "--settings", settings / "dynamics.json", "--dynamics", out / "d.csv", "--losses", out / "l.npz",
                "--phase-change", out / "p.csv")


def test_dynamics_checks_every_checkpoint_of_the_schedule(_run, trained, tmp_path):
    import shutil

    ckpts = tmp_path / "checkpoints"
    shutil.copytree(trained / "model" / "checkpoints", ckpts)
    (ckpts / "step000003.pt").unlink()
    _assert_one_clear_line(_dynamics(_run, trained, ckpts, tmp_path), ckpts, "(step 3)")
    shutil.copy(trained / "bad" / "truncated_model.pt", ckpts / "step000003.pt")
    proc = _dynamics(_run, trained, ckpts, tmp_path)
    _assert_one_clear_line(proc, ckpts / "step000003.pt", "cut short or edited")
    # one remedy, whole: retrain the model (deleting the checkpoint alone would not rebuild it)
    assert f"delete {tmp_path / 'model.pt'} and rerun snakemake to retrain" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_an_output_path_that_is_a_directory_is_refused(_run, trained):
    out = trained / "bad" / "dir_weights.npz"
    proc = _run("extract-weights", "--model", trained / "model" / "model.pt", "--out", out)
    _assert_one_clear_line(proc, out, "directory")


@pytest.mark.parametrize("name,words", [
    ("bad/truncated_weights.npz", "truncated or not an .npz"),
    ("bad/dir_weights.npz", "is a directory"),
])
def test_figures_from_a_bad_archive(_run, trained, tmp_path, name, words):
    path = trained / name
    _assert_one_clear_line(_run("attention-figures", "--attention", path, "--out-dir", tmp_path / "figs"), path, words)
    assert not (tmp_path / "figs").exists()


# ---------------------------------------------------------------- inputs of the wrong kind

def _settings_files(folder):
    """Settings files of three stages, as the workflow writes them (task included)."""
    task = tiny_spec()["task"]
    files = {"behaviour": stage_settings("behaviour", task, behaviour={
                 "eval_seed": 1, "n_sequences": 16, "prompts": [{"prompt": "ABCDEF"}]}),
             "ablations": stage_settings("ablations", task, ablations={
                 "entries": [{"kind": "zero_heads", "target": "all"}]}),
             "positional_shortcut": {"prompts": ["ABCDEF"], "prompt_len": 12, "n_random_prompts": 4,
                                     "n_sequences": 8, "eval_seed": 1, "task": task}}
    for name, document in files.items():
        (folder / f"{name}.json").write_text(json.dumps(document))
    return {name: folder / f"{name}.json" for name in files}


def test_a_stage_given_another_stages_settings(_run, trained, tmp_path):
    s, model, out = _settings_files(tmp_path), trained / "model" / "model.pt", tmp_path / "out"
    proc = _run("behaviour", "--model", model, "--settings", s["ablations"], "--completions", out / "a",
                "--failure-modes", out / "b", "--attention", out / "c.npz", "--head-scores", out / "d",
                "--behaviour", out / "e")
    _assert_one_clear_line(proc, s["ablations"], "it is not the behaviour settings")
    proc = _run("ablations", "--model", model, "--behaviour-settings", s["behaviour"],
                "--settings", s["behaviour"], "--table", out / "a", "--attention", out / "b.npz")
    _assert_one_clear_line(proc, s["behaviour"], "has no key(s) entries: it is not the ablations settings")
    proc = _run("positional-shortcut", "--model", model, "--settings", s["behaviour"], "--metrics",
                out / "a", "--offsets", out / "b", "--completions", out / "c", "--positions", out / "d")
    _assert_one_clear_line(proc, s["behaviour"], "it is not the positional_shortcut settings")
    assert not out.exists()


def test_report_given_no_manifest(_run, tmp_path):
    for text, words in (("{}", "has no key(s) title"), ("", "is empty"), ("[1]", "holds a JSON list")):
        (tmp_path / "manifest.json").write_text(text)
        proc = _run("report", "--manifest", tmp_path / "manifest.json", "--html", tmp_path / "r.html",
                    "--pdf", tmp_path / "r.pdf")
        _assert_one_clear_line(proc, tmp_path / "manifest.json", words)


def test_figures_given_the_wrong_table_or_archive(_run, trained, tmp_path):
    s = _settings_files(tmp_path)
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("variant,seed,layer,head,induction\none_layer,0,0,0,0.5\n")
    proc = _run("figure", "--name", "training", "--subject", "one_layer", "--out", tmp_path / "f.png",
                "--inputs", f"train_log={wrong}", f"settings={s['behaviour']}")
    _assert_one_clear_line(proc, wrong, "it is not the stacked train_log table")
    proc = _run("figure", "--name", "training", "--subject", "models", "--models", "one_layer,two_layer",
                "--out", tmp_path / "m.png", "--inputs", f"train_log={wrong}", f"settings={s['behaviour']}")
    _assert_one_clear_line(proc, wrong, "it is not the stacked train_log table")
    proc = _run("figure", "--name", "positional_shortcut_positions", "--subject", "study",
                "--out", tmp_path / "b.png", "--inputs", f"positions={wrong}",
                f"settings={s['positional_shortcut']}")
    _assert_one_clear_line(proc, wrong, "it is not the stacked positional_shortcut_positions table")
    proc = _run("figure", "--name", "no_such_figure", "--subject", "study",
                "--out", tmp_path / "c.png", "--inputs", f"table={wrong}")
    assert proc.returncode != 0 and "unknown figure 'no_such_figure' of scope study" in proc.stderr
    # inputs are named: a name the figure does not declare, or one it needs left out, is
    # one line naming the figure's inputs
    proc = _run("figure", "--name", "training", "--subject", "one_layer", "--out", tmp_path / "g.png",
                "--inputs", f"log={wrong}", f"settings={s['behaviour']}")
    assert proc.returncode != 0 and "has no input 'log'; its inputs: train_log, settings" in proc.stderr
    proc = _run("figure", "--name", "training", "--subject", "one_layer", "--out", tmp_path / "h.png",
                "--inputs", f"settings={s['behaviour']}")
    assert proc.returncode != 0 and "lacks its input(s) train_log" in proc.stderr
    weights = trained / "model" / "weights.npz"
    proc = _run("attention-figures", "--attention", weights, "--out-dir", tmp_path / "figs")
    _assert_one_clear_line(proc, weights, "has no array(s) mean_pattern_L0")
    assert not list(tmp_path.glob("*.png")) and not (tmp_path / "figs").exists()


def test_claims_given_a_binary_file(_run, trained, tmp_path):
    claims = tmp_path / "claims.yaml"
    claims.write_bytes(bytes(range(256)))
    roles = tmp_path / "roles.json"
    roles.write_text(json.dumps(stage_settings("roles")))
    proc = _run("claims", "--claims-yaml", claims, "--claims", tmp_path / "c.csv", "--scorecard",
                tmp_path / "s.csv", "--tables", trained / "model" / "train_log.csv", "--specs",
                trained / "model" / "spec.json", "--roles", roles)
    _assert_one_clear_line(proc, claims, "not a YAML file, so not a claims file")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_train_on_cuda_without_a_gpu(_run, tmp_path):
    spec = tiny_spec(steps=10)
    spec["device"] = "cuda"
    write_spec(tmp_path / "spec.json", spec)
    proc = _run("train", "--spec", tmp_path / "spec.json", "--out-dir", tmp_path / "out")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (line,) = [l for l in proc.stderr.splitlines() if "error" in l]
    assert "device is 'cuda' but torch sees no CUDA device" in line


def test_a_spec_that_trains_no_step_is_refused(_run, tmp_path):
    spec = tiny_spec(steps=10)
    spec["train"]["steps"] = 0
    write_spec(tmp_path / "spec.json", spec)
    proc = _run("train", "--spec", tmp_path / "spec.json", "--out-dir", tmp_path / "out")
    _assert_one_clear_line(proc, tmp_path / "spec.json", "train.steps: 0 is below 1")
    assert not (tmp_path / "out" / "model.pt").exists()


def test_write_json_refuses_nan(_run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "results" / "settings" / "x.json"
    proc = _run("write-json", "--out", out, "--document", '{"a": NaN}')
    _assert_one_clear_line(proc, out, "holds NaN or an infinity")
    assert not out.exists()


@pytest.mark.parametrize("out", ["results/one_layer/seed0/spec.json", "results/settings/x.csv",
                                 "results/settings/../../x.json", "../x.json", "x.json",
                                 "results/report/other.json"])
def test_write_json_writes_only_the_files_its_rules_name(_run, tmp_path, monkeypatch, out):
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "results" / "one_layer" / "seed0" / "spec.json"
    spec.parent.mkdir(parents=True)
    spec.write_text("{}")
    proc = _run("write-json", "--out", out, "--document", '{"a": 1}')
    _assert_one_clear_line(proc, out, "write-json writes only the workflow's settings files")
    assert spec.read_text() == "{}" and not (tmp_path / "results" / "settings").exists()
    for ok in ("results/settings/x.json", tmp_path / "results/report/families.json"):
        assert _run("write-json", "--out", ok, "--document", '{"a": 1}').returncode == 0


@pytest.mark.parametrize("args, words", [
    (["--indent", "100000000"], "--indent 100000000 is outside 0 to 8"),
    (["--indent", "-1"], "--indent -1 is outside 0 to 8"),
    (["--document", "[" * 10_000 + "]" * 10_000], "nests arrays and objects more than 32 deep"),
    (["--document", "[" * 33 + "]" * 33], "nests arrays and objects more than 32 deep"),
    (["--document", '{"a": ' * 40 + "1" + "}" * 40], "nests arrays and objects more than 32 deep"),
])
def test_write_json_bounds_its_indent_and_nesting(_run, tmp_path, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    out = "results/settings/x.json"
    proc = _run("write-json", "--out", out, *(["--document", "{}"] if "--document" not in args else []),
                *args)
    _assert_one_clear_line(proc, out, words)
    assert not (tmp_path / out).exists()
    deep = "[" * 32 + "]" * 32
    assert _run("write-json", "--out", out, "--document", deep, "--indent", "8").returncode == 0
    assert json.loads((tmp_path / out).read_text()) == json.loads(deep)


def test_write_json_replaces_no_file_another_command_wrote(_run, tmp_path, monkeypatch):
    from inductionlab.records import record_path

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "results" / "settings" / "train.json"
    assert _run("write-json", "--out", out, "--document", '{"a": 1}').returncode == 0
    assert _run("write-json", "--out", out, "--document", '{"a": 2}').returncode == 0  # its own
    record = json.loads(record_path(out).read_text())
    record_path(out).write_text(json.dumps({**record, "writer": "inductionlab train"}))
    proc = _run("write-json", "--out", out, "--document", '{"a": 3}')
    _assert_one_clear_line(proc, out, "its record says inductionlab train wrote it, not write-json")
    assert json.loads(out.read_text()) == {"a": 2}


def test_threads_below_one_are_refused(trained, tmp_path, capsys):
    from inductionlab.cli import main as cli

    with pytest.raises(SystemExit) as stop:
        cli(["train", "--spec", str(trained / "model" / "spec.json"), "--out-dir", str(tmp_path),
             "--threads", "-1"])
    assert stop.value.code == 2 and "-1 is not a positive integer" in capsys.readouterr().err


def test_aggregate_refuses_a_name_that_is_not_its_inputs(_run, trained, tmp_path):
    log = trained / "model" / "train_log.csv"
    proc = _run("aggregate", "--name", "bogus", "--long", tmp_path / "l.csv", "--summary",
                tmp_path / "s.csv", "--inputs", log)
    _assert_one_clear_line(proc, log, "is not a bogus.csv")
    assert not (tmp_path / "l.csv").exists()


def test_complete_refuses_a_letter_that_upper_cases_to_two(_run, trained):
    proc = _run("complete", trained / "model" / "model.pt", "ABCDEFABCDEﬆ")
    _assert_one_clear_line(proc, "ABCDEFABCDEﬆ", "character(s) ['ﬆ'] are not among the 26 letters")


@pytest.mark.parametrize("letter", ["ı", "ſ"])
def test_complete_refuses_a_letter_that_upper_cases_to_a_task_letter(_run, trained, letter):
    # Unicode upper-cases the dotless i to I and the long s to S
    proc = _run("complete", trained / "model" / "model.pt", f"{letter}BCDEF")
    _assert_one_clear_line(proc, f"{letter}BCDEF", f"character(s) [{letter!r}] are not among")


# ---------------------------------------------------------------- files changed since written

def test_a_file_changed_since_the_workflow_wrote_it_is_refused(_run, trained, tmp_path):
    import shutil

    from inductionlab.atomic import write_csv
    from inductionlab.core.loading import read_spec, read_table

    folder = tmp_path / "model"
    shutil.copytree(trained / "model", folder)  # the digests travel with their files
    log = folder / "train_log.csv"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:2]))  # whole lines: no sign of it but the recorded digest
    with pytest.raises(BadInput, match=r"cut short or edited since \(now \d+ of its recorded \d+ bytes\)"):
        read_table(log)
    spec = folder / "spec.json"
    spec.write_text(spec.read_text().replace('"steps": 10', '"steps": 11'))
    with pytest.raises(BadInput, match="damaged or edited since.*writes it from config.yaml again"):
        read_spec(spec)
    proc = _run("train", "--spec", spec, "--out-dir", tmp_path / "out")
    _assert_one_clear_line(proc, spec, "is not the file the workflow wrote")
    assert not (tmp_path / "out").exists()
    import pandas as pd

    write_csv(log, pd.DataFrame({"variant": ["a"], "seed": [0]}))  # written again: taken
    assert len(read_table(log)) == 1


def test_a_per_head_table_lacking_a_head_is_refused(_run, trained, tmp_path):
    import shutil

    import pandas as pd

    folder = tmp_path / "seed0"
    folder.mkdir()
    shutil.copy(trained / "model" / "spec.json", folder / "spec.json")  # 2 layers x 4 heads
    rows = [{"variant": "two_layer", "seed": 0, "layer": l, "head": h, "induction": 0.1}
            for l in range(2) for h in range(4)]
    pd.DataFrame(rows[:-1]).to_csv(folder / "head_scores.csv", index=False)
    (tmp_path / "roles.json").write_text(json.dumps(stage_settings("roles")))
    proc = _run("aggregate", "--name", "head_scores", "--long", tmp_path / "l.csv", "--summary",
                tmp_path / "s.csv", "--inputs", folder / "head_scores.csv", "--roles", tmp_path / "roles.json")
    _assert_one_clear_line(proc, folder / "head_scores.csv", "has 7 row(s) for the 8 heads of its model (missing L1H3)")


def test_the_next_write_removes_what_a_killed_write_left(tmp_path):
    from inductionlab.atomic import write_text

    (tmp_path / ".tmp-report.pdf.abc123.pdf").write_bytes(b"%PDF half")
    (tmp_path / ".tmp-report.pdf.dir").mkdir()
    (tmp_path / ".tmp-report.html.keep").write_text("another file's")
    write_text(tmp_path / "report.pdf", "whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".report.pdf.sha256", ".tmp-report.html.keep", "report.pdf"]


def test_a_file_where_a_folder_belongs_is_one_line_naming_it(tmp_path):
    from inductionlab import atomic

    (tmp_path / "afile").write_text("x")
    with pytest.raises(atomic.NotOurs, match=r"afile is a file, not a folder") as caught:
        with atomic.atomic_path(tmp_path / "afile" / "deeper" / "x.json") as tmp:
            tmp.write_text("{}")
    assert "Errno" not in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_the_system_s_own_error_is_worded_without_its_number(tmp_path):
    from inductionlab.cli import os_words

    with pytest.raises(OSError) as caught:
        open(tmp_path / "missing" / "x")
    assert os_words(caught.value) == f"{tmp_path / 'missing' / 'x'}: no such file or directory"
    assert os_words(ValueError("[Errno 1] kept")) == "[Errno 1] kept"


def test_a_figure_the_report_shows_that_was_deleted_says_how_to_rebuild_it(tmp_path):
    from inductionlab.core.loading import BadInput
    from inductionlab.report.render import figure_item

    path = tmp_path / "results" / "figures" / "two_layer" / "training.png"
    with pytest.raises(BadInput, match=r"training.png: no such file \(a figure the report shows\) "
                       r"\(run `snakemake`"):
        figure_item({"path": str(path)}, 1)


# ---------------------------------------------------------------- memory, before any is allocated

def test_train_refuses_a_spec_that_cannot_fit_before_allocating(_run, tmp_path):
    """A batch of 65,536 sequences of 1,664 tokens: one line naming the setting, the
    estimate and what the machine gives, instead of the allocator's traceback."""
    spec = tiny_spec(steps=2)
    spec["task"].update(block_len=26, n_blocks=64)
    spec["train"]["batch_size"] = 65536
    write_spec(tmp_path / "spec.json", spec)
    proc = _run("train", "--spec", tmp_path / "spec.json", "--out-dir", tmp_path / "out")
    _assert_one_clear_line(proc, tmp_path / "spec.json", "train.batch_size: a training job of "
                           "two_layer seed 0 needs about ")
    assert "(batches of 65536 x 1664 tokens, 2 layer(s) of 4 head(s), d_model 32)" in proc.stderr
    assert "this machine gives a process; lower train.batch_size" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_stacked_training_refuses_seeds_that_fit_alone_but_not_together(_run, tmp_path, monkeypatch):
    from inductionlab.core import bounds

    specs = []
    for seed in (0, 1, 2, 3):
        spec = tiny_spec(seed=seed, steps=2)
        spec["train"]["batch_size"] = 2048
        write_spec(tmp_path / f"s{seed}" / "spec.json", spec)
        specs.append(tmp_path / f"s{seed}" / "spec.json")
    one = bounds.training_bytes({"d_model": 32, "n_heads": 4, "n_layers": 2},
                                {"vocab_size": 26, "seq_len": 24}, spec["train"])
    monkeypatch.setattr(bounds, "available_memory", lambda: int(1.5 * one))
    proc = _run("train-stacked", "--specs", *specs)
    _assert_one_clear_line(proc, specs[0], "train.seeds_per_job: a training job of 4 seeds of "
                           "two_layer needs about ")
    assert not (tmp_path / "s0" / "model.pt").exists()


@pytest.fixture(scope="module")
def variable_period_model(tmp_path_factory):
    """A model trained for two steps on a variable_period task named ``vp``."""
    root = tmp_path_factory.mktemp("vp")
    spec = tiny_spec(steps=2)
    spec["task"] = {"name": "vp", "kind": "variable_period", "vocab_size": 26, "seq_len": 24,
                    "min_period": 3, "max_period": 8}
    spec["train"].update(eval_every=1, n_checkpoints=2)
    train(spec, root / "model")
    return root / "model" / "model.pt"


def test_behaviour_refuses_a_floor_or_a_sample_that_cannot_fit(_run, variable_period_model,
                                                               tmp_path, monkeypatch):
    """Refused before the samples, the exact floor or any pass is allocated: the floor of
    periods 3..8 (Bell(8) = 4,140 patterns) or 65,536 sequences."""
    from inductionlab.core import bounds
    from inductionlab.core.tasks import task_from_dict

    task = tiny_spec()["task"]
    settings = tmp_path / "behaviour.json"
    out = tmp_path / "out"
    args = ("behaviour", "--model", variable_period_model, "--settings", settings,
            "--completions", out / "a", "--failure-modes", out / "b", "--attention", out / "c.npz",
            "--head-scores", out / "d", "--behaviour", out / "e")
    few, many = (stage_settings("behaviour", task, behaviour={"n_sequences": n}) for n in (16, 65536))
    vp = task_from_dict({"kind": "variable_period", "min_period": 3, "max_period": 8})
    floor = bounds.BASE + int(bounds.SLACK * bounds.task_floor_bytes(vp))
    monkeypatch.setattr(bounds, "available_memory", lambda: floor - 2**20)
    settings.write_text(json.dumps(few))
    proc = _run(*args)
    _assert_one_clear_line(proc, variable_period_model, "tasks.vp.max_period: the exact floor of "
                           "task 'vp' (variable_period, 24 tokens) needs about ")
    monkeypatch.setattr(bounds, "available_memory", lambda: 4 * 2**30)
    settings.write_text(json.dumps(many))
    proc = _run(*args)
    _assert_one_clear_line(proc, variable_period_model, "behaviour.n_sequences: the behaviour job "
                           "of two_layer seed 0 on task 'vp' needs about ")
    assert "lower behaviour.n_sequences" in proc.stderr and not out.exists()
