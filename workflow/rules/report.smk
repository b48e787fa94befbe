# Report: per-seed tables stacked across models, the claims scorecard, cross-seed
# figures, and the HTML and PDF built from every registered section.
# Include this file last: it reads the registry the other rule files fill.
# No `conda:` directive, for the reason given in train.smk.

import re
from types import SimpleNamespace

from inductionlab.analysis.roles import RULED_TABLES

# Light and study-wide: run where snakemake runs, never submitted to a cluster.
localrules:
    aggregate,
    claims,
    figure,
    figures,
    model_families,
    report_manifest,
    report,


rule aggregate:
    input:
        tables=lambda w: aggregated_inputs(w.table),
        # the head-role rule, for the tables it decides (roles, whether induction formed)
        roles=lambda w: [settings_file("roles")] if w.table in RULED_TABLES else [],
    output:
        long=f"{RESULTS}/tables/{{table}}.csv",
        summary=f"{RESULTS}/tables/{{table}}_summary.csv",
    wildcard_constraints:
        table="|".join(AGGREGATED_TABLES) or "none",
    params:
        # a training log must reach the last step (a cut-short one is refused)
        checks=lambda w: (f"--final-step {config['train']['steps']}" if w.table == "train_log"
                          else f"--roles {settings_file('roles')}" if w.table in RULED_TABLES else ""),
    log:
        "logs/aggregate/{table}.log",
    benchmark:
        "results/benchmarks/aggregate/{table}.tsv"
    shell:
        "inductionlab aggregate --name {wildcards.table} --long {output.long} "
        "--summary {output.summary} --inputs {input.tables} {params.checks} > {log} 2>&1"


rule model_families:
    output:
        families=f"{RESULTS}/report/families.json",
    params:
        families=json.dumps(FAMILIES, sort_keys=True),
    log:
        "logs/model_families.log",
    benchmark:
        "results/benchmarks/model_families.tsv"
    shell:
        "inductionlab write-json --out {output.families:q} --document {params.families:q} "
        "--indent 1 > {log} 2>&1"


rule claims:
    input:
        claims=[workflow.source_path("../claims.yaml"), *CLAIM_FILES],
        roles=settings_file("roles"),
        families=f"{RESULTS}/report/families.json",
        tables=lambda w: [table_path(t) for t in AGGREGATED_TABLES],
        # this run's models: the tables must hold exactly these, each from its spec
        specs=per_model("spec.json"),
    output:
        claims=f"{RESULTS}/tables/claims.csv",
        scorecard=f"{RESULTS}/tables/scorecard.csv",
        comparison=f"{RESULTS}/tables/family_comparison.csv",
    log:
        "logs/claims.log",
    benchmark:
        "results/benchmarks/claims.tsv"
    shell:
        "inductionlab claims --claims-yaml {input.claims} --claims {output.claims} "
        "--scorecard {output.scorecard} --tables {input.tables} --specs {input.specs} "
        "--roles {input.roles} --families {input.families} --comparison {output.comparison} "
        "> {log} 2>&1"


rule figure:
    input:
        unpack(figure_inputs),
    output:
        figure=f"{RESULTS}/figures/{{subject}}/{{figure}}.png",
    wildcard_constraints:
        subject="|".join([*MODELS, "models", "study"]),
        figure="|".join(sorted({name for _, name in FIGURES_SHOWN})) or "(?!)",
    params:
        inputs=named_inputs,
        # the models a figure of the variants side by side shows, in order
        models=lambda w: f"--models {','.join(VARIANTS)}" if w.subject == "models" else "",
    log:
        "logs/figure/{subject}/{figure}.log",
    benchmark:
        "results/benchmarks/figure/{subject}/{figure}.tsv"
    shell:
        "inductionlab figure --name {wildcards.figure} --subject {wildcards.subject} "
        "{params.models} --out {output.figure} --inputs {params.inputs} > {log} 2>&1"


rule report_manifest:
    output:
        f"{RESULTS}/report/manifest.json",
    params:
        manifest=report_manifest_json,
    log:
        "logs/report_manifest.log",
    run:
        from inductionlab.atomic import write_text

        write_text(output[0], json.dumps(json.loads(params.manifest), indent=1) + "\n")


rule report:
    input:
        manifest=f"{RESULTS}/report/manifest.json",
        scorecard=f"{RESULTS}/tables/scorecard.csv",
        comparison=f"{RESULTS}/tables/family_comparison.csv",
        headline=aggregated_table("behaviour", summary=True),
        # what the summary reads of every model, and page 1's figure
        readings=list(READINGS.values()),
        period_test=PERIOD_FIGURE,
        shown=lambda w: report_inputs(),
    output:
        html="reports/report.html",
        pdf="reports/report.pdf",
    log:
        "logs/report.log",
    benchmark:
        "results/benchmarks/report.tsv"
    shell:
        "inductionlab report --manifest {input.manifest} --html {output.html} --pdf {output.pdf} "
        "> {log} 2>&1"


# Snakemake rebuilds a deleted file only for a job that runs anyway: asked for the report
# alone, it takes a report whose shown figure or table was deleted for up to date (it
# compares its inputs' checksums, not their dates). `snakemake`, whose targets are every
# published file, rebuilds both; say so.
if workflow.is_main_process and os.path.exists(rules.report.output.html):
    _deleted = missing_files(report_inputs())
    if _deleted:
        print(f"inductionlab: {len(_deleted)} file(s) the report shows are missing ("
              + ", ".join(_deleted[:3]) + (", ..." if len(_deleted) > 3 else "")
              + "); `snakemake` rebuilds them and the report, `snakemake reports/report.html` "
              "alone does not", file=sys.stderr)


def published_outputs():
    """Every file the workflow publishes: each is a target of `all`, so that a deleted one
    is rebuilt (with what depends on it) by the next run."""
    tables = [table_path(t, summary) for t in AGGREGATED_TABLES for summary in (False, True)]
    tables += [path for t in AGGREGATED_TABLES for path in aggregated_inputs(t)]  # per model
    study = [*rules.claims.output, *rules.model_families.output, *rules.report_manifest.output,
             *rules.report.output]
    settings = [settings_file(stage) for stage in sorted(SETTINGS_READ)]
    return sorted(set(
        [path for outputs in PUBLISHED for path in outputs()] + tables + study + settings
        + report_inputs()))


# Every figure the run shows or publishes, drawn in one process (inductionlab together:
# matplotlib, pandas and the figure registry imported once, not once a figure). A figure
# asked for by name that is not among them (another seed's, a model's the report does not
# show) is drawn by the rule `figure` alone.
FIGURE_FILE = re.compile(rf"{RESULTS}/figures/([^/]+)/([^/]+)\.png")


def shown_figures():
    """(subject, figure, path) of every figure file among the published outputs."""
    found = []
    names = {name for _, name in FIGURES_SHOWN}
    for path in published_outputs():
        match = FIGURE_FILE.fullmatch(path)
        if match and match[2] in names and match[1] in [*MODELS, "models", "study"]:
            found.append((match[1], match[2], path))
    return found


SHOWN_FIGURES = shown_figures()


def figure_command(subject, name, path):
    """The command line (without ``inductionlab``) that draws one figure."""
    wildcards = SimpleNamespace(subject=subject, figure=name)
    inputs = figure_inputs(wildcards)
    words = ["figure", "--name", name, "--subject", subject, "--out", path]
    if subject == "models":
        words += ["--models", ",".join(VARIANTS)]
    return shlex.join(words + ["--inputs", *figure_registry.pairs_of(inputs)])


rule figures:
    input:
        sorted({p for subject, name, _ in SHOWN_FIGURES
                for value in figure_inputs(SimpleNamespace(subject=subject, figure=name)).values()
                for p in ([value] if isinstance(value, str) else value)}),
    output:
        [path for _, _, path in SHOWN_FIGURES],
    params:
        commands=" ".join(shlex.quote(figure_command(*f)) for f in SHOWN_FIGURES),
    log:
        "logs/figures.log",
    benchmark:
        "results/benchmarks/figures.tsv"
    shell:
        "inductionlab together --commands {params.commands} > {log} 2>&1"


ruleorder: figures > figure
