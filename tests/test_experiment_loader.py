"""The experiment loader: a folder of inductionlab/experiments/ that is not an experiment
(no __init__.py, so not a package; or no rules.smk) is never loaded, and switching it on
names the folder and what it lacks instead of saying there is no such experiment."""
import pytest

from helpers import ROOT
from inductionlab import experiments
from inductionlab.config import ConfigError, check_workflow_config

BASE = {"seeds": [0], "variants": {"one_layer": {"n_layers": 1}}}


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """An experiments folder holding ``nopackage/`` (rules.smk, no __init__.py) and
    ``norules/`` (__init__.py, no rules.smk), read by the loader instead of the real one."""
    (tmp_path / "nopackage").mkdir()
    (tmp_path / "nopackage" / "rules.smk").write_text("X = 1\n")
    (tmp_path / "nopackage" / "schema.yaml").write_text("type: object\n")
    (tmp_path / "norules").mkdir()
    (tmp_path / "norules" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (tmp_path / "__pycache__").mkdir()
    monkeypatch.setattr(experiments, "HERE", tmp_path)
    return tmp_path


def test_a_folder_without_init_is_named_as_not_a_package(folders):
    found = experiments.available()  # nothing is imported: norules/__init__ would raise
    assert set(found) == {"nopackage", "norules"}
    config = {**BASE, "experiments": {"nopackage": {}}}
    with pytest.raises(ConfigError) as err:
        check_workflow_config(config, ROOT, found, cwd=folders)
    message = str(err.value)
    assert f"experiments.nopackage: the folder {folders / 'nopackage'} exists but is not a package " \
           "(no __init__.py)" in message
    assert "no experiment of that name" not in message


def test_a_folder_without_rules_is_named_too(folders):
    config = {**BASE, "experiments": {"norules": {}}}
    with pytest.raises(ConfigError, match="experiments.norules: the folder .* has no rules.smk"):
        check_workflow_config(config, ROOT, experiments.available(), cwd=folders)


def test_a_broken_folder_switched_off_and_an_unknown_name(folders):
    config = {**BASE, "experiments": {"nopackage": False}}
    assert check_workflow_config(config, ROOT, experiments.available(), cwd=folders) == []
    config = {**BASE, "experiments": {"elsewhere": {}}}
    with pytest.raises(ConfigError, match=r"experiments.elsewhere: no experiment of that name \(known: none\)"):
        check_workflow_config(config, ROOT, experiments.available(), cwd=folders)


def test_the_shipped_experiments_are_loaded():
    found = experiments.available()
    assert {n for n, e in found.items() if e.problem is None} >= {"positional_shortcut", "positional_table"}
