"""docs/development.md documents every option of a report table that the renderer reads,
and its worked example registers its section with the keys the experiment's rule file
uses."""
import re

from helpers import ROOT

DOC = ROOT / "docs" / "development.md"
RENDERER = [ROOT / "src" / "inductionlab" / "report" / f for f in ("tables.py", "render.py")]


def options_section() -> str:
    text = DOC.read_text()
    return text.split("### A report table's options", 1)[1].split("\n## ", 1)[0]


def keys_read() -> dict[str, set[str]]:
    """Option -> its sub-keys, as the renderer reads a table spec (``spec["rank"]`` read as
    ``rk[...]``, ``spec["pivot"]`` as ``pv[...]``)."""
    code = "\n".join(p.read_text() for p in RENDERER)
    options = set(re.findall(r'spec(?:\.get\(|\[)"(\w+)"', code))
    options |= set(re.findall(r'"(\w+)" in spec\b', code))
    subs = {o: set(re.findall(rf'spec\["{o}"\](?:\.get\(|\[)"(\w+)"', code)) for o in options}
    for short, option in (("rk", "rank"), ("pv", "pivot")):
        subs[option] |= set(re.findall(rf'\b{short}(?:\.get\(|\[)"(\w+)"', code))
    return subs


def test_every_table_option_the_renderer_reads_is_documented():
    section = options_section()
    documented = set(re.findall(r"^\| `(\w+)` \|", section, flags=re.M))
    read = keys_read()
    assert {"where", "models", "spread", "rank", "pivot", "shared", "dedupe"} <= set(read)
    assert sorted(set(read) - documented) == []
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| (.*)$", section, flags=re.M)}
    missing = sorted(f"{o}.{k}" for o, ks in read.items() for k in ks
                     if not re.search(rf"`{k}`|[{{ ]{k}:", rows[o]))
    assert missing == []


def test_the_worked_example_uses_the_keys_of_the_rule_file():
    text = DOC.read_text()
    example = text.split("**4. The report section**", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    rules = (ROOT / "src" / "inductionlab" / "experiments" / "positional_table" / "rules.smk").read_text()
    keys = set(re.findall(r'"(\w+)":', example))
    assert {"path", "caption", "models", "spread"} <= keys
    assert sorted(k for k in keys if f'"{k}":' not in rules) == []
