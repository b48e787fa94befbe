"""`inductionlab check-config` and `snakemake -n` give the same answer on config files that
are not plain data or that would fail later: each case is a config.yaml (tests/config.tiny.yaml
unless the case gives one) with files over it, refused by both with the same words, or
accepted by both, never with a traceback. And reading a config file is bounded: aliases
that expand without end are refused at once, and a YTE template never runs."""
import json
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers import TINY_CONFIG, snakemake_command
from inductionlab.cli import main
from inductionlab.config import MAX_VALUES, ConfigError, read_yaml

# a YTE value that leaves a file behind if it is ever run
RUNS = "\"?__import__('pathlib').Path('ran').touch() or 200\""
YTE = f"__use_yte__: true\ntrain:\n  steps: {RUNS}\n"


def laughs(levels: int = 9) -> str:
    """YAML whose last anchor stands for 9 ** levels values through nested aliases."""
    lines = ["lol:", "  a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


# case -> (files written beside config.yaml, the --configfile files, what both say; None:
# both accept). A case's "config.yaml" replaces the tiny config.
CASES = {
    "a YTE template as config.yaml": (
        {"config.yaml": "__use_yte__: true\n"
                        + TINY_CONFIG.read_text().replace("  steps: 60\n", f"  steps: {RUNS}\n")}, [],
        "config.yaml: __use_yte__ would have Snakemake run this file as a YTE template"),
    "a YTE template as an overlay": (
        {"o.yaml": YTE}, ["o.yaml"],
        "o.yaml: __use_yte__ would have Snakemake run this file as a YTE template"),
    "aliases expanding to 9 ** 9 values": (
        {"o.yaml": laughs()}, ["o.yaml"],
        f"o.yaml:7:7: this value stands for more than {MAX_VALUES:,} values"),
    "a key given twice in flow style": (
        {"o.yaml": "variants: {two_layer: {n_layers: 2}, two_layer: {n_layers: 1}}\n"}, ["o.yaml"],
        "o.yaml:1:38: duplicate key 'two_layer' (first given on line 1, column 12)"),
    "a key given twice in JSON": (
        {"o.json": '{"train": {"steps": 100, "steps": 200}}'}, ["o.json"],
        "o.json:1:26: duplicate key 'steps' (first given on line 1, column 12)"),
    "a JSON number with an exponent": ({"o.json": '{"train": {"lr": 1e-3}}'}, ["o.json"], None),
    "a YAML number with an exponent (YAML 1.1 text)": (
        {"o.yaml": "train: {lr: 1e-3}\n"}, ["o.yaml"],
        "train.lr: '1e-3' is text, not a number: YAML reads an exponent as a number only "
        "with a decimal point and a sign; write 0.001"),
    "a model name Snakemake takes for a runaway wildcard": (
        {"o.yaml": "variants:\n  model_00000000000000000000: {n_layers: 1}\n"}, ["o.yaml"],
        "variants.model_00000000000000000000: 'model_00000000000000000000' ends in '0' "
        "repeated 20 times or more"),
    "an empty config.yaml": (
        {"config.yaml": "# nothing yet\n"}, [],
        "config.yaml: holds no keys (it is empty, or only comments); a config file must be "
        "given as JSON or YAML with keys at top level"),
    # Snakemake's command line reads an overlay before the workflow does, in its own words
    "a comment-only overlay": (
        {"o.yaml": "# nothing yet\n"}, ["o.yaml"], "must be given as JSON or YAML with keys at top level"),
    "a rule file the Snakefile includes": (
        {"o.yaml": "extra_rules: [workflow/rules/report.smk]\n"}, ["o.yaml"],
        "extra_rules.0: 'workflow/rules/report.smk' is a rule file the Snakefile includes itself"),
    "a stage's rule file": (
        {"o.yaml": "extra_rules: [src/inductionlab/stages/train/rules.smk]\n"}, ["o.yaml"],
        "extra_rules.0: 'src/inductionlab/stages/train/rules.smk' is the rules of the train stage, "
        "which the Snakefile includes itself"),
    "too few checkpoints for the phase-change fit": (
        {"o.yaml": "train: {n_checkpoints: 2}\n"}, ["o.yaml"],
        "train.n_checkpoints: 2 is less than the minimum of 6 (the dynamics stage fits a "
        "logistic curve"),
    "too few steps for five checkpoints": (
        {"o.yaml": "train: {steps: 3, eval_every: 1}\n"}, ["o.yaml"],
        "train.steps: 3 step(s) leave room for 4 checkpoints (steps 0, 1, 2, 3)"),
    "a training batch no machine holds": (
        {"o.yaml": "train: {batch_size: 65536}\n"
                   "variants: {huge: {n_layers: 12, d_model: 4096, n_heads: 256}}\n"}, ["o.yaml"],
        "train.batch_size: a training job of variant 'huge' needs about"),
    "the formation atlas switched on": (
        {"o.yaml": "experiments:\n  atlas:\n    contexts: [12, 24]\n"
                   "    interventions: [{kind: clamp, part: A, reference: trained}]\n"}, ["o.yaml"],
        None),
    "an atlas context too short for two copies of a period": (
        {"o.yaml": "experiments: {atlas: {contexts: [4, 24]}}\n"}, ["o.yaml"],
        "experiments.atlas.contexts: 4 tokens do not hold two copies of min_period 3; use at least 6"),
    "an atlas intervention that no variant of the grid can take": (
        {"o.yaml": "experiments:\n  atlas:\n    variants: [one_layer_smeared]\n"
                   "    interventions: [{kind: freeze, part: layer0}]\n"}, ["o.yaml"],
        "experiments.atlas.interventions[0].part: no variant of ['one_layer_smeared'] has part "
        "'layer0' (freeze needs n_layers >= 2)"),
    "an analysis pass no machine holds": (
        {"o.yaml": "task: {n_blocks: 64}\nbehaviour: {n_sequences: 65536}\n"}, ["o.yaml"],
        "behaviour.n_sequences: scoring 65536 sequences of variant 'one_layer' in one pass"),
}


def _lay_out(folder, case):
    folder.mkdir(parents=True)
    files, _, _ = CASES[case]
    shutil.copy(TINY_CONFIG, folder / "config.yaml")
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory):
    """`snakemake -n` of every case, a few at once: case -> (exit code, output)."""
    root = tmp_path_factory.mktemp("agreement")

    def dry_run(case):
        work = _lay_out(root / f"case{list(CASES).index(case)}", case)
        overlays = CASES[case][1]
        proc = subprocess.run(snakemake_command(work, "-n", *(["--configfile", *overlays] if overlays else [])),
                              cwd=work, capture_output=True, text=True, timeout=300)
        return case, (proc.returncode, proc.stderr + proc.stdout, work)

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(pool.map(dry_run, CASES))


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_check_config_and_snakemake_agree(case, dry_runs, tmp_path, monkeypatch, capsys):
    work = _lay_out(tmp_path / "check", case)
    monkeypatch.chdir(work)
    capsys.readouterr()
    code = main(["check-config", *CASES[case][1]])
    out = capsys.readouterr()
    checked = out.err + out.out
    smk_code, smk_out, smk_work = dry_runs[case]
    words = CASES[case][2]
    assert "Traceback" not in checked and "Traceback" not in smk_out, (checked, smk_out)
    if words is None:
        assert (code, smk_code) == (0, 0), (checked, smk_out)
    else:
        assert (code, smk_code) == (1, 1), (checked, smk_out)
        assert words in checked, checked
        assert words in smk_out, smk_out
    # check-config never runs a template; neither does the workflow reading its config.yaml
    # (Snakemake's command line itself runs YTE in a --configfile before the workflow starts)
    assert not (work / "ran").exists()
    if not CASES[case][1]:
        assert not (smk_work / "ran").exists()
    assert not (smk_work / "results").exists()


def test_aliases_expanding_without_bound_are_refused_at_once(tmp_path):
    """Nine levels of nine aliases stand for 387 million values; refused while the file is
    composed, before anything walks the data (a bound on a hang, not a speed target)."""
    (tmp_path / "lol.yaml").write_text(laughs())
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=r"lol.yaml:7:7: this value stands for more than 100,000"):
        read_yaml(tmp_path / "lol.yaml")
    assert time.perf_counter() - start < 1.0
    (tmp_path / "cycle.yaml").write_text("a: &a [1, *a]\n")
    with pytest.raises(ConfigError, match=r"cycle.yaml:1:4: an alias refers to a value it is part of"):
        read_yaml(tmp_path / "cycle.yaml")
    # a few aliases, as people write them, are fine
    (tmp_path / "ok.yaml").write_text("base: &b {n_layers: 2}\nvariants:\n  x:\n    <<: *b\n    n_layers: 3\n")
    assert read_yaml(tmp_path / "ok.yaml")["variants"] == {"x": {"n_layers": 3}}


def test_a_yte_template_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text(YTE)
    with pytest.raises(ConfigError, match="c.yaml: __use_yte__ would have Snakemake run this file"):
        read_yaml("c.yaml")
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("text,words", [
    ("a: !!python/name:os.system\n", "x.yaml:1:4: the tag !!python/name:os.system asks for "
                                     "something other than data"),
    ('{"a": 1, "a": 2}', "x.yaml:1:10: duplicate key 'a'"),  # JSON whatever the file's name
    ("[1, 2]\n", "x.yaml: a config file must be given as JSON or YAML with keys at top level"),
    ("null\n", "x.yaml: holds no keys"),
    ("a: " + "[" * 50_000 + "]" * 50_000 + "\n", "x.yaml: nested too deeply"),
])
def test_read_yaml_takes_data_only(tmp_path, text, words):
    (tmp_path / "x.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        read_yaml(tmp_path / "x.yaml")
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_json_file_reads_as_snakemake_reads_it(tmp_path):
    from snakemake.common.configfile import load_configfile

    document = {"train": {"lr": 1e-3, "weight_decay": 1.5e-1}, "seeds": [0, 1]}
    for name in ("c.json", "c.yaml"):  # Snakemake tries JSON first, whatever the name
        (tmp_path / name).write_text(json.dumps(document))
        assert read_yaml(tmp_path / name) == load_configfile(tmp_path / name) == document
    (tmp_path / "y.yaml").write_text("train: {lr: 1e-3, weight_decay: 1.0e-1}\n")
    assert read_yaml(tmp_path / "y.yaml") == load_configfile(tmp_path / "y.yaml") == {
        "train": {"lr": "1e-3", "weight_decay": 0.1}}
