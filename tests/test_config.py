import copy
import re
import subprocess
import sys

import pytest
import yaml

from helpers import ROOT, SCHEMA
from inductionlab.config import ConfigError, load_config, validate_config
from inductionlab.core.spec import make_spec, model_config

GOOD = {"variants": {"a": {"n_layers": 2}}}


def _check(config):
    return validate_config(copy.deepcopy(config), SCHEMA)


def test_defaults_are_filled():
    config = _check(GOOD)
    assert config["seeds"] == [0, 1, 2, 3, 4]
    assert config["task"] == {"vocab_size": 26, "block_len": 6, "n_blocks": 4}
    assert config["train"]["steps"] == 10000 and config["train"]["batch_size"] == 256
    assert config["variants"]["a"] == {"n_layers": 2, "d_model": 32, "n_heads": 4,
                                       "pos_encoding": "original", "smear_layers": [],
                                       "smear_form": "per_position", "task": "write_up"}


def test_default_config_is_the_write_ups_three_models():
    config = load_config(ROOT / "config.yaml", SCHEMA)
    assert list(config["variants"]) == ["one_layer", "one_layer_smeared", "two_layer"]
    assert config["seeds"] == [0, 1, 2, 3, 4] and config["train"]["steps"] == 10000
    cfg = model_config(make_spec(config, "one_layer_smeared", 0))
    assert cfg.smear_layers == (0,) and cfg.n_layers == 1 and cfg.seq_len == 24


@pytest.mark.parametrize("change,key", [
    ({"bogus": 1}, "bogus"),
    ({"train": {"steps": -5}}, "train.steps"),
    ({"train": {"lr": "fast"}}, "train.lr"),
    ({"train": {"stepz": 10}}, "train.stepz"),
    ({"variants": {"a": {"n_heads": 3}}}, "variants.a.d_model"),
    ({"variants": {"a": {"n_layer": 2}}}, "variants.a.n_layer"),
    ({"variants": {"a": {"pos_encoding": "rotary"}}}, "variants.a.pos_encoding"),
    ({"variants": {"a": {"smear_layers": [1]}}}, "variants.a.smear_layers"),
    ({"seeds": [0, "one"]}, "seeds.1"),
    ({"seeds": []}, "seeds"),
    ({"variants": {}}, "variants"),
])
def test_bad_config_names_the_key(change, key):
    config = {**copy.deepcopy(GOOD), **change}
    with pytest.raises(ConfigError) as err:
        _check(config)
    assert key in str(err.value)


def test_make_spec_rejects_unknown_variant():
    with pytest.raises(KeyError, match="nope"):
        make_spec(_check(GOOD), "nope", 0)


def test_snakemake_stops_on_bad_config_before_any_job(tmp_path):
    bad = {"variants": {"a": {"n_heads": 3}}, "train": {"steps": 0}}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--configfile",
         "bad.yaml", "--cores", "1", "-d", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "train.steps" in proc.stderr + proc.stdout
    assert not (tmp_path / "results").exists()


# ---------------------------------------------------------------- extra rule files

def test_extra_rule_files_are_found_in_the_working_directory_then_beside_the_workflow(tmp_path):
    from inductionlab.config import extra_rule_files

    work, workflow = tmp_path / "work", tmp_path / "workflow"
    for folder, name in ((work, "local.smk"), (workflow, "shipped.smk"), (work, "both.smk"),
                         (workflow, "both.smk")):
        folder.mkdir(exist_ok=True)
        (folder / name).write_text("")
    absolute = tmp_path / "elsewhere.smk"
    absolute.write_text("")
    found = extra_rule_files(["local.smk", "shipped.smk", "both.smk", str(absolute)], workflow, cwd=work)
    assert found == [str(work / "local.smk"), str(workflow / "shipped.smk"), str(work / "both.smk"),
                     str(absolute)]
    assert extra_rule_files([], workflow, cwd=work) == []


def test_an_extra_rule_file_found_nowhere_names_the_entry(tmp_path):
    from inductionlab.config import extra_rule_files

    (tmp_path / "ok.smk").write_text("")
    with pytest.raises(ConfigError) as err:
        extra_rule_files(["ok.smk", "rules/missing.smk"], tmp_path / "workflow", cwd=tmp_path)
    assert "extra_rules.1" in str(err.value) and "rules/missing.smk" in str(err.value)
    assert "extra_rules.0" not in str(err.value)


def test_experiment_settings_are_free_form_by_name_in_the_main_schema():
    config = _check({**GOOD, "experiments": {"positional_shortcut": {"prompt_len": 12}}})
    assert config["experiments"] == {"positional_shortcut": {"prompt_len": 12}}
    assert _check(GOOD)["experiments"] == {}
    with pytest.raises(ConfigError, match="experiments"):
        _check({**GOOD, "experiments": {"positional_shortcut": [1, 2]}})


# ---------------------------------------------------------------- the schema is the contract


@pytest.mark.parametrize("change,expected", [
    ({"train": {"lr": float("nan")}}, "train.lr: nan is not a finite number"),
    ({"train": {"lr": float("inf")}}, "train.lr: inf is not a finite number"),
    ({"train": {"weight_decay": float("nan")}}, "train.weight_decay: nan is not a finite"),
    ({"train": {"batch_size": 64.0}}, "train.batch_size: 64.0 is a float; write an integer (64)"),
    ({"variants": {"a": {"d_model": 32.0}}}, "variants.a.d_model: 32.0 is a float"),
    ({"train": {"eval_every": 20.0}}, "train.eval_every: 20.0 is a float"),
    ({"train": {"steps": True}}, "train.steps"),
    ({"seeds": [0, 2 ** 31]}, "seeds.1: 2147483648 is greater than the maximum of 2147483647 (seeds are"),
    ({"seeds": [123456789012345678901234]}, "seeds.0"),
    ({"train": {"steps": 10 ** 12}}, "train.steps: 1000000000000 is greater than the maximum of 1000000 ("),
    ({"train": {"batch_size": 10 ** 7}}, "train.batch_size"),
    ({"behaviour": {"n_sequences": 10 ** 7}}, "behaviour.n_sequences"),
    ({"task": {"vocab_size": 4}}, "task.vocab_size: 4 letters are fewer than task.block_len = 6"),
    ({"behaviour": {"roles": {"above_chance": -0.1}}}, "behaviour.roles.above_chance"),
    ({"behaviour": {"roles": {"above_chance": 1.5}}}, "behaviour.roles.above_chance"),
    ({"behaviour": {"roles": {"times_chance": 0.5}}}, "behaviour.roles.times_chance"),
    ({"dynamics": {"eval_size": 0}}, "dynamics.eval_size"),
    ({"dynamics": {"drop_smoothing": 0.25}}, "drop_smoothing"),
    ({"dynamics": {"min_induction_gain": 0.1}}, "min_induction_gain"),
    ({"behaviour": {"shared_prefix_len": 6}}, "behaviour.shared_prefix_len: 6 must be between 1 and"),
    ({"task": {"vocab_size": 8}, "behaviour": {"period_lengths": [10]}},
     "behaviour.period_lengths: 10 must be between 2 and 8"),
])
def test_the_schema_refuses_what_would_fail_later(change, expected):
    config = {**copy.deepcopy(GOOD), **change}
    with pytest.raises(ConfigError) as err:
        _check(config)
    assert expected in str(err.value)


def test_every_maximum_says_why():
    def walk(node, path=()):
        if isinstance(node, dict):
            if "maximum" in node:
                yield path, node
            for k, v in node.items():
                yield from walk(v, (*path, k))
        elif isinstance(node, list):
            for k, v in enumerate(node):
                yield from walk(v, (*path, k))
    # the workflow's schema with every stage's section in it, and each experiment's
    from inductionlab.config import read_schema

    schemas = {s.name: read_schema(s) for s in (ROOT / "workflow" / "schemas").glob("*.schema.yaml")}
    schemas |= {str(s.relative_to(ROOT)): yaml.safe_load(s.read_text())
                for s in (ROOT / "src" / "inductionlab" / "experiments").glob("*/schema.yaml")}
    found = [(name, path, node) for name, doc in sorted(schemas.items()) for path, node in walk(doc)]
    assert len(found) > 25
    assert [(name, path) for name, path, node in found if not node.get("why")] == []


def _check_config(*args, cwd):
    return subprocess.run([sys.executable, "-m", "inductionlab.cli", "check-config", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_check_config_runs_the_workflows_check_from_any_directory(tmp_path):
    base = yaml.safe_load((ROOT / "config.yaml").read_text())
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    ok = _check_config(tmp_path / "base.yaml", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    # the experiments' models counted too (exact counts: tests/test_check_config_workflow.py)
    assert re.search(r"valid; 3 variant\(s\) \+ \d+ registered model\(s\) = \d+ model\(s\) x 5 "
                     r"seed\(s\) = \d+ model\(s\) trained; experiments and extra rules: .*"
                     r"positional_shortcut", ok.stdout), ok.stdout
    # an overlay on top, as `snakemake --configfile base.yaml overlay.yaml`
    (tmp_path / "seeds.yaml").write_text("seeds: [7]\n")
    assert "x 1 seed(s)" in _check_config(tmp_path / "base.yaml", tmp_path / "seeds.yaml", cwd=tmp_path).stdout
    bad = {
        "missing_rule": {"extra_rules": ["workflow/rules/extra/nowhere.smk"]},
        "unknown_experiment_key": {"experiments": {"positional_shortcut": {"bogus": 1}}},
        "bad_experiment_prompt": {"experiments": {"positional_shortcut": {"prompts": ["AB1"]}}},
    }
    expected = {"missing_rule": "extra_rules.0: 'workflow/rules/extra/nowhere.smk' is not a file",
                "unknown_experiment_key": "experiments.positional_shortcut.bogus",
                "bad_experiment_prompt": "experiments.positional_shortcut.prompts.0"}
    for name, overlay in bad.items():
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(overlay))
        proc = _check_config(tmp_path / "base.yaml", tmp_path / f"{name}.yaml", cwd=tmp_path)
        assert proc.returncode == 1, name
        assert expected[name] in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_check_config_checks_the_claims_of_the_workflow_and_of_the_experiments_on(tmp_path, capsys):
    """A misspelt column in a claim is found before any job runs, not when the claims are
    evaluated at the end of the run."""
    import shutil

    from inductionlab.cli import main

    workflow = tmp_path / "wf"
    shutil.copytree(ROOT / "workflow", workflow / "workflow")
    shutil.copy(ROOT / "Snakefile", workflow / "Snakefile")
    (tmp_path / "config.yaml").write_text((ROOT / "config.yaml").read_text())
    config = str(tmp_path / "config.yaml")
    assert main(["check-config", config, "--workflow", str(workflow)]) in (0, None)
    assert "; 61 claims" in capsys.readouterr().out  # the experiment's claim among them
    off = tmp_path / "off.yaml"
    off.write_text("experiments: {positional_shortcut: false}\n")
    assert main(["check-config", config, str(off), "--workflow", str(workflow)]) in (0, None)
    assert "; 60 claims" in capsys.readouterr().out
    claims = workflow / "workflow" / "claims.yaml"
    text = claims.read_text()
    assert text.count("column: local_chance") >= 1
    claims.write_text(text.replace("column: local_chance", "column: local_chanse", 1))
    assert main(["check-config", config, "--workflow", str(workflow)]) == 1
    err = capsys.readouterr().err
    assert "table 'head_scores' has no column(s) ['local_chanse']" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_yaml_syntax_error_is_one_line_naming_file_line_and_column(tmp_path):
    (tmp_path / "config.yaml").write_text("seeds: [0, 1\ntrain:\n  steps: 10\n")
    proc = _check_config(cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "config.yaml:2:6: YAML syntax error" in line
    # the workflow reads its config.yaml with the same reader
    smk = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-n",
                          "-d", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert smk.returncode == 1
    lines = [l for l in smk.stderr.strip().splitlines() if not l.startswith("Using workflow specific profile")]
    assert lines == ["inductionlab: config.yaml:2:6: YAML syntax error: expected ',' or ']', but got ':'"]


def test_overlay_merges_as_snakemake_does():
    from snakemake.utils import update_config

    from inductionlab.config import overlay

    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1, "e": {"f": 1}}
    other = {"a": {"c": [3]}, "d": {"x": 1}, "e": 2, "g": {"h": {}}}
    expected = copy.deepcopy(base)
    update_config(expected, copy.deepcopy(other))
    assert overlay(copy.deepcopy(base), other) == expected == {
        "a": {"b": 1, "c": [3]}, "d": {"x": 1}, "e": 2, "g": {"h": {}}}
