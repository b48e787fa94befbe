"""Checks of the working directory that Snakemake does not make before it schedules jobs."""
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

