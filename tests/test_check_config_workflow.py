"""`inductionlab check-config` gives the answer `snakemake -n` gives: it reads the Snakefile
as Snakemake does, so what the workflow refuses while reading its rules (a model registered
by an experiment or a rule file under a taken name, with a bad field, twice, ...) is refused
by both, naming the same problem; and it counts every model that is trained, the ones the
experiments register too. Without a config.yaml both say so, and how to point at one."""
import re
import subprocess

import pytest
import yaml

from helpers import snakemake_command
from inductionlab.cli import main

BASE = {"seeds": [0], "variants": {"one_layer": {"n_layers": 1}, "two_layer": {"n_layers": 2}}}

# a rule file of extra_rules, registering models, and what both must say about it
RULE_FILES = {
    "a registered model named as a variant": (
        "register_model('two_layer', 'one_layer', pos_encoding='standard')\n",
        "model 'two_layer' is already a variant of the config"),
    "an unknown model field": (
        "register_model('wide', 'one_layer', width=64)\n", "unknown model field(s) ['width']"),
    "a bad model value": (
        "register_model('smeared_l3', 'one_layer', smear_layers=[3])\n",
        "smear_layers=[3]: layer(s) [3] do not exist"),
    "a base that is no variant": (
        "register_model('deep', 'three_layer', n_layers=4)\n", "base variant 'three_layer' is not in"),
    "a model registered twice, differently": (
        "register_model('x', 'one_layer', pos_encoding='standard')\n"
        "register_model('x', 'one_layer', pos_encoding='learned')\n",
        "model 'x' is registered twice with different changes"),
    "a rule file that fails while it is read": (
        "X = undefined_name + 1\n", "name 'undefined_name' is not defined"),
    "a rule that writes outside results/": (
        "rule escape:\n    output: '../escape.csv'\n    shell: 'touch {output}'\n",
        "rule escape: its output '../escape.csv' lies outside the folders the workflow writes in"),
    "a model named as an experiment's": (
        "register_model('one_layer_learned', 'one_layer', pos_encoding='standard')\n",
        "model 'one_layer_learned' is registered twice with different changes"),
}
EXPERIMENT_SETTINGS = {
    "an experiment's model named as a variant": (
        {"variants": {"one_layer_learned": {"n_layers": 1}}, "experiments": {"positional_shortcut": {}}},
        "variants.one_layer_learned: is also the name of the positional-shortcut"),
    "a retrained variant with the study's table already": (
        {"variants": {"one_layer": {"n_layers": 1, "pos_encoding": "standard"}},
         "experiments": {"positional_table": {"variants": ["one_layer"]}}},
        "experiments.positional_table.pos_encoding: variant 'one_layer' has pos_encoding 'standard'"),
    "a base variant that is missing": (
        {"experiments": {"positional_shortcut": {"base_variant": "one_layer_smeared"}}},
        "experiments.positional_shortcut.base_variant: 'one_layer_smeared' is not in variants"),
}


def both(work, overlay: dict, capsys):
    """(check-config's exit code and output, snakemake -n's) in ``work``, with
    BASE as config.yaml and ``overlay`` as a --configfile over it."""
    (work / "config.yaml").write_text(yaml.safe_dump(BASE))
    (work / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    capsys.readouterr()
    code = main(["check-config", "overlay.yaml"])
    checked = capsys.readouterr()
    proc = subprocess.run(snakemake_command(work, "-n", "--configfile", "overlay.yaml"),
                          cwd=work, capture_output=True, text=True, timeout=300)
    return (code, checked.err + checked.out), (proc.returncode, proc.stderr + proc.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(RULE_FILES) + list(EXPERIMENT_SETTINGS))
def test_check_config_and_the_workflow_give_the_same_answer(tmp_path, monkeypatch, capsys, case):
    monkeypatch.chdir(tmp_path)
    if case in RULE_FILES:
        text, words = RULE_FILES[case]
        (tmp_path / "models.smk").write_text(text)
        overlay = {"extra_rules": ["models.smk"], "experiments": {"positional_shortcut": {}}}
    else:
        overlay, words = EXPERIMENT_SETTINGS[case]
    (code, checked), (smk_code, smk_err) = both(tmp_path, overlay, capsys)
    assert smk_code == 1 and words in smk_err, smk_err
    assert code == 1 and words in checked and "Traceback" not in checked, checked
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
def test_a_directory_where_the_workflow_writes_a_file_is_refused_by_both(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "one_layer" / "seed0" / "weights.npz").mkdir(parents=True)
    (code, checked), (smk_code, smk_err) = both(tmp_path, {}, capsys)
    words = "results/one_layer/seed0/weights.npz is a directory"
    assert smk_code == 1 and words in smk_err, smk_err
    assert code == 1 and words in checked, checked


@pytest.mark.slow
def test_the_model_count_has_every_model_trained(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models.smk").write_text("register_model('wide', 'one_layer', d_model=64)\n")
    overlay = {"seeds": [0, 1], "extra_rules": ["models.smk"],
               "experiments": {"positional_shortcut": {}, "positional_table": {"variants": ["one_layer", "two_layer"]}}}
    (code, checked), (smk_code, smk_err) = both(tmp_path, overlay, capsys)
    assert smk_code == 0, smk_err
    # one_layer, two_layer; one_layer_learned, one_layer_standard, two_layer_standard, wide
    assert code == 0 and ("valid; 2 variant(s) + 4 registered model(s) = 6 model(s) x 2 seed(s) "
                          "= 12 model(s) trained") in checked, checked
    capsys.readouterr()
    assert main(["check-config"]) == 0  # the variants alone
    assert "valid; 2 variant(s) x 1 seed(s) = 2 model(s) trained;" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("overlay", [None, "seeds: [0]\n"])
def test_no_config_yaml_is_named_by_both(tmp_path, monkeypatch, capsys, overlay):
    monkeypatch.chdir(tmp_path)
    args = []
    if overlay:
        (tmp_path / "overlay.yaml").write_text(overlay)
        args = ["overlay.yaml"]
    capsys.readouterr()
    assert main(["check-config", *args]) == 1
    err = capsys.readouterr().err
    words = f"config.yaml was not found in {tmp_path.resolve()}"
    assert words in err and "or give a full config as FILE" in err and "'variants'" not in err, err
    proc = subprocess.run(snakemake_command(tmp_path, "-n", *(["--configfile", *args] if args else [])),
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert words in proc.stderr and "--configfile FILE" in proc.stderr and "'variants'" not in proc.stderr
    if overlay:
        assert "holds no variants (an overlay goes over config.yaml)" in err


@pytest.mark.slow
def test_some_models_only_by_a_config_that_replaces_config_yaml(tmp_path, monkeypatch, capsys):
    """An overlay merges mappings, so it cannot drop a variant; a full config given with
    --replace-workflow-config replaces config.yaml, for snakemake and check-config alike."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(BASE))
    (tmp_path / "two_layer.yaml").write_text(yaml.safe_dump({**BASE, "variants": {"two_layer": {"n_layers": 2}}}))
    jobs = {}
    for name, extra in (("merged", []), ("replaced", ["--replace-workflow-config"])):
        proc = subprocess.run(snakemake_command(tmp_path, "-n", "--configfile", "two_layer.yaml", *extra),
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        jobs[name] = int(re.search(r"^train\s+(\d+)$", proc.stdout, flags=re.M).group(1))
    assert jobs == {"merged": 2, "replaced": 1}
    capsys.readouterr()
    assert main(["check-config", "two_layer.yaml"]) == 0
    assert "valid; 2 variant(s) x 1 seed(s) = 2 model(s) trained" in capsys.readouterr().out
    assert main(["check-config", "--replace-workflow-config", "two_layer.yaml"]) == 0
    assert "valid; 1 variant(s) x 1 seed(s) = 1 model(s) trained" in capsys.readouterr().out


def test_config_values_on_the_command_line_are_read_as_a_config_file_reads_them():
    from inductionlab.config_overrides import retype_overrides

    # what Snakemake makes of --config "seeds=[0,1]" 'train={steps: 100}' report.title=x
    given = {"seeds": ["0", "1"], "train": {"steps": "100"}, "report": {"title": "1e-3 x"}}
    config = {"seeds": ["0", "1"], "train": {"steps": "100", "lr": 0.001},
              "report": {"title": "1e-3 x"}}
    assert retype_overrides(config, given) == {
        "seeds": [0, 1], "train": {"steps": 100, "lr": 0.001}, "report": {"title": "1e-3 x"}}


@pytest.mark.slow
def test_snakemake_takes_the_seeds_typed_on_its_command_line(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(BASE))
    proc = subprocess.run(snakemake_command(tmp_path, "-n", "--config", "seeds=[0,1,2]",
                                            "train={steps: 40, eval_every: 10}"),
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^train\s+6$", proc.stdout, flags=re.M), proc.stdout
