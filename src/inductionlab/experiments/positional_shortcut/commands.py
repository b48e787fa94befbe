"""The positional-shortcut experiment's command: its analysis of one model."""
from __future__ import annotations

from ...stages.commands import THREADS, command, path, say, write_tables
from ...stages.settings import read_settings
from .settings import check_settings  # noqa: F401 - declares the settings file, registers the check


@command("positional-shortcut", "positional-shortcut experiment: metrics, attention by offset, "
         "positional scores of one model",
         model=path("a model.pt"),
         settings=path("the experiment's settings JSON written by the workflow"),
         metrics=path(), offsets=path(), completions=path(), positions=path(), threads=THREADS)
def write_shortcut(model, settings, metrics, offsets, completions, positions, threads=1):
    from ...core.loading import load_model
    from .analysis import shortcut_tables

    config = read_settings(settings, "positional_shortcut")
    loaded, spec = load_model(model)
    say(f"[{spec.name}] positional table {loaded.cfg.pos_encoding}")
    tables = shortcut_tables(loaded, spec, config)
    write_tables(tables, {"metrics": metrics, "offsets": offsets, "completions": completions,
                          "positions": positions})
    m = tables["metrics"].set_index("metric")["value"]
    say(f"[{spec.name}] " + ", ".join(f"{name} {value:.3f}" for name, value in m.items()))
