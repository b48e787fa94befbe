"""`inductionlab check-config` refuses, before any job, every config the workflow would
reject or fail on, naming the key; the Snakefile runs the same check. A schema's
experiment's cross-field check is one its own package registers, never code a file names."""
import subprocess

import pytest
import yaml

from helpers import EXTRA_STAGE, ROOT, snakemake_command
from inductionlab import experiments
from inductionlab.cli import main
from inductionlab.config import SETTINGS_CHECKS, ConfigError, check_workflow_config, read_yaml

BASE = {"seeds": [0], "variants": {"one_layer": {"n_layers": 1}, "two_layer": {"n_layers": 2}}}
SHORTCUT = "experiments:\n  positional_shortcut: {}\n"
RULES = str(EXTRA_STAGE)


@pytest.fixture
def check(tmp_path, monkeypatch, capsys):
    """check-config of BASE with the YAML text ``overlay`` over it, in this process:
    (exit code, standard error)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(BASE))

    def run(overlay: str):
        (tmp_path / "overlay.yaml").write_text(overlay)
        capsys.readouterr()
        code = main(["check-config", "base.yaml", "overlay.yaml"])
        return code, capsys.readouterr().err
    return run


CASES = {
    "reserved name": ("variants:\n  settings: {n_layers: 1}\n", "variants.settings: 'settings' is reserved"),
    "the models' figures": ("variants:\n  models: {n_layers: 1}\n", "variants.models: 'models' is reserved"),
    "integer key": ("variants:\n  1: {n_layers: 1}\n", "variants: key 1 is an integer"),
    "a registered model's name": (f"variants:\n  one_layer_learned: {{n_layers: 1}}\n{SHORTCUT}",
                                  "variants.one_layer_learned: is also the name of the positional-shortcut"),
    "a retrained model's name": ("variants:\n  one_layer_standard: {n_layers: 1}\n"
                                 "experiments:\n  positional_table: {variants: [one_layer]}\n",
                                 "variants.one_layer_standard: 'one_layer_standard' is also the name"),
    "an experiment's name": (f"variants:\n  positional_shortcut: {{n_layers: 1}}\n{SHORTCUT}",
                             "variants.positional_shortcut: 'positional_shortcut' is the name of an experiment"),
    "a name too long for a file system": (f"variants:\n  {'a' * 300}: {{n_layers: 1}}\n",
                                          "is too long (a model's name is a folder"),
    "not a rule file": ("extra_rules: [base.yaml]\n", "extra_rules.0: 'base.yaml' is not a rule file"),
    "a rule file that does not parse": ("extra_rules: [bad.smk]\n", "extra_rules.0: 'bad.smk' does not parse"),
    "the same rule file twice": (f"extra_rules: [{RULES}, {RULES}]\n",
                                 "extra_rules.1: '" + RULES + "' is the same file as extra_rules.0"),
    "an experiment's rule file": (f"extra_rules: [{experiments.available()['formation'].rules}]\n",
                                  "is the rules of experiment 'formation', included when it is switched on"),
    "a key given twice on one line": ("train: {steps: 10, steps: 20}\n",
                                      "overlay.yaml:1:20: duplicate key 'steps' (first given on line 1, column 9)"),
    "a duplicate key": ("seeds: [0]\nseeds: [1, 2]\n", "overlay.yaml:2:1: duplicate key 'seeds' (first given on line 1)"),
    "a nested duplicate key": ("train:\n  steps: 10\n  steps: 20\n", "overlay.yaml:3:3: duplicate key 'steps'"),
    "an unknown experiment": ("experiments:\n  positional_shortcutt: {}\n",
                              "experiments.positional_shortcutt: no experiment of that name"),
    "a prompt that upper-cases to two letters": ("behaviour:\n  prompts:\n    - {prompt: ABCDEFABCDEﬆ}\n",
                                                 "behaviour.prompts.0.prompt: prompt 'ABCDEFABCDEﬆ': character(s) ['ﬆ']"),
    "a letter Unicode upper-cases to a task letter": (
        "behaviour:\n  prompts:\n    - {prompt: ıBCDEFıBCDEF}\n",
        "behaviour.prompts.0.prompt: prompt 'ıBCDEFıBCDEF': character(s) ['ı']"),
    "a write-up completion of no variant": (
        "behaviour:\n  prompts:\n    - {prompt: ABCDEF, write_up: {two_layr: ABCDEF}}\n",
        "behaviour.prompts.0.write_up.two_layr: no variant of that name"),
    "an experiment's prompt likewise": ("experiments:\n  positional_shortcut: {prompts: [ABCDEFABCDEﬆ]}\n",
                                        "experiments.positional_shortcut.prompts.0"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_check_config_refuses_what_the_workflow_would_reject(check, tmp_path, case):
    overlay, words = CASES[case]
    (tmp_path / "bad.smk").write_text("rule x:\n    input: 'a'\n    output 'b'\n")
    code, err = check(overlay)
    assert code == 1 and "Traceback" not in err, err
    assert words in err, err


def test_a_valid_overlay_with_every_experiment_passes(check):
    code, err = check("experiments:\n  positional_shortcut: {}\n"
                      "  positional_table: {variants: [one_layer, two_layer]}\n")
    assert code == 0, err


def test_check_config_of_something_not_a_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["check-config", "/dev/null"]) == 1
    assert "/dev/null: is not a regular file, so not a config file" in capsys.readouterr().err


def test_an_experiments_check_is_the_one_its_package_registers():
    found = experiments.available()
    assert set(found) >= {"positional_shortcut", "positional_table"}
    assert SETTINGS_CHECKS["positional_table"].__module__ == "inductionlab.experiments.positional_table.settings"
    assert found["positional_shortcut"].rules.is_file() and found["positional_shortcut"].schema.is_file()


def test_settings_of_no_experiment_folder_are_refused_and_nothing_runs(tmp_path):
    (tmp_path / "rce.smk").write_text("X = 1\n")
    (tmp_path / "rce.schema.yaml").write_text("type: object\nx-check: os:system\n")
    marker = tmp_path / "ran"
    config = {**BASE, "extra_rules": [str(tmp_path / "rce.smk")],
              "experiments": {"rce": {"x": f"touch {marker}"}}}
    with pytest.raises(ConfigError, match="experiments.rce: no experiment of that name"):
        check_workflow_config(config, ROOT, experiments.available(), cwd=tmp_path)
    assert not marker.exists()


def test_read_yaml_refuses_a_key_given_twice(tmp_path):
    (tmp_path / "c.yaml").write_text("variants:\n  a: {n_layers: 1}\n  a: {n_layers: 2}\n")
    with pytest.raises(ConfigError, match=r"c.yaml:3:3: duplicate key 'a'"):
        read_yaml(tmp_path / "c.yaml")


@pytest.mark.parametrize("overlay,words", [
    ("seeds: [0]\nseeds: [1, 2]\n", "overlay.yaml:2:1: duplicate key 'seeds'"),
    ("variants:\n  1: {n_layers: 1}\n", "variants: key 1 is an integer"),
])
def test_the_workflow_refuses_them_before_any_job(tmp_path, overlay, words):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(BASE))
    (tmp_path / "overlay.yaml").write_text(overlay)
    proc = subprocess.run(snakemake_command(tmp_path, "-n", "--configfile", "overlay.yaml"),
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert words in proc.stderr
    assert not (tmp_path / "results").exists()


def test_an_experiment_is_switched_off_by_false(tmp_path):
    config = {**BASE, "experiments": {"positional_shortcut": False,
                                      "positional_table": {"variants": ["one_layer"]}}}
    rules = check_workflow_config(config, ROOT, experiments.available(), cwd=tmp_path)
    assert [p.split("/")[-2] for p in rules] == ["positional_table"]
    assert "positional_shortcut" not in config["experiments"]
    assert config["experiments"]["positional_table"]["pos_encoding"] == "standard"  # defaults filled
