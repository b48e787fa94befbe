"""The positional-table study: the write-up's models retrained with another q/k table
(:mod:`.analysis`; :mod:`.settings`; rules ``rules.smk``: it registers models and a claim
family only)."""
from . import settings  # noqa: F401 - registers the settings check
