"""JSON documents a rule gives on its command line (settings files, model families), written atomically."""
from __future__ import annotations

import os
import re

from .commands import command, flag, integer, path, text

# the files the workflow writes with write-json, relative to its working directory: each
# settings file (workflow/rules/settings.smk) and the report's model families (report.smk)
WRITTEN_FILES = re.compile(r"results/settings/[A-Za-z0-9_]+\.json|results/report/families\.json")
WRITER = "write-json"
MAX_INDENT = 8  # spaces of indentation
MAX_DEPTH = 32  # arrays and objects nested; the workflow's documents nest four deep


@command(WRITER, "write a JSON document given on the command line, atomically (the "
         "workflow's settings files: a shell command, so no Python job)",
         out=path("the file to write: results/settings/<name>.json or results/report/families.json"),
         document=text("the JSON text", required=True),
         indent=integer(f"spaces of indentation, 0 to {MAX_INDENT}", default=2),
         sort_keys=flag("keys in sorted order"))
def write_json(out, document, indent, sort_keys):
    import json

    from ..atomic import write_text

    _check_destination(out)
    if not 0 <= indent <= MAX_INDENT:
        raise ValueError(f"{out}: --indent {indent} is outside 0 to {MAX_INDENT}; give a number "
                         "of spaces in that range; nothing was written")
    parsed = _json_document(out, document)
    try:
        text = json.dumps(parsed, indent=indent, sort_keys=sort_keys, allow_nan=False)
    except ValueError:
        raise ValueError(f"{out}: the document holds NaN or an infinity, which JSON has no "
                         "words for; nothing was written") from None
    write_text(out, text + "\n")


def _check_destination(out) -> None:
    """Refuse ``out`` unless it is a file the workflow writes with this command (relative
    to the working directory) and not one another command wrote (its record's writer)."""
    from ..records import RecordProblem, read_record

    where = os.path.relpath(os.path.abspath(out)).replace(os.sep, "/")
    if not WRITTEN_FILES.fullmatch(where):
        raise ValueError(f"{out}: {WRITER} writes only the workflow's settings files "
                         "(results/settings/<name>.json) and results/report/families.json, "
                         "relative to the working directory; nothing was written")
    try:
        record = read_record(out) if os.path.lexists(out) else None
    except RecordProblem:
        record = None  # unreadable: nothing tells that another command wrote it
    if record is not None and record.writer != f"inductionlab {WRITER}":
        raise ValueError(f"{out}: its record says {record.writer or 'another command'} wrote it, not {WRITER}; "
                         "delete it first if it is to be replaced; nothing was written")


def json_depth(value) -> int:
    """How deep arrays and objects nest in a parsed JSON ``value`` (a scalar: 0), counted
    level by level, without recursion."""
    depth, level = 0, [value]
    while True:
        level = [item for item in level if isinstance(item, (list, dict))]
        if not level:
            return depth
        depth += 1
        level = [v for item in level for v in (item.values() if isinstance(item, dict) else item)]


def _json_document(out, document: str):
    """The JSON ``document`` given on the command line for ``out``, nested at most
    :data:`MAX_DEPTH` deep; else one error."""
    import json

    too_deep = (f"{out}: the document nests arrays and objects more than {MAX_DEPTH} deep; "
                "give a flatter document; nothing was written")
    try:
        parsed = json.loads(document)
    except json.JSONDecodeError as err:
        raise ValueError(f"{out}: the document is not JSON ({err})") from None
    except RecursionError:
        raise ValueError(too_deep) from None
    if json_depth(parsed) > MAX_DEPTH:
        raise ValueError(too_deep)
    return parsed
