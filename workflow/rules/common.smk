# Helpers shared by every stage: the list of models and their result folders.
import json
import os
import shlex

from inductionlab.spec import make_spec

VARIANTS = list(config["variants"])
SEEDS = [int(s) for s in config["seeds"]]
RESULTS = "results"


wildcard_constraints:
    variant="|".join(VARIANTS),
    seed=r"\d+",


def model_file(name):
    """Path pattern of ``name`` in a model's result folder (wildcards variant, seed)."""
    return f"{RESULTS}/{{variant}}/seed{{seed}}/{name}"


def per_model(name):
    """``name`` in every (variant, seed) result folder."""
    return expand(model_file(name), variant=VARIANTS, seed=SEEDS)


def all_weights():
    return per_model("weights.npz")


def circuit_outputs():
    return per_model("circuits.csv") + per_model("composition.csv") + per_model("eigenvalues.npz")


def behaviour_outputs():
    files = ["completions.csv", "failure_modes.csv", "attention.npz", "head_scores.csv",
             "behaviour.csv", "figures/attention"]
    return [path for name in files for path in per_model(name)]


def ablation_outputs():
    return per_model("ablations.csv") + per_model("ablated_attention.npz")


def dynamics_outputs():
    files = ["dynamics.csv", "per_token_losses.npz", "phase_change.csv", "figures/dynamics"]
    return [path for name in files for path in per_model(name)] + [
        f"{RESULTS}/tables/per_token_loss_pca.csv",
        f"{RESULTS}/tables/phase_change.csv",
        f"{RESULTS}/figures/per_token_loss_pca.png",
    ]


def model_spec_json(wildcards):
    """The resolved spec of one model; a params change reruns that model only."""
    return json.dumps(make_spec(config, wildcards.variant, int(wildcards.seed)), sort_keys=True)


def stage_settings_json(wildcards):
    """One config section (plus the task) as JSON; a change reruns only that stage."""
    return json.dumps({**config[wildcards.stage], "task": config["task"]}, sort_keys=True)


def settings_file(stage):
    return f"{RESULTS}/settings/{stage}.json"


# ---------------------------------------------------------------- report registry
# A stage declares what the report shows of it with `report_section(...)` in its rule
# file; the report includes every registered section, so a new experiment appears in
# the report without editing a template. Per-model tables registered with
# `aggregated_table(name)` are stacked across models into results/tables/{name}.csv
# (with the spread across seeds in {name}_summary.csv).

REPORT_SECTIONS = []
AGGREGATED_TABLES = []
REPORT_HIGHLIGHTS = []


def report_highlight(path, text):
    """Register a finding for the summary's "beyond the write-up" list: ``text`` with each
    ``{variant:metric}`` replaced by that metric's mean [min–max] in the summary table
    ``path`` (numbers from the tables, never typed in)."""
    REPORT_HIGHLIGHTS.append({"path": path, "text": text})


def aggregated_table(name, summary=False):
    """Path of the stacked table of every model's ``{name}.csv`` (or of its summary)."""
    if name not in AGGREGATED_TABLES:
        AGGREGATED_TABLES.append(name)
    return f"{RESULTS}/tables/{name}{'_summary' if summary else ''}.csv"


def report_section(name, title, scope="variant", order=50, text="", tables=(), figures=(),
                   template=None, variants=None):
    """Register a report section.

    scope: "variant" (shown in every variant's chapter; paths may use {variant} and
    {seed}, the first seed) or "study" (once, after the chapters).
    tables: dicts with path, caption and display options (where, spread, pivot, sort,
    columns, max_rows, rank, dedupe; see inductionlab.report.tables.render_table);
    appendix: True (or a list of variants) puts it in the model's per-seed appendix
    instead of the body.
    figures: dicts with path, caption and, for a file inside a directory output, dir;
    appendix as for tables; key: True makes it the model's key figure, shown in the
    summary (the first one registered counts).
    template: an optional jinja2 fragment (path relative to the workflow or absolute)
    that replaces the default rendering (text, tables, figures).
    variants: limit a variant-scope section to these variants.
    """
    if template and not os.path.isabs(template):
        template = os.path.join(workflow.basedir, template)
    REPORT_SECTIONS.append(dict(name=name, title=title, scope=scope, order=order, text=text,
                                tables=list(tables), figures=list(figures), template=template,
                                variants=variants))


def _resolve(spec, **names):
    out = dict(spec)
    for key in ("path", "dir"):
        if key in out:
            out[key] = out[key].format(**names)
    return out


def resolved_sections():
    """Every section with its tables and figures per variant (or "_study")."""
    sections = []
    for s in REPORT_SECTIONS:
        keys = ((s["variants"] or VARIANTS) if s["scope"] == "variant" else ["_study"])
        items = {key: {"tables": [_resolve(t, variant=key, seed=SEEDS[0]) for t in s["tables"]],
                       "figures": [_resolve(f, variant=key, seed=SEEDS[0]) for f in s["figures"]]}
                 for key in keys}
        sections.append({k: s[k] for k in ("name", "title", "scope", "order", "text", "template")}
                        | {"items": items})
    return sections


def report_inputs():
    """Every file the registered sections show (directories for files inside them)."""
    paths = []
    for s in resolved_sections():
        for items in s["items"].values():
            paths += [t["path"] for t in items["tables"]]
            paths += [f.get("dir", f["path"]) for f in items["figures"]]
    paths += [h["path"] for h in REPORT_HIGHLIGHTS]
    return sorted(set(paths))


def claim_groups():
    """The write-up's algorithms that group the claims (``groups`` in workflow/claims.yaml)."""
    from inductionlab.claims import load_settings

    return load_settings(os.path.join(workflow.basedir, "workflow", "claims.yaml"))["groups"]


def report_manifest_json(wildcards):
    """The report manifest: title, config, the headline table and every registered section."""
    from inductionlab.data import TaskConfig, loss_floor

    manifest = {
        "title": config["report"]["title"],
        "config": config,
        "variants": VARIANTS,
        "seeds": SEEDS,
        "loss_floor": loss_floor(TaskConfig.from_dict(config["task"])),
        "scorecard": f"{RESULTS}/tables/scorecard.csv",
        "claim_groups": list(claim_groups().items()),  # a list: the manifest's keys are sorted
        "failure_modes": aggregated_table("failure_modes", summary=True),
        "highlights": REPORT_HIGHLIGHTS,
        "train_log": aggregated_table("train_log"),
        "headline": {
            "path": aggregated_table("behaviour", summary=True),
            "spread": {"index": ["variant"],
                       "metrics": ["loss_all", "loss_pred", "acc_pred", "random_len12_acc_mean",
                                   "random_len6_acc_mean", "icl_score"]},
        },
        "sections": resolved_sections(),
    }
    return json.dumps(manifest, sort_keys=True)
