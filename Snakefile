# inductionlab: train tiny attention-only transformers on the repeated-block letter
# task and reverse-engineer them. Run with `snakemake --cores 8`.
from inductionlab.config import extra_rule_files, validate_config


configfile: "config.yaml"


# Validate (and fill defaults) before any job is scheduled; errors name the key.
validate_config(config, workflow.source_path("workflow/schemas/config.schema.yaml"))


include: "workflow/rules/common.smk"
include: "workflow/rules/settings.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/circuits.smk"
include: "workflow/rules/behaviour.smk"
include: "workflow/rules/ablations.smk"
include: "workflow/rules/dynamics.smk"


# Extra experiments: a relative path is found in the working directory or, failing that,
# next to this Snakefile (so `-s path/to/Snakefile -d elsewhere` finds the project's own).
for extra in extra_rule_files(config["extra_rules"], workflow.basedir):

    include: extra


include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        "reports/report.html",
        "reports/report.pdf",
        all_weights(),
        circuit_outputs(),
        behaviour_outputs(),
        ablation_outputs(),
        dynamics_outputs(),
