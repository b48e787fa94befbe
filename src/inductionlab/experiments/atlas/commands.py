"""The formation atlas's command: its tables from the stacked stage tables."""
from __future__ import annotations

from ...stages.commands import command, path, text, write_tables


@command("atlas-tables", "the formation atlas's grid, law and intervention tables",
         phase_change=path("the stacked phase_change table (results/tables/phase_change.csv), "
                           "decided by the head-role rule"),
         behaviour=path("the stacked behaviour table (results/tables/behaviour.csv)"),
         # a parameter of the rule, not a file: the rule passes it after the named paths
         grid=text("the grid as JSON: {points: [...], steps: N, batch_size: B} (required)"),
         points=path("atlas_points.csv to write"),
         midpoints=path("atlas_midpoints.csv to write"), law=path("atlas_law.csv to write"),
         band=path("atlas_band.csv to write"), changes=path("atlas_changes.csv to write"),
         sentences=path("atlas_sentences.csv to write (one per variant, for page 1)"))
def write_atlas_tables(phase_change, behaviour, grid, points, midpoints, law, band, changes,
                       sentences):
    import json

    from ...core.loading import read_table
    from ...stages.dynamics.dynamics import read_phase_change
    from .analysis import atlas_changes, atlas_midpoints, atlas_points, atlas_sentences
    from ...claims.formation_law import law_band, law_fits

    if not grid:
        raise ValueError("--grid: the atlas's grid (JSON) is required")
    grid = json.loads(grid)
    frame = atlas_points(read_phase_change(phase_change),
                         read_table(behaviour, ["variant", "seed", "metric", "value", "low", "high"],
                                    kind="the stacked behaviour table"),
                         grid["points"])
    steps, batch = int(grid["steps"]), int(grid["batch_size"])
    both = atlas_midpoints(frame, steps, batch)
    fits = law_fits(both)
    variants = list(dict.fromkeys(p["variant"] for p in grid["points"] if p["role"] == "context"))
    write_tables({"points": frame, "midpoints": both, "law": fits, "band": law_band(both),
                  "changes": atlas_changes(frame), "sentences": atlas_sentences(fits, variants)},
                 {"points": points, "midpoints": midpoints, "law": law, "band": band,
                  "changes": changes, "sentences": sentences})


@command("atlas-figure", "the formation atlas's midpoints against the context length, log-log",
         midpoints=path("atlas_midpoints.csv"), band=path("atlas_band.csv"),
         figure=path("the PNG to write"))
def write_atlas_figure(midpoints, band, figure):
    from ...core.loading import read_table
    from ...formatting.plots import save
    from .plots import midpoints_figure

    save(midpoints_figure(read_table(midpoints, ["variant", "context", "seed", "quantity", "clock",
                                                 "midpoint"], kind="atlas_midpoints.csv"),
                          read_table(band, ["variant", "quantity", "clock", "context", "midpoint",
                                            "midpoint_low", "midpoint_high"], kind="atlas_band.csv")),
         figure)
