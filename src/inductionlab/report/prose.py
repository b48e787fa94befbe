"""A report section's words (title, text, captions) kept out of the rule files.

A prose file is a YAML mapping of names to jinja2 templates; each is rendered with the
values the rule file passes (numbers derived from the config, model names) and its
whitespace folded to single spaces.
"""
from __future__ import annotations

from pathlib import Path

import jinja2
import yaml


class ProseError(ValueError):
    """A prose file that cannot be read or rendered; the message names the file and entry."""


def read_prose(path, **values) -> dict[str, str]:
    """Every entry of the prose file ``path``, rendered with ``values``."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ProseError(f"{path}: {err}") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ProseError(f"{path}: a prose file maps names to text")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    out = {}
    for name, text in data.items():
        try:
            out[name] = " ".join(env.from_string(text).render(**values).split())
        except jinja2.TemplateError as err:
            raise ProseError(f"{path}: {name}: {err}") from None
    return out
