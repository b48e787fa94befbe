"""The claims engine: every sentence of the write-up as a claim on the stacked tables, with
a verdict per seed and over seeds.

:mod:`.rules` reads workflow/claims.yaml (and an experiment's claims) into checked claims;
:mod:`.metrics` measures a claim's metric on the tables; :mod:`.words` says what was
measured and against what; :mod:`.verdicts` decides each claim over seeds and writes the
claims, scorecard and family-comparison tables. The verdicts are science, not reporting:
the report (:mod:`inductionlab.report`) only shows the tables this package writes.
"""
