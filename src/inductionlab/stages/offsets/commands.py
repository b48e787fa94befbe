"""The offsets stage's command: the offset attribution of a model, and the write-up's algorithms as programs."""
from __future__ import annotations

from ..commands import THREADS, command, path, say, write_tables
from ..settings import read_settings


@command("offsets", "offset attribution of one model: every path's effect on the letters k "
         "back, and the write-up's algorithm as a program",
         model=path("a model.pt"),
         behaviour_settings=path("behaviour settings JSON (evaluation sample)"),
         head_scores=path("the stacked head_scores table (results/tables/head_scores.csv), "
                          "whose roles name the paths"),
         algorithms=path("algorithms.yaml (the write-up's algorithms as programs)"),
         profile=path("offset_profile.csv to write"), programs=path("algorithm_fit.csv to write"),
         threads=THREADS)
def write_offsets(model, behaviour_settings, head_scores, algorithms, profile, programs, threads=1):
    from .offset_attribution import offset_results, roles_by_head
    from ...analysis.roles import ROLES_COLUMN
    from ...core.loading import load_model, read_table

    behaviour = read_settings(behaviour_settings, "behaviour")
    table = read_algorithms(algorithms)
    loaded, spec = load_model(model)
    roles = roles_by_head(read_table(head_scores, ["variant", "seed", "layer", "head", ROLES_COLUMN],
                                     kind="the stacked head_scores table"), spec.variant, spec.seed)
    frames = offset_results(loaded, spec, behaviour, table, roles, log=say)
    write_tables(dict(zip(("profile", "programs"), frames)),
                  {"profile": profile, "programs": programs})


def read_algorithms(path) -> dict:
    """The ``algorithms`` mapping of an algorithms.yaml; ValueError naming the file if it
    has none or an entry lacks ``title``, ``applies_to`` or ``program``."""
    from ...config import read_yaml

    document = read_yaml(path)
    algorithms = document.get("algorithms") if isinstance(document, dict) else None
    if not isinstance(algorithms, dict) or not algorithms:
        raise ValueError(f"{path}: expected a mapping `algorithms:` of algorithm name -> "
                         f"title, applies_to, program")
    for name, entry in algorithms.items():
        missing = [k for k in ("title", "applies_to", "program")
                   if not isinstance(entry, dict) or k not in entry]
        if missing:
            raise ValueError(f"{path}: algorithm {name!r} lacks {', '.join(missing)}")
    return algorithms
