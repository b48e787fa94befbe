# inductionlab: train tiny attention-only transformers on the repeated-block letter
# task and reverse-engineer them. Run with `snakemake --cores 8`.
import os
import sys

from inductionlab import experiments as experiment_folders
from inductionlab import stages as stage_folders
from inductionlab.config import ConfigError, check_workflow_config, read_yaml
from inductionlab.config_overrides import retype_overrides
from inductionlab.workflow_checks import (cap_local_cores, directories_under, missing_config_file,
                                          output_path_problems, rule_file_patterns,
                                          rule_folder_problems, rule_option_problems, shown_path)

# Every config file read first as data only (inductionlab.config.read_yaml): a YAML syntax
# error, a key given twice (which Snakemake would let replace the first), aliases expanding
# without bound, an empty file or a YTE template (__use_yte__, whose values Snakemake runs
# as Python) is one line naming the file, before `configfile:` below loads config.yaml.
# Snakemake's command line loads --configfile files before this Snakefile runs (YTE
# included): `inductionlab check-config FILE` reads a file from elsewhere without running it.
try:
    for _file in (["config.yaml"] if os.path.exists("config.yaml") else []) + list(
        workflow.overwrite_configfiles or []
    ):
        read_yaml(shown_path(_file))
except ConfigError as err:
    sys.exit(f"inductionlab: {err}")
# No config.yaml here: say so, and how to point at one (not "'variants' is a required
# property" or Snakemake's own error), before and after the --configfile files are read.
_missing = missing_config_file(os.getcwd(), workflow.overwrite_configfiles)
if _missing:
    sys.exit(f"inductionlab: {_missing}")


configfile: "config.yaml"


# `--config` values read as a config file reads them (seeds=[0,1] is two integers).
retype_overrides(config, workflow.config_settings.config)

_missing = missing_config_file(os.getcwd(), workflow.overwrite_configfiles, config)
if _missing:
    sys.exit(f"inductionlab: {_missing}")


# The whole config check (the one `inductionlab check-config` runs), before any job is
# scheduled: the schema with its defaults, cross-field rules, every experiment switched on
# against its own schema and check, extra_rules resolved to files. Errors name the key; no
# traceback. Only the experiments switched on are imported (by the check): a folder that is
# not runs no code here, and one that is broken stops nothing that does not use it.
try:
    EXTRA_RULES = check_workflow_config(
        config, workflow.basedir, experiment_folders.available(load=False)
    )
except ConfigError as err:
    sys.exit(f"inductionlab: {err}")


# Every stage folder, imported: its commands and figures are declared before any rule file
# names them.
STAGE_FOLDERS = stage_folders.available()

# Locally, never more threads at work than the machine has cores (see cap_local_cores).
cap_local_cores(workflow)


include: "workflow/rules/common.smk"


# The experiments switched on (each a folder of src/inductionlab/experiments/, its
# rules.smk) and the extra rule files (found by check_workflow_config: a relative path in
# the working directory or, failing that, next to this Snakefile), before the stages: an
# experiment may register models, which every stage then trains and analyses like the
# variants.
for extra in EXTRA_RULES:

    include: extra


# Every registered model, and only those, matches a rule's {model}.
wildcard_constraints:
    model="|".join(MODELS),
    seed=r"\d+",


include: "workflow/rules/settings.smk"


# The stages: each a folder of src/inductionlab/stages/ (its rules.smk), found by the loader
# the experiments use; every registered model gets each of them.
for stage in STAGE_FOLDERS.values():

    include: stage.rules


include: "workflow/rules/analyses.smk"
include: "workflow/rules/report.smk"


# Every file the workflow publishes is a target, so a deleted one is rebuilt.
rule all:
    default_target: True
    input:
        published_outputs(),


# A rule that passes its paths by their names (command_line in common.smk) names exactly
# its command's options (every stage's and experiment's commands are declared by now: their
# packages were imported above).
from inductionlab.stages.registry import COMMANDS

_unnamed = rule_option_problems(workflow.rules, COMMANDS)
if _unnamed:
    sys.exit("inductionlab: " + "\n  ".join(_unnamed))


# Every rule, an experiment's and an extra rule file's too, writes in the working
# directory's results/ and reports/ (its log in logs/): nothing it writes lands elsewhere,
# where the report would read it as this run's.
_outside = rule_folder_problems(workflow.rules)
if _outside:
    sys.exit("inductionlab: " + "\n  ".join(_outside))


# A directory where a rule writes a file would pass for an up-to-date output.
_occupied = output_path_problems(directories_under(["results", "reports"]),
                                 rule_file_patterns(workflow.rules))
if _occupied:
    sys.exit("inductionlab: " + "\n  ".join(_occupied))
