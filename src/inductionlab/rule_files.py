"""The rule files of ``extra_rules``: found in the working directory or the workflow's
folder, none the workflow includes itself, each one Snakemake parses."""
from __future__ import annotations

import re
from pathlib import Path

from .config_files import ConfigError


def included_rule_files(workflow_dir: str | Path, experiments: dict | None = None) -> dict[str, str]:
    """The rule files the workflow includes itself, resolved path -> what it is: every
    ``include: "..."`` of its Snakefile, every stage folder's ``rules.smk``, and each experiment's ``rules.smk`` (``experiments``:
    name -> :class:`inductionlab.folders.Folder`), included when it is switched on."""
    workflow_dir = Path(workflow_dir)
    taken = {}
    try:
        text = (workflow_dir / "Snakefile").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    for match in re.finditer(r"""^\s*include:\s*(["'])(.+?)\1""", text, flags=re.M):
        taken[str((workflow_dir / match.group(2)).resolve())] = (
            "a rule file the Snakefile includes itself")
    from . import stages

    for name, stage in stages.available(load=False).items():
        if stage.problem is None:
            taken[str(stage.rules.resolve())] = (f"the rules of the {name} stage, which the "
                                                 "Snakefile includes itself")
    for name, experiment in (experiments or {}).items():
        rules = getattr(experiment, "rules", None)
        if rules is not None:
            taken[str(Path(rules).resolve())] = (
                f"the rules of experiment {name!r}, included when it is switched on (write "
                f"`experiments: {{{name}: {{}}}}` instead)")
    return taken


def extra_rule_files(paths: list[str], workflow_dir: str | Path,
                     cwd: str | Path | None = None, experiments: dict | None = None) -> list[str]:
    """The files of ``extra_rules`` as absolute paths.

    An absolute path is taken as it is; a relative one is looked up in the working
    directory ``cwd`` first, then in the workflow's own folder ``workflow_dir`` (the
    Snakefile's), so ``workflow/rules/extra/x.smk`` works with ``snakemake -s .../Snakefile
    -d elsewhere``. A file found nowhere, or one the workflow includes itself (see
    :func:`included_rule_files`), raises :class:`ConfigError` naming the entry.
    """
    cwd = Path(cwd) if cwd is not None else Path.cwd()
    taken = included_rule_files(workflow_dir, experiments)
    found, problems = [], []
    for k, entry in enumerate(paths):
        path = Path(entry)
        candidates = [path] if path.is_absolute() else [cwd / path, Path(workflow_dir) / path]
        hit = next((c for c in candidates if c.is_file()), None)
        if hit is None:
            problems.append(f"extra_rules.{k}: {entry!r} is not a file (looked in "
                            + " and ".join(str(c.parent.resolve()) for c in candidates) + ")")
        elif str(hit.resolve()) in taken:
            problems.append(f"extra_rules.{k}: {entry!r} is {taken[str(hit.resolve())]}; "
                            "a rule file included twice defines its rules twice")
        elif str(hit.resolve()) in found:
            problems.append(f"extra_rules.{k}: {entry!r} is the same file as extra_rules."
                            f"{found.index(str(hit.resolve()))}; give each rule file once")
        else:
            found.append(str(hit.resolve()))
            problem = rule_file_problem(hit)
            if problem:
                problems.append(f"extra_rules.{k}: {entry!r} {problem}")
    if problems:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(problems))
    return found


def rule_file_problem(path) -> str | None:
    """What makes ``path`` no Snakemake rule file (not ``.smk``, not text, a syntax error
    at a line), or None. Parsed as Snakemake parses an included file; nothing is run."""
    path = Path(path)
    if path.suffix != ".smk":
        return "is not a rule file (a rule file is named <experiment>.smk)"
    try:
        path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return "is not a text file, so not a rule file"
    from snakemake import parser
    from snakemake.sourcecache import LocalSourceFile

    class _Sources:
        @staticmethod
        def open(source):
            return open(source.get_path_or_uri(secret_free=True), encoding="utf-8")

    class _Workflow:
        sourcecache = _Sources()

    try:
        code, _ = parser.parse(LocalSourceFile(str(path)), _Workflow(), {})
        compile(code, str(path), "exec")
    except SyntaxError as err:
        return f"does not parse: {err.msg}" + (f" (line {err.lineno})" if err.lineno else "")
    except Exception as err:  # noqa: BLE001 - Snakemake's own parse errors
        return f"does not parse: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
    return None
