"""Checks of the working directory that Snakemake does not make before it schedules jobs."""
from __future__ import annotations

import os
import re


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
