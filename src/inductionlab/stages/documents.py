"""JSON documents a rule gives on its command line (settings files, model families), written atomically."""
from __future__ import annotations

from .commands import command, flag, integer, path, text


@command("write-json", "write a JSON document given on the command line, atomically (the "
         "workflow's settings files: a shell command, so no Python job)",
         out=path("the file to write"), document=text("the JSON text", required=True),
         indent=integer("spaces of indentation", default=2),
         sort_keys=flag("keys in sorted order"))
def write_json(out, document, indent, sort_keys):
    import json

    from ..atomic import write_text

    parsed = _json_document(out, document)
    try:
        text = json.dumps(parsed, indent=indent, sort_keys=sort_keys, allow_nan=False)
    except ValueError:
        raise ValueError(f"{out}: the document holds NaN or an infinity, which JSON has no "
                         "words for; nothing was written") from None
    write_text(out, text + "\n")


def _json_document(out, document: str):
    """The JSON ``document`` given on the command line for ``out``; else one error."""
    import json

    try:
        return json.loads(document)
    except json.JSONDecodeError as err:
        raise ValueError(f"{out}: the document is not JSON ({err})") from None
