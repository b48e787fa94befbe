"""The formation atlas's table formats (run-wide: results/tables/atlas_*.csv)."""
from __future__ import annotations

from ...claims.formation_law import BAND_COLUMNS, LAW_COLUMNS, MIDPOINT_COLUMNS
from ...core.formats import declare_table
from .analysis import CHANGES_COLUMNS, POINTS_COLUMNS, SENTENCE_COLUMNS

# per grid point and seed: the fits, the head, the accuracy against its floor
ATLAS_POINTS = declare_table("atlas_points", POINTS_COLUMNS, keys=["model", "seed"])
# the law's midpoints per variant, context, seed, quantity and clock (NaN with why in note)
ATLAS_MIDPOINTS = declare_table("atlas_midpoints", MIDPOINT_COLUMNS + ["note"],
                                keys=["variant", "context", "seed", "quantity", "clock"])
# the law of formation time per variant, quantity and clock
ATLAS_LAW = declare_table("atlas_law", LAW_COLUMNS, keys=["variant", "quantity", "clock"])
ATLAS_BAND = declare_table("atlas_band", BAND_COLUMNS, keys=["variant", "quantity", "clock", "context"])
# per initialisation and intervention: the midpoint ratio to the unchanged run over seeds
ATLAS_CHANGES = declare_table("atlas_changes", CHANGES_COLUMNS, keys=["model"])
# one sentence per variant for page 1 (a table of words, read by the report's highlight)
ATLAS_SENTENCES = declare_table("atlas_sentences", SENTENCE_COLUMNS, keys=["variant"])
