"""The formation study's command: one model's answers from its stage tables."""
from __future__ import annotations

from ...stages.commands import command, path, write_tables
from ...stages.settings import read_settings


@command("formation", "when and how an induction head formed in one model, from its tables",
         head_scores=path("the stacked head_scores table (results/tables/head_scores.csv), "
                          "whose roles are the head-role rule's"),
         composition=path("its composition.csv"),
         ablations=path("its ablations.csv"), behaviour=path("its behaviour.csv"),
         phase_change=path("its phase_change.csv"),
         table=path("formation.csv to write"))
def write_formation(head_scores, composition, ablations, behaviour, phase_change, table):
    from ...analysis.roles import ROLES_COLUMN
    from ...core.loading import read_table
    from .analysis import formation_table
    from .tables import FORMATION

    frames = {name: read_table(p, kind=f"a {name}.csv") for name, p in
              (("composition", composition), ("ablations", ablations),
               ("behaviour", behaviour), ("phase_change", phase_change))}
    ident = frames["behaviour"][["variant", "seed"]].iloc[0].to_dict()
    stacked = read_table(head_scores, ["variant", "seed", "layer", "head", ROLES_COLUMN],
                         kind="the stacked head_scores table")
    scores = stacked[(stacked["variant"] == ident["variant"]) & (stacked["seed"] == ident["seed"])]
    if scores.empty:
        raise ValueError(f"{head_scores}: has no row of {ident['variant']} seed {ident['seed']}")
    frame = formation_table(scores.reset_index(drop=True), frames["composition"],
                            frames["ablations"], frames["behaviour"], frames["phase_change"])
    frame = frame.assign(**ident)[list(FORMATION.columns)]
    write_tables({"formation": frame}, {"formation": table})


@command("formation-answers", "the formation study's verdicts per seed and its answers in words",
         table=path("results/tables/formation.csv (every seed of every model)"),
         phase_change=path("the stacked phase_change table (results/tables/phase_change.csv), "
                           "decided by the head-role rule"),
         settings=path("the study's settings (results/settings/formation.json)"),
         verdicts=path("formation_verdicts.csv to write"),
         answers=path("formation_answers.csv to write"))
def write_formation_answers(table, phase_change, settings, verdicts, answers):
    from ...core.loading import read_table
    from ...stages.dynamics.dynamics import read_phase_change
    from .answers import formation_answers
    from .settings import model_names

    frame = read_table(table, ["variant", "seed", "metric", "value", "low", "high", "note"],
                       kind="the stacked formation table")
    study = read_settings(settings, "formation")
    seeds, words = formation_answers(frame, read_phase_change(phase_change), model_names(study),
                                     study["task"])
    write_tables({"verdicts": seeds, "answers": words}, {"verdicts": verdicts, "answers": answers})
