# Helpers shared by every stage: the registry of trained models and their result folders.
#
# A model is a variant of the config or a model an experiment derives from one with
# `register_model(name, base, **changes)`. Every registered model gets the generic
# stages (spec, training, weights, circuits, behaviour, ablations, dynamics, aggregated
# tables) in results/{model}/seed{seed}/. The config's variants are the report's chapters.
import json
import os
import shlex
import sys

# the file names a training run writes
from inductionlab.core.loading import CHECKPOINTS, MODEL_FILE, checkpoint_name, checkpoint_steps
from inductionlab.core.seeding import first_seed
from inductionlab.core.spec import DerivedModel, make_spec
from inductionlab.formatting import figure_registry
from inductionlab.stages.settings import settings_document

VARIANTS = list(config["variants"])
SEEDS = [int(s) for s in config["seeds"]]
FIRST_SEED = first_seed(SEEDS)  # the seed of every single-seed figure and table
RESULTS = "results"

MODELS = {name: None for name in VARIANTS}  # name -> DerivedModel (None: a config variant)
# name -> the registered model whose model.pt (same seed) its training reads as the reference
# of a clamp to a trained model (train.intervention: {kind: clamp, reference: trained})
REFERENCE_MODELS = {}


def register_model(name, base, intervention=None, reference=None, **changes):
    """Register model ``name``: variant ``base`` with ``changes`` to its model fields, trained
    and analysed for every seed like a variant. Returns ``name``. ``intervention``: what its
    training clamps or freezes (the spec's train.intervention); ``reference``: the registered
    model whose same-seed model.pt a clamp to a trained reference reads (an input of its
    training job). Re-registering the same model is allowed (two experiments may share one);
    a different one under a taken name is not."""
    try:
        derived = DerivedModel.of(config, name, base, changes, intervention=intervention)
    except ValueError as err:
        sys.exit(f"inductionlab: {err}")
    trained = dict(derived.intervention).get("reference") == "trained"
    if trained != (reference is not None):
        sys.exit(f"inductionlab: model {name!r}: a clamp to a trained reference needs the "
                 "reference model (register_model(..., reference=<model>)), and only it takes one")
    if reference is not None and reference not in MODELS:
        sys.exit(f"inductionlab: model {name!r}: reference model {reference!r} is not registered")
    if MODELS.get(name, derived) != derived or REFERENCE_MODELS.get(name, reference) != reference:
        sys.exit(f"inductionlab: model {name!r} is registered twice with different changes")
    MODELS[name] = derived
    if reference is not None:
        REFERENCE_MODELS[name] = reference
    return name


def reference_model_file(wildcards):
    """The trained reference's model.pt of a model whose training clamps to one (same
    seed), as the train rule's input; none for any other model."""
    reference = REFERENCE_MODELS.get(wildcards.model)
    return [model_file(MODEL_FILE).format(model=reference, seed=wildcards.seed)] if reference else []


def reference_option(wildcards, input):
    """``--reference <model.pt>`` for a model trained with a clamp to a trained reference."""
    return f"--reference {shlex.quote(input.reference[0])}" if len(input.reference) else ""


FAMILIES = {}  # name -> {"title", "models": {role: model}} (the write-up's own family is implicit)


def register_family(name, title, **models):
    """Evaluate the claim set (workflow/claims.yaml) on another family of models too:
    ``models`` maps the write-up's roles (the variant names the claims are about:
    one_layer, one_layer_smeared, two_layer) to registered models. Its outcomes are
    shown beside the write-up's family in the report's scorecard."""
    unknown = sorted(m for m in models.values() if m not in MODELS)
    if unknown:
        sys.exit(f"inductionlab: family {name!r}: model(s) {unknown} are not registered "
                 "(register_model first)")
    FAMILIES[name] = {"title": title, "models": dict(models)}
    return name


def model_settings(name):
    """The resolved model fields of a registered model (n_layers, smear_layers, ...)."""
    return make_spec(config, name, FIRST_SEED, MODELS[name])["model"]


def model_folder(model="{model}", seed="{seed}"):
    """A model's result folder (by default the pattern, with wildcards model and seed)."""
    return f"{RESULTS}/{model}/seed{seed}"


def model_file(name):
    """Path pattern of ``name`` in a model's result folder (wildcards model, seed)."""
    return f"{model_folder()}/{name}"


def per_model(name, models=None):
    """``name`` in the result folder of every seed of ``models`` (default: every registered model)."""
    return expand(model_file(name), model=list(models or MODELS), seed=SEEDS)


# Every checkpoint a training run writes, by name, so that a deleted one is rebuilt (every
# model trains on the config's train: settings, so the schedule is one for all).
CHECKPOINT_FILES = [f"{CHECKPOINTS}/{checkpoint_name(step)}" for step in
                    checkpoint_steps(config["train"]["steps"], config["train"]["n_checkpoints"])]


def checkpoint_files(folder=None):
    """The checkpoint files in the result folder ``folder`` (default: the pattern)."""
    return [f"{folder or model_folder()}/{name}" for name in CHECKPOINT_FILES]


# Every file a stage publishes: each stage's rules.smk registers a function that lists its
# own (@published), and `all` takes them all (report.smk, published_outputs), so that a
# deleted one is rebuilt.
PUBLISHED = []


def published(outputs):
    """Register ``outputs`` (a function of nothing that returns paths) as files a stage publishes."""
    PUBLISHED.append(outputs)
    return outputs


def seed_figures(name):
    """A per-seed figure folder of every seed of every model when report.seed_figures is
    "every"; otherwise none beyond the first seed's that the report shows (any other
    folder builds on request: snakemake results/two_layer/seed3/figures/attention)."""
    return per_model(name) if config["report"]["seed_figures"] == "every" else []


def spec_json(name, seed):
    """The resolved spec of model ``name`` and ``seed``, as JSON text."""
    return json.dumps(make_spec(config, name, int(seed), MODELS[name]), sort_keys=True)


def model_spec_json(wildcards):
    """The resolved spec of one model (a training job's parameter: a change reruns that
    model only)."""
    return spec_json(wildcards.model, wildcards.seed)


def stage_settings_json(wildcards):
    """The keys settings file {stage} holds (inductionlab.stages.settings), as JSON: a
    change to another key leaves the file, and every job that reads it, as they are."""
    return json.dumps(settings_document(config, wildcards.stage), sort_keys=True)


SETTINGS_READ = set()  # the settings files some rule reads


def settings_file(stage):
    """results/settings/{stage}.json: the keys of the config one kind of job reads
    (inductionlab.stages.settings.SETTINGS_FILES), or an experiment's settings."""
    SETTINGS_READ.add(stage)
    return f"{RESULTS}/settings/{stage}.json"


# ---------------------------------------------------------------- one model's analyses
# The analyses that read only one model and seed (its model, checkpoints, weights and the
# settings files) are each a command of a stage, registered here with model_analysis; rule
# `analyse` (workflow/rules/analyses.smk) runs every one of them for a model and seed in
# one process (inductionlab together), each with its own options and records, so the
# package and torch are imported once a model instead of once a stage.

MODEL_ANALYSES = {}  # name -> {"command", "input", "output", "options", "extra", "mem_mb", "runtime"}


def model_analysis(name, command, input, output, options=None, extra_input=(), mem_mb=1000,
                   runtime=10):
    """Register analysis ``name``: ``inductionlab <command>`` with each of ``input``,
    ``options`` (paths passed but not files of the rule, such as a folder) and ``output``
    (name -> path pattern of wildcards model and seed) as the option of its name, and
    ``extra_input`` files it needs without naming them (the checkpoints in their folder).
    Its names are checked against the command's options now, before any job runs."""
    from inductionlab.stages.registry import COMMANDS
    from inductionlab.workflow_checks import option_problems

    options = dict(options or {})
    problems = option_problems(f"model analysis {name!r}", command, [*input, *options], output,
                               COMMANDS)
    if problems:
        sys.exit("inductionlab: " + "\n  ".join(problems))
    MODEL_ANALYSES[name] = {"command": command, "input": dict(input), "output": dict(output),
                            "options": options, "extra": list(extra_input),
                            "mem_mb": mem_mb, "runtime": runtime}


def analysis_output(name, key):
    """The path pattern of output ``key`` of the registered analysis ``name``."""
    return MODEL_ANALYSES[name]["output"][key]


# ---------------------------------------------------------------- report registry
# A stage declares what the report shows of it with `report_section(...)` in its rule
# file; the report includes every registered section, so a new experiment appears in
# the report without editing a template. Per-model tables registered with
# `aggregated_table(name)` are stacked across models (every registered model, or the
# ones named) into results/tables/{name}.csv, with the spread across seeds in
# {name}_summary.csv.

REPORT_SECTIONS = []
AGGREGATED_TABLES = {}  # table name -> the models whose {name}.csv it stacks (None: every model)
REPORT_HIGHLIGHTS = []
# the claims.yaml of each experiment switched on, evaluated after workflow/claims.yaml
CLAIM_FILES = [str(p) for p in experiment_folders.claims_files(EXTRA_RULES)]


def report_highlight(path, text, front=False):
    """Register a finding for the summary's "beyond the write-up" list: ``text`` with each
    ``{variant:metric}`` replaced by that metric's mean [min, max] in the summary table
    ``path``, or in the first of a list of them that has it (numbers from the tables, never
    typed in). ``front``: on page 1 instead, below the answer."""
    paths = [path] if isinstance(path, str) else list(path)
    REPORT_HIGHLIGHTS.append({"paths": paths, "text": text, "front": bool(front)})


def aggregated_table(name, summary=False, models=None):
    """Path of the stacked table of ``{name}.csv`` of every seed of ``models`` (default:
    every registered model), or of its summary. A table is one set of models: naming it
    again with other models is an error."""
    models = list(models) if models is not None else None
    if AGGREGATED_TABLES.setdefault(name, models) != models:
        sys.exit(f"inductionlab: table {name!r} is aggregated over {AGGREGATED_TABLES[name]} "
                 f"and over {models}; give it one set of models")
    return table_path(name, summary)


# ---------------------------------------------------------------- figures
# Every figure is declared once, with its named inputs, beside the code that draws it
# (inductionlab.formatting.figure_registry); the `figure` rule of report.smk draws each to
# results/figures/<subject>/<name>.png: a model's name, "models" (the variants side by side)
# or "study". A rule file names a figure it shows with figure_path(name, scope).
FIGURES_SHOWN = set()  # (scope, name) of every figure some section shows


def figure_path(name, scope="model"):
    """Path of figure ``name`` of ``scope`` (``model``: results/figures/{model}/<name>.png,
    a pattern of the model; ``models``: the variants side by side; ``study``: a study's),
    registering the stacked tables and settings files it reads."""
    try:
        declared = figure_registry.declared(scope, name)
    except ValueError as err:
        sys.exit(f"inductionlab: {err}")
    for given in declared.inputs.values():
        if given.kind == "table" and given.name not in AGGREGATED_TABLES:
            aggregated_table(given.name)
        elif given.kind == "settings":
            settings_file(given.name)
    FIGURES_SHOWN.add((declared.scope, name))
    subject = {"model": "{model}", "models": "models", "study": "study"}[declared.scope]
    return f"{RESULTS}/figures/{subject}/{name}.png"


def figure_inputs(wildcards):
    """The figure's inputs by name, resolved for its subject (the rule's ``{subject}``)."""
    declared = figure_registry.declared(wildcards.subject, wildcards.figure)
    subject = wildcards.subject
    resolve = {
        "table": lambda i: table_path(i.name, i.summary),
        "settings": lambda i: settings_file(i.name),
        "each_seed": lambda i: expand(model_file(i.name), model=subject, seed=SEEDS),
        "first_seed": lambda i: model_file(i.name).format(model=subject, seed=FIRST_SEED),
        "each_variant": lambda i: expand(model_file(i.name), model=VARIANTS, seed=FIRST_SEED),
    }
    return {name: resolve[given.kind](given) for name, given in declared.inputs.items()}


def named_inputs(wildcards, input):
    """A job's inputs as the ``name=path`` words of its command line."""
    return " ".join(map(shlex.quote, figure_registry.pairs_of({n: input[n] for n in input.keys()})))


# ---------------------------------------------------------------- command lines
# A rule that runs a command names each path once, as its input or output, under the name
# of the command's option (input `head_scores` is `--head-scores`): its shell line is
# command_line(name) and its params `paths=named_paths`. The Snakefile checks, before any
# job runs, that each such rule's names are its command's options (rule_option_problems).


def command_line(name, threads=False):
    """The shell line of a rule that runs ``inductionlab <name>`` with every named input and
    output as the option of that name (``threads``: and ``--threads``), logged."""
    return (f"inductionlab {name} {{params.paths}}" + (" --threads {threads}" if threads else "")
            + " > {log} 2>&1")


def named_paths(wildcards, input, output):
    """A job's named inputs and outputs as ``--name path ...`` words."""
    words = []
    for files in (input, output):
        for name in files.keys():
            paths = [files[name]] if isinstance(files[name], str) else list(files[name])
            words += [f"--{name.replace('_', '-')}", *map(shlex.quote, map(str, paths))]
    return " ".join(words)


def table_path(name, summary=False):
    """Path of an aggregated table that is registered already."""
    return f"{RESULTS}/tables/{name}{'_summary' if summary else ''}.csv"


def aggregated_inputs(name):
    """The per-model files the table ``name`` stacks."""
    return per_model(f"{name}.csv", AGGREGATED_TABLES[name])


def report_section(name, title, scope="variant", order=50, text="", tables=(), figures=(),
                   template=None, variants=None, chapter=None):
    """Register a report section.

    scope: "variant" (shown with every variant side by side in the body chapter named
    ``chapter``, default its own title, and per variant in the appendix; paths may use
    {model} and {seed}, the first seed) or "study" (once, after the chapters). In the body
    a table is shown once with a row (or rows) per variant; a figure whose path is the
    same for every variant (e.g. ``figure_path(name, "models")``) once; a per-variant figure once
    per variant.
    tables: dicts with path, caption and display options (where, spread, pivot, sort,
    columns, max_rows, rank, dedupe; see inductionlab.report.tables.render_table; models:
    a list of models to show side by side, as the body does for a variant section);
    appendix: True (or a list of variants) puts it in the model's per-seed appendix
    instead of the body.
    figures: dicts with path, caption and, for a file inside a directory output, dir;
    appendix as for tables.
    template: an optional jinja2 fragment (path relative to the rule file that calls
    this, or absolute) that replaces the default rendering (text, tables, figures).
    variants: limit a variant-scope section to these variants.
    """
    if template and not os.path.isabs(template):
        template = os.path.join(workflow.current_basedir, template)
    REPORT_SECTIONS.append(dict(name=name, title=title, scope=scope, order=order, text=text,
                                tables=list(tables), figures=list(figures), template=template,
                                variants=variants, chapter=chapter or title))


def section_prose(path, **values):
    """The words of a report section (title, text, captions) from a prose file: a YAML
    mapping of names to jinja2 templates rendered with ``values``. ``path`` is relative to
    the rule file that calls this."""
    from inductionlab.report.prose import ProseError, read_prose

    try:
        return read_prose(os.path.join(workflow.current_basedir, path), **values)
    except ProseError as err:
        sys.exit(f"inductionlab: {err}")


def _resolve(spec, chapter):
    """A table or figure spec with its paths formatted for one chapter: {model} (or
    {model}) is the chapter's variant, {seed} the first seed."""
    out = dict(spec)
    for key in ("path", "dir"):
        if key in out:
            out[key] = out[key].format(variant=chapter, model=chapter, seed=FIRST_SEED)
    return out


def resolved_sections():
    """Every section with its tables and figures per variant (or "_study")."""
    sections = []
    for s in REPORT_SECTIONS:
        keys = ((s["variants"] or VARIANTS) if s["scope"] == "variant" else ["_study"])
        items = {key: {"tables": [_resolve(t, key) for t in s["tables"]],
                       "figures": [_resolve(f, key) for f in s["figures"]]}
                 for key in keys}
        sections.append({k: s[k] for k in ("name", "title", "scope", "order", "text", "template",
                                           "chapter")}
                        | {"items": items})
    return sections


def missing_files(paths):
    """Those of ``paths`` that are not there now, in order."""
    return [p for p in paths if not os.path.exists(p)]


def report_inputs():
    """Every file the registered sections show (directories for files inside them)."""
    paths = []
    for s in resolved_sections():
        for items in s["items"].values():
            paths += [t["path"] for t in items["tables"]]
            paths += [f.get("dir", f["path"]) for f in items["figures"]]
    paths += [p for h in REPORT_HIGHLIGHTS for p in h["paths"]]
    return sorted(set(paths))


def claim_groups():
    """The write-up's algorithms that group the claims (``groups`` in workflow/claims.yaml)."""
    from inductionlab.claims.rules import load_settings

    return load_settings(os.path.join(workflow.basedir, "workflow", "claims.yaml"))["groups"]


def report_manifest_json(wildcards):
    """The report manifest: title, config, the headline table and every registered section."""
    from inductionlab.core.data import TaskConfig, loss_floor

    manifest = {
        "title": config["report"]["title"],
        "config": config,
        "variants": VARIANTS,
        "seeds": SEEDS,
        "loss_floor": loss_floor(TaskConfig.from_dict(config["task"])),
        "scorecard": f"{RESULTS}/tables/scorecard.csv",
        "families": {name: f["title"] for name, f in FAMILIES.items()},
        "family_comparison": f"{RESULTS}/tables/family_comparison.csv",
        "claim_groups": list(claim_groups().items()),  # a list: the manifest's keys are sorted
        "failure_modes": aggregated_table("failure_modes", summary=True),
        # what the summary reads of every model (the readings rule), page 1's figure
        **READINGS,
        "period_test": PERIOD_FIGURE[0] if PERIOD_FIGURE else None,
        "highlights": REPORT_HIGHLIGHTS,
        "train_log": aggregated_table("train_log"),
        "headline": {
            "path": aggregated_table("behaviour", summary=True),
            "where": {"variant": VARIANTS},  # an experiment's models are in its section
            "spread": {"index": ["variant"],
                       "metrics": ["loss_all", "loss_pred", "floor_loss_pred", "acc_pred",
                                   "floor_acc_pred", "random_len12_acc_mean",
                                   "random_len6_acc_mean", "icl_score"]},
        },
        "sections": resolved_sections(),
    }
    return json.dumps(manifest, sort_keys=True)
