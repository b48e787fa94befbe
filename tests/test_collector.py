"""The objects a command holds to its exit, kept out of the garbage collector's passes."""
import gc
import json
import shlex
from importlib.metadata import entry_points

from inductionlab.cli import main
from inductionlab.collector import keep_off


def test_frozen_objects_leave_the_collector_nothing_to_scan():
    held = [[i] for i in range(1000)]  # a thousand tracked objects
    try:
        assert len(gc.get_objects()) >= 1000
        frozen = keep_off()
        assert frozen >= 1000
        assert len(gc.get_objects()) < 100  # what a pass would walk: only objects made since
        made_after = [[i] for i in range(500)]
        assert len(gc.get_objects()) >= 500  # new objects are tracked as before
        assert held[999] == [999] and made_after[0] == [0]
    finally:
        gc.unfreeze()


def test_only_a_command_that_owns_its_process_freezes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "settings").mkdir(parents=True)
    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(1))
    line = shlex.join(["write-json", "--out", "results/settings/a.json", "--document", "{}"])
    # in process (the tests, the together command's parts): the caller's objects are left alone
    assert main(["together", "--commands", line]) == 0
    assert frozen == []
    # the console script: after torch is imported, and again as the command exits
    assert main(["together", "--commands", line], own_process=True) == 0
    assert frozen == [1, 1]
    assert json.loads((tmp_path / "results/settings/a.json").read_text()) == {}


def test_the_console_script_is_the_entry_that_owns_its_process():
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "inductionlab"]
    assert script.value == "inductionlab.cli:entry"
