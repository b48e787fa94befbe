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


# ---------------------------------------------------------------- broken folders isolated

@pytest.fixture
def fabricated(tmp_path, monkeypatch):
    """An experiments folder of fabricated packages, imported from there: ``broken/``
    (its __init__ raises), ``quiet/`` (an experiment without schema.yaml whose import leaves
    a mark), ``badschema/`` (its schema.yaml does not parse), ``listschema/`` (its schema is
    a list) and ``kindonly/`` (declares a task kind, but has no rules.smk)."""
    import sys

    from inductionlab import folders as loader
    from inductionlab.core import task_kinds
    from inductionlab.stages.registry import COMMANDS  # every command of the stages declared

    root = tmp_path / "experiments"
    mark = tmp_path / "imported"

    def package(name, init, schema=None, rules=True):
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text(init)
        if rules:
            (root / name / "rules.smk").write_text("X = 1\n")
        if schema is not None:
            (root / name / "schema.yaml").write_text(schema)

    package("broken", "raise RuntimeError('boom at import\\nsecond line')\n", "type: object\n")
    package("quiet", f"open({str(mark / 'quiet')!r}, 'w').close()\n")
    package("badschema", "", "type: object\nproperties: {a: [1, 2\n")
    package("listschema", "", "- type\n- object\n")
    package("kindonly", "from dataclasses import dataclass\n"
            "from inductionlab.core.task_kinds import declare_task\n"
            "@declare_task\n@dataclass(frozen=True)\nclass Custom:\n    kind = 'custom_kind'\n",
            rules=False)
    package("kindful", "from dataclasses import dataclass\n"
            "from inductionlab.core.task_kinds import declare_task, setting\n"
            "@declare_task\n@dataclass(frozen=True)\nclass Shifted:\n"
            "    kind = 'shifted_kind'\n    vocab_size: int = setting(26, 2, 26)\n"
            "    seq_len: int = setting(24, 2, 8192)\n    shift: int = setting(1, 1, 8)\n"
            "    def problems(self):\n        return []\n"
            "from inductionlab.stages.commands import command, text\n"
            "@command('fabricated-hello', 'says its words', words=text('what to say'))\n"
            "def hello(words):\n    print(words)\n", "type: object\n")
    mark.mkdir()
    monkeypatch.setattr(experiments, "HERE", root)
    monkeypatch.setattr(experiments, "__path__", [str(root)])
    monkeypatch.setattr(loader, "_FAILED", {}, raising=False)
    kinds, commands = dict(task_kinds._KINDS), dict(COMMANDS)
    yield root, mark
    task_kinds._KINDS.clear()
    task_kinds._KINDS.update(kinds)
    COMMANDS.clear()
    COMMANDS.update(commands)
    for name in [m for m in sys.modules if m.startswith("inductionlab.experiments.")]:
        if name.split(".")[2] in {"broken", "quiet", "badschema", "listschema", "kindonly",
                                  "kindful"}:
            del sys.modules[name]


def test_a_folder_that_fails_to_import_is_one_line_where_it_is_switched_on(fabricated):
    root, _ = fabricated
    found = experiments.available()  # every folder imported: the broken one is listed
    assert found["broken"].problem == (f"the folder {root / 'broken'} does not import: "
                                       "RuntimeError: boom at import")
    assert found["quiet"].problem is None
    assert check_workflow_config({**BASE, "experiments": {}}, ROOT, found, cwd=root) == []
    with pytest.raises(ConfigError) as err:
        check_workflow_config({**BASE, "experiments": {"broken": {}}}, ROOT, found, cwd=root)
    assert str(err.value).splitlines()[1:] == [
        f"  - experiments.broken: the folder {root / 'broken'} does not import: RuntimeError: "
        "boom at import"]


def test_a_folder_not_switched_on_is_not_imported_by_the_config_check(fabricated):
    root, mark = fabricated
    found = experiments.available(load=False)
    assert check_workflow_config({**BASE, "experiments": {}}, ROOT, found, cwd=root) == []
    assert not (mark / "quiet").exists()
    # switched on, it is imported: an experiment without schema.yaml takes no settings
    rules = check_workflow_config({**BASE, "experiments": {"quiet": {}}}, ROOT,
                                  experiments.available(load=False), cwd=root)
    assert rules == [str(root / "quiet" / "rules.smk")] and (mark / "quiet").exists()
    with pytest.raises(ConfigError) as err:
        check_workflow_config({**BASE, "experiments": {"quiet": {"n": 3}}}, ROOT,
                              experiments.available(load=False), cwd=root)
    assert str(err.value).splitlines()[1] == (
        "  - experiments.quiet: the experiment takes no settings (its folder has no "
        "schema.yaml); unknown key(s) n: give it as quiet: {}")


@pytest.mark.parametrize("name, words", [
    ("badschema", "schema.yaml:3:1 does not parse: while parsing a flow sequence"),
    ("listschema", "schema.yaml is not a mapping of keys to values (a JSON Schema in YAML), "
                   "but list"),
])
def test_a_schema_that_is_no_schema_is_one_line_naming_the_file(fabricated, name, words):
    root, _ = fabricated
    config = {**BASE, "experiments": {name: {}}}
    with pytest.raises(ConfigError) as err:
        check_workflow_config(config, ROOT, experiments.available(load=False), cwd=root)
    lines = str(err.value).splitlines()
    assert len(lines) == 2 and lines[1].startswith(f"  - experiments.{name}: its schema "
                                                   f"{root / name / 'schema.yaml'}")
    assert words in lines[1]
    # switched off, the same folder stops nothing
    assert check_workflow_config({**BASE, "experiments": {name: False}}, ROOT,
                                 experiments.available(load=False), cwd=root) == []


def test_an_unknown_task_kind_says_where_kinds_are_looked_for(fabricated):
    root, _ = fabricated
    config = {**BASE, "tasks": {"t": {"kind": "custom_kind"}}}
    with pytest.raises(ConfigError) as err:
        check_workflow_config(config, ROOT, experiments.available(load=False), cwd=root)
    lines = str(err.value).splitlines()
    assert len(lines) == 2 and lines[1].startswith("  - tasks.t: unknown task kind 'custom_kind'")
    assert "the core's: random_offset, repeated_block, variable_period" in lines[1]
    assert "experiment folders looked in: badschema, kindful, listschema, quiet" in lines[1]
    assert f"kindonly (the folder {root / 'kindonly'} has no rules.smk" in lines[1]
    assert f"broken (the folder {root / 'broken'} does not import: RuntimeError" in lines[1]


def test_a_broken_folder_stops_no_command_and_an_unknown_one_names_it(fabricated, capsys):
    from inductionlab.cli import main

    root, _ = fabricated
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("inductionlab: error: no command 'no-such-command'")
    assert f"broken: the folder {root / 'broken'} does not import: RuntimeError: boom" in err
    # the commands of the folders that import are all there, a broken one beside them
    assert main(["fabricated-hello", "--words", "still here"]) == 0
    assert capsys.readouterr().out == "still here\n"


def test_a_task_kind_of_a_folder_not_switched_on_is_found_and_checked(fabricated):
    root, _ = fabricated
    config = {**BASE, "tasks": {"t": {"kind": "shifted_kind", "shift": 2}}}
    assert check_workflow_config(config, ROOT, experiments.available(load=False), cwd=root) == []
    config = {**BASE, "tasks": {"t": {"kind": "shifted_kind", "shift": "2"}}}
    with pytest.raises(ConfigError, match=r"tasks\.t\.shift: '2' is text, not an integer"):
        check_workflow_config(config, ROOT, experiments.available(load=False), cwd=root)


@pytest.mark.slow
def test_check_config_imports_no_folder_that_is_not_switched_on(fabricated, tmp_path,
                                                                monkeypatch, capsys):
    import yaml

    from inductionlab.cli import main

    _, mark = fabricated
    work = tmp_path / "work"
    work.mkdir()
    (work / "config.yaml").write_text(yaml.safe_dump(BASE))
    monkeypatch.chdir(work)
    assert main(["check-config", "--workflow", str(ROOT)]) == 0, capsys.readouterr().err
    assert "config.yaml: valid" in capsys.readouterr().out
    assert not (mark / "quiet").exists()  # nor did the broken folder stop it
