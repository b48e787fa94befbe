"""The command line: every command declared once, and every rule's shell line passing each
path by its option's name."""
import ast
import re

import pytest

from helpers import ROOT
from inductionlab.cli import main
from inductionlab.stages.commands import BY_HAND, COMMANDS, Option, command
from inductionlab.stages.registry import build_parser

# the workflow's own rule files, every stage's and experiment's, the Snakefile
RULE_FILES = (sorted((ROOT / "workflow").rglob("*.smk"))
              + sorted((ROOT / "src" / "inductionlab").rglob("rules.smk")) + [ROOT / "Snakefile"])


def shell_lines(path) -> list[str]:
    """Each ``shell:`` command of a rule file: its string literals joined."""
    lines, found = path.read_text().splitlines(), []
    for i, line in enumerate(lines):
        if line.strip() != "shell:":
            continue
        parts = []
        for nxt in lines[i + 1:]:
            if not nxt.strip().startswith('"'):
                break
            parts.append(ast.literal_eval(nxt.strip()))
        found.append("".join(parts))
    return found


def inductionlab_calls() -> list[tuple[str, str]]:
    return [(str(path.relative_to(ROOT)), line) for path in RULE_FILES for line in shell_lines(path)
            if line.startswith("inductionlab ")]


def named_calls() -> list[tuple[str, str]]:
    """(rule file, command) of every rule whose paths are passed by their names
    (``command_line(name)``; the Snakefile checks their names against the options), and of
    every analysis of one model (``model_analysis(name, command, ...)``, checked as it is
    registered)."""
    patterns = (r'^\s+command_line\("([\w-]+)"', r'^model_analysis\(\s*"\w+",\s*"([\w-]+)"')
    return [(str(path.relative_to(ROOT)), m.group(1)) for path in RULE_FILES
            for pattern in patterns for m in re.finditer(pattern, path.read_text(), re.M)]


def test_the_rules_call_inductionlab():
    names = {line.split()[1] for _, line in inductionlab_calls()} | {n for _, n in named_calls()}
    assert {"train", "behaviour", "ablations", "dynamics", "report", "write-json"} <= names
    assert all(name in COMMANDS and name not in BY_HAND for _, name in named_calls())


def test_a_rule_whose_names_are_not_its_commands_options_is_refused():
    """The parse-time check of the rules that pass their paths by name."""
    from types import SimpleNamespace

    from inductionlab.workflow_checks import rule_option_problems

    def rule(name, shell, inputs, outputs):
        keys = lambda names: SimpleNamespace(keys=lambda: list(names))  # noqa: E731
        return SimpleNamespace(name=name, shellcmd=shell, input=keys(inputs), output=keys(outputs))

    line = "inductionlab circuits-tables {params.paths} > {log} 2>&1"
    good = rule("good", line, ["weights"], ["circuits", "composition", "eigenvalues"])
    assert rule_option_problems([good], COMMANDS) == []
    bad = rule("bad", line, ["weights", "extra"], ["circuits"])
    assert rule_option_problems([bad], COMMANDS) == [
        "rule bad: its input 'extra' is no option of inductionlab circuits-tables (its options: "
        "circuits, composition, eigenvalues, weights); name it as the option it is passed as",
        "rule bad: inductionlab circuits-tables needs --composition, which it does not name",
        "rule bad: inductionlab circuits-tables needs --eigenvalues, which it does not name"]
    other = rule("other", "inductionlab circuits-tables --weights {input.weights}", ["x"], [])
    assert rule_option_problems([other], COMMANDS) == []  # a line naming its options itself


@pytest.mark.parametrize("path", ["../escape.csv", "/tmp/escape.csv", "results/../../escape.csv",
                                  "escape.csv", "{name}/table.csv", "src/inductionlab/x.py", "results"])
def test_a_rule_that_writes_outside_the_workflow_s_folders_is_refused(path):
    """The parse-time check of every rule's outputs, log and benchmark."""
    from types import SimpleNamespace

    from inductionlab.workflow_checks import rule_folder_problems

    def rule(output=(), log=(), benchmark=None):
        return SimpleNamespace(name="study", output=list(output), log=list(log), benchmark=benchmark)

    good = rule(["results/study/{model}.csv", "reports/study.html", "results/./x.csv"],
                ["logs/study.log"], "results/benchmarks/study.tsv")
    assert rule_folder_problems([good, rule(benchmark="benchmarks/study.tsv")]) == []
    for what, bad in (("output", rule([path])), ("log", rule(log=[path])),
                      ("benchmark", rule(benchmark=path))):
        assert rule_folder_problems([bad]) == [
            f"rule study: its {what} {path!r} lies outside the folders the workflow writes in "
            "(results/, reports/, logs/, benchmarks/); write it under results/"]


@pytest.mark.parametrize("where,line", inductionlab_calls())
def test_a_rule_names_every_argument_it_passes(where, line):
    words = line.replace("2>&1", "").split(">")[0].split()
    name, rest = words[1], words[2:]
    assert name in COMMANDS and name not in BY_HAND, (where, line)
    options = {f"--{o.replace('_', '-')}": o for o in COMMANDS[name].options}
    given = set()
    previous = None
    for word in rest:
        if word.startswith("--"):
            assert word in options, f"{where}: {name} has no option {word}"
            given.add(options[word])
        elif word.startswith("{params."):
            continue  # expands to options, e.g. "--final-step N" (or nothing)
        else:
            assert previous is not None, f"{where}: {word} is passed without an option's name"
        previous = None if COMMANDS[name].options.get(options.get(word, ""), Option()).flag else word
    required = {o for o, opt in COMMANDS[name].options.items() if opt.required}
    assert required <= given, f"{where}: {name} is not given {sorted(required - given)}"


def test_no_command_but_those_typed_by_hand_takes_a_positional_argument():
    for name, cmd in COMMANDS.items():
        positional = [o for o, opt in cmd.options.items() if opt.positional]
        assert not positional or name in BY_HAND, name
    with pytest.raises(ValueError, match="typed by hand"):
        command("made-up", "x", model=Option(positional=True))(lambda model: None)
    with pytest.raises(ValueError, match="declared twice"):
        command("train", "again")(lambda: None)
    assert "made-up" not in COMMANDS


def test_options_are_named_and_their_order_is_free(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "results" / "settings" / "doc.json"
    document = '{"b": 1, "a": [2]}'
    assert main(["write-json", "--sort-keys", "--document", document, "--out", str(out),
                 "--indent", "0"]) == 0
    assert out.read_text() == '{\n"a": [\n2\n],\n"b": 1\n}\n'
    with pytest.raises(SystemExit):
        main(["write-json", str(out), document])  # positional: refused by the parser
    assert "--out" in capsys.readouterr().err


def test_every_command_says_what_it_does():
    text = build_parser().format_help()
    for name, cmd in COMMANDS.items():
        assert name in text and cmd.help
        assert not re.search(r"\s$", cmd.help)


def rule_blocks(path) -> list[str]:
    """The text of each rule of a rule file, from its ``rule`` line to the next one."""
    text = path.read_text()
    starts = [m.start() for m in re.finditer(r"^\s*rule\b[^\n]*:\s*$", text, flags=re.M)]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.name)
def test_every_rule_that_runs_a_command_records_its_cost(path):
    for block in rule_blocks(path):
        if "shell:" in block:
            assert "benchmark:" in block, block.splitlines()[0] + " ... has no benchmark:"


def test_a_model_analysis_whose_names_are_not_its_commands_options_is_refused():
    from inductionlab.workflow_checks import option_problems

    assert option_problems("model analysis 'c'", "circuits-tables", ["weights"],
                           ["circuits", "composition", "eigenvalues"], COMMANDS) == []
    assert option_problems("model analysis 'c'", "circuits-tables", ["weights", "model"],
                           ["circuits", "composition", "eigenvalues"], COMMANDS) == [
        "model analysis 'c': its input 'model' is no option of inductionlab circuits-tables "
        "(its options: circuits, composition, eigenvalues, weights); name it as the option it "
        "is passed as"]
    assert option_problems("model analysis 'c'", "no-such", [], [], COMMANDS) == [
        "model analysis 'c': runs inductionlab no-such, which is no command"]
