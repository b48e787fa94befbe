"""Checks of the working directory that Snakemake does not make before it schedules jobs."""
from __future__ import annotations

import os
import re
import sys


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
