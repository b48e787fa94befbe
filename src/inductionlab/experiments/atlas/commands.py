"""The formation atlas's command: its tables from the stacked stage tables."""
from __future__ import annotations

from ...stages.commands import command, path, text, write_tables


@command("atlas-tables", "the formation atlas's grid, law and intervention tables",
         phase_change=path("the stacked phase_change table (results/tables/phase_change.csv), "
                           "decided by the head-role rule"),
         behaviour=path("the stacked behaviour table (results/tables/behaviour.csv)"),
         # a parameter of the rule, not a file: the rule passes it after the named paths
         grid=text("the grid as JSON: {points: [...], steps: N, batch_size: B} (required)"),
         points=path("atlas_points.csv to write"), law=path("atlas_law.csv to write"),
         band=path("atlas_band.csv to write"), changes=path("atlas_changes.csv to write"))
def write_atlas_tables(phase_change, behaviour, grid, points, law, band, changes):
    import json

    from ...core.loading import read_table
    from ...stages.dynamics.dynamics import read_phase_change
    from .analysis import atlas_band, atlas_changes, atlas_law, atlas_points

    if not grid:
        raise ValueError("--grid: the atlas's grid (JSON) is required")
    grid = json.loads(grid)
    frame = atlas_points(read_phase_change(phase_change),
                         read_table(behaviour, ["variant", "seed", "metric", "value", "low", "high"],
                                    kind="the stacked behaviour table"),
                         grid["points"])
    steps, batch = int(grid["steps"]), int(grid["batch_size"])
    write_tables({"points": frame, "law": atlas_law(frame, steps, batch),
                  "band": atlas_band(frame, steps, batch), "changes": atlas_changes(frame)},
                 {"points": points, "law": law, "band": band, "changes": changes})
