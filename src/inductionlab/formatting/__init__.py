"""How values and names are written, for the tables, the claims and the report alike: one
number format (:mod:`.numbers`) and column and role names in words with units
(:mod:`.labels`). Below both the claims and the report, which read it."""
