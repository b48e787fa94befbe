"""Checks of the working directory that Snakemake does not make before it schedules jobs,
and the workflow read as Snakemake reads it, for ``inductionlab check-config``."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

# the config file the Snakefile reads from the working directory (its `configfile:`)
CONFIG_FILE = "config.yaml"


def missing_config_file(cwd, given=(), config: dict | None = None, how: str | None = None) -> str | None:
    """What to say when the working directory ``cwd`` has no config.yaml and nothing else
    makes a config: no file ``given`` (``--configfile`` files, or check-config's FILEs), or
    ``config`` read from them without ``variants`` (overlays, which need the config.yaml they
    go over). None when there is nothing to say. ``how``: the other ways to point at a
    config (default: Snakemake's ``--directory`` and ``--configfile``)."""
    if (Path(cwd) / CONFIG_FILE).is_file():
        return None
    if given and (config is None or "variants" in config):
        return None
    what = ("" if not given else
            f" and {', '.join(str(g) for g in given)} {'holds' if len(given) == 1 else 'hold'} no "
            "variants (an overlay goes over config.yaml)")
    return (f"{CONFIG_FILE} was not found in {Path(cwd).resolve()}{what}: run in the folder that "
            "holds it, " + (how or "name that folder with --directory (-d), or give a full config "
                            "with --configfile FILE"))


def shown_path(path) -> str:
    """``path`` as a message names it: relative to the working directory when inside it
    (Snakemake gives --configfile files as absolute paths), else as it is."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(os.path.abspath(os.getcwd())))
    except ValueError:
        return str(path)


def directories_under(roots) -> list[str]:
    """Every directory below each of ``roots`` (relative paths, as the rules name them)."""
    found = []
    for root in roots:
        for parent, dirs, _ in os.walk(root):
            found += [os.path.join(parent, d) for d in dirs]
    return found


def output_path_problems(directories, file_patterns) -> list[str]:
    """One message per directory that sits where a rule writes a file.

    ``file_patterns``: compiled regexes of the rules' file (non-directory) outputs.
    Snakemake would take such a directory as an up-to-date output.
    """
    problems = []
    for path in sorted(directories):
        if any(p.fullmatch(path) for p in file_patterns):
            problems.append(f"{path} is a directory, but the workflow writes a file there; "
                            f"remove it (rm -r {path}) and run again")
    return problems


def rule_file_patterns(rules) -> list[re.Pattern]:
    """Regexes of every file output of the Snakemake ``rules`` (directory outputs left out)."""
    return [out.regex() for rule in rules for out in rule.output if not out.is_directory]


# the folders of the working directory a rule may write in: the results, the report, and
# each job's log and benchmark
WRITTEN_FOLDERS = ("results", "reports", "logs", "benchmarks")


def rule_folder_problems(rules, folders=WRITTEN_FOLDERS) -> list[str]:
    """One line per file or folder one of the Snakemake ``rules`` writes (an output, a log,
    a benchmark) outside ``folders`` of the working directory: an absolute path, one that
    climbs out (``../``) or one that starts elsewhere (a wildcard first included, since it
    may stand for anything)."""
    allowed = ", ".join(f"{f}/" for f in folders)
    problems = []
    for rule in rules:
        benchmark = getattr(rule, "benchmark", None)
        for what, paths in (("output", rule.output), ("log", rule.log),
                            ("benchmark", [benchmark] if benchmark else [])):
            for path in paths:
                path = str(path)
                parts = Path(os.path.normpath(path)).parts
                if os.path.isabs(path) or len(parts) < 2 or parts[0] not in folders:
                    problems.append(f"rule {rule.name}: its {what} {path!r} lies outside the "
                                    f"folders the workflow writes in ({allowed}); write it under "
                                    "results/")
    return problems


NAMED_COMMAND = re.compile(r"^inductionlab ([\w-]+) \{params\.paths\}")


def rule_option_problems(rules, commands) -> list[str]:
    """For each of the Snakemake ``rules`` whose shell line is ``command_line(name)`` (its
    paths passed by their names): a line for every input or output name that is no option
    of the command, and for every required option it does not give. ``commands``: name ->
    :class:`inductionlab.stages.commands.Command`."""
    problems = []
    for rule in rules:
        match = NAMED_COMMAND.match(getattr(rule, "shellcmd", None) or "")
        if match:
            problems += option_problems(f"rule {rule.name}", match.group(1), rule.input.keys(),
                                        rule.output.keys(), commands)
    return problems


def option_problems(who: str, name: str, inputs, outputs, commands) -> list[str]:
    """Lines for ``who`` (a rule, or one command of a rule that runs several) passing its
    named ``inputs`` and ``outputs`` to ``inductionlab <name>``: a name that is no option
    of the command, a required option not given, a command that does not exist."""
    if name not in commands:
        return [f"{who}: runs inductionlab {name}, which is no command"]
    options = commands[name].options
    inputs, outputs = set(inputs), set(outputs)
    given = inputs | outputs
    problems = [f"{who}: its {'input' if k in inputs else 'output'} "
                f"{k!r} is no option of inductionlab {name} (its options: "
                f"{', '.join(sorted(options))}); name it as the option it is passed as"
                for k in sorted(given - set(options))]
    missing = {o for o, opt in options.items() if opt.required} - given
    return problems + [f"{who}: inductionlab {name} needs --{o.replace('_', '-')}, "
                       "which it does not name" for o in sorted(missing)]


def usable_cores() -> int:
    """CPU cores this process may use: its affinity mask, capped by a cgroup v2 CPU quota."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = open("/sys/fs/cgroup/cpu.max").read().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, -(-int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def cap_local_cores(workflow, log=None) -> int | None:
    """Lower a local run's ``--cores`` to the cores this machine has; returns the new value.

    Run locally, ``--cores N`` is a budget for jobs that each use their ``threads`` of CPU;
    beyond the machine's cores they only take turns, each slower. A cluster run (with
    ``--jobs``, so Snakemake's ``_nodes`` is set) is left alone. ``workflow``: the
    Snakefile's ``workflow`` object.
    """
    resources = workflow.global_resources
    if resources["_nodes"].value is not None:
        return None
    asked, have = resources["_cores"].value, usable_cores()
    if asked is None or asked <= have:
        return None
    resources["_cores"] = have
    (log or (lambda msg: print(msg, file=sys.stderr)))(
        f"inductionlab: this machine has {have} core(s): jobs use at most {have} at once "
        f"(--cores {asked} asked for more)")
    return have


def workflow_models(workflow_dir, configfiles=(), workdir=None, replace=False) -> dict[str, str]:
    """The workflow's Snakefile read in ``workdir`` (default: here) as ``snakemake
    --configfile CONFIGFILES`` reads it (with ``replace``, as ``--replace-workflow-config``
    too: the files replace config.yaml), without building a job: its config check, every
    model and family the experiments and extra rule files register (each checked by
    ``register_model``), every table, figure and section they declare, and the check of
    the working folder. Returns every model the workflow trains, name -> the variant it is
    (or is derived from). Raises :class:`inductionlab.config.ConfigError` with what the
    workflow said, when it refuses."""
    import logging
    import traceback

    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    from .config import ConfigError

    snakefile = Path(workflow_dir).resolve() / "Snakefile"
    log = logging.getLogger("snakemake.logging")
    level = log.level  # Snakemake sets its logger's level: put back when done
    try:
        # dryrun: no log file in .snakemake/; warnings only: no "Config file config.yaml is
        # extended by ..."; one core, so that no message about cores
        with SnakemakeApi(OutputSettings(quiet={Quietness.ALL}, dryrun=True,
                                         log_level_override=logging.WARNING)) as api:
            workflow_api = api.workflow(
                resource_settings=ResourceSettings(cores=1),
                config_settings=ConfigSettings(configfiles=[Path(f) for f in configfiles],
                                               replace_workflow_config=replace),
                snakefile=snakefile, workdir=Path(workdir or os.getcwd()).resolve())
            # the parsed workflow (Snakemake's API has no public handle on its globals)
            models = dict(workflow_api._workflow.globals["MODELS"])
    except SystemExit as stop:  # the Snakefile's and the rule files' refusals: sys.exit(message)
        raise ConfigError(str(stop.code).removeprefix("inductionlab: ")) from None
    except Exception as err:  # noqa: BLE001 - whatever a rule file raises while it is read
        rules = [f for f in traceback.extract_tb(err.__traceback__)
                 if f.filename.endswith((".smk", "Snakefile"))]
        where = f" in {rules[-1].filename}, line {rules[-1].lineno}" if rules else ""
        lines = [l.strip() for l in str(err).strip().splitlines() if l.strip()]
        raise ConfigError(f"the workflow refuses this config: {type(err).__name__}{where}: "
                          + " ".join(lines[:3])) from None
    finally:
        log.setLevel(level)
    return {name: (derived.base if derived is not None else name) for name, derived in models.items()}


def model_count_words(variants, models: dict, seeds) -> str:
    """What check-config says is trained: "3 variant(s) + 4 registered model(s) = 7
    model(s) x 5 seed(s) = 35 model(s) trained" (``models``: every model, variants too)."""
    n_variants, n = len(variants), len(models)
    extra = f" + {n - n_variants} registered model(s) = {n} model(s)" if n > n_variants else ""
    return (f"{n_variants} variant(s){extra} x {len(seeds)} seed(s) = {n * len(seeds)} "
            "model(s) trained")
