"""Several commands in one process (``inductionlab together``), and what each costs."""
import json
import shlex

import pytest

from inductionlab.cli import main
from inductionlab.process_cost import LOG_VARIABLE


@pytest.fixture(autouse=True)
def _here(tmp_path, monkeypatch):
    """write-json writes the workflow's settings files, under the working directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "settings").mkdir(parents=True)


def _line(out, document):
    return shlex.join(["write-json", "--out", str(out), "--document", json.dumps(document)])


def test_together_runs_each_command_in_turn(tmp_path):
    a, b = tmp_path / "results/settings/a.json", tmp_path / "results/settings/b.json"
    assert main(["together", "--commands", _line(a, {"x": 1}), _line(b, [2, 3])]) == 0
    assert json.loads(a.read_text()) == {"x": 1} and json.loads(b.read_text()) == [2, 3]


def test_every_line_is_parsed_before_any_runs(tmp_path):
    first = tmp_path / "results/settings/first.json"
    with pytest.raises(SystemExit):  # argparse's usage error for the second line
        main(["together", "--commands", _line(first, {}), "write-json --no-such-option 1"])
    assert not first.exists()


def test_together_does_not_run_itself(tmp_path, capsys):
    assert main(["together", "--commands", "together --commands x"]) == 1
    assert "not itself" in capsys.readouterr().err


def test_the_cost_log_has_a_line_per_command_that_adds_up(tmp_path, monkeypatch):
    from inductionlab import process_cost

    log = tmp_path / "cost.jsonl"
    monkeypatch.setenv(LOG_VARIABLE, str(log))
    monkeypatch.setattr(process_cost, "_PARTS", {"user_s": 0.0, "sys_s": 0.0})
    main(["together", "--commands", _line(tmp_path / "results/settings/a.json", 1),
          _line(tmp_path / "results/settings/b.json", 2)])
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["command"] for x in lines] == ["write-json", "write-json", "together"]
    assert [x.get("part_of") for x in lines] == ["together", "together", None]
    # the process's own line holds what its parts' lines do not: the sum is the process's
    # cost so far, which only grows
    total = sum(x["user_s"] + x["sys_s"] for x in lines)
    now = process_cost.usage()
    assert 0 <= total <= now["user_s"] + now["sys_s"] + 0.01
    assert all(x["user_s"] >= 0 and x["max_rss_mb"] > 0 for x in lines)


def test_without_the_variable_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(LOG_VARIABLE, raising=False)
    main(["write-json", "--out", str(tmp_path / "results/settings/a.json"), "--document", "1"])
    assert sorted(p.name for p in (tmp_path / "results/settings").iterdir()) == [
        ".a.json.sha256", "a.json"]  # its record
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]
