"""The ablations stage's settings: its settings file and the check of its entries against
every variant. Light: the config check and the workflow import it."""
from __future__ import annotations

from ...config import settings_check
from ..settings import SettingsFile, declare_settings

declare_settings("ablations", SettingsFile("ablations", ("entries",)))


@settings_check("ablations")
def check_settings(settings: dict, config: dict) -> list[str]:
    """Every ablation entry checked against every variant of a validated config (a named
    layer or head must exist); one line per problem naming the entry."""
    from ...core.ablation_plan import expand_entries, expand_entry
    from ...core.spec import make_spec, model_config

    entries = settings.get("entries", [])
    problems = []
    for variant in config["variants"]:
        try:
            cfg = model_config(make_spec(config, variant, 0))
        except ValueError:
            continue  # the variant's own problem is reported on its key
        for k, entry in enumerate(entries):
            try:
                expand_entry(entry, cfg)
            except ValueError as err:
                problems.append(f"ablations.entries.{k}: {err} (variant {variant})")
        if not problems:
            try:
                expand_entries(entries, cfg)
            except ValueError as err:
                problems.append(f"ablations.entries: {err}")
    return list(dict.fromkeys(problems))  # a duplicate is reported once, not per variant
