"""What a finished run says, in a form two runs can be compared by: every table's digest
and the report's text.

A refactoring must leave the tiny end-to-end run's tables and report text as they were;
``tests/snapshots/tiny_run.json`` holds them, and ``test_workflow`` compares the tiny run
against it. A change that moves results on purpose writes it again, from a finished tiny
run, and says in its message what moved:

    python tests/snapshot.py WORKDIR > "$(python tests/snapshot.py --path)"

Tables are compared by their values (floats to 9 significant digits, so that the last bit
of a sum does not count); the report by its text, with what differs between two equal runs
(dates, durations, the run's folder, versions) masked.

The same code gives other floats on another kind of CPU: the matrix library and PyTorch's
vectorised kernels take other code paths on an Intel and an AMD core, and a few steps of
training carry the last bits into the third digit of a reported score. A kind of CPU
(its vendor and the instruction set PyTorch dispatches to) with its own snapshot,
``snapshots/tiny_run.<vendor>-<capability>.json``, is compared against that; any other
against ``snapshots/tiny_run.json``. ``--path`` prints the file this machine's own
snapshot belongs in (``snapshot_path`` the one it is compared against). Write a new kind's snapshot only from a run of code whose snapshot passes on a
kind already recorded. A change that moves results on purpose writes its own kind's
snapshot and deletes the others, which it cannot check; a kind left without one is not
compared (the test says so and skips) until a run on it records one.
"""
from __future__ import annotations

import hashlib
import html.parser
import json
import re
import sys
from pathlib import Path

import pandas as pd

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"


def cpu_kind() -> str:
    """The CPU's vendor and the instruction set PyTorch's kernels dispatch to here, e.g.
    ``GenuineIntel-AVX512``: what the tiny run's last bits depend on besides the code."""
    import torch

    vendor = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("vendor_id"):
                vendor = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{vendor}-{torch.backends.cpu.get_cpu_capability()}"


def snapshot_path() -> Path:
    """The snapshot this machine's tiny run is compared against (see the module's text)."""
    own = SNAPSHOTS / f"tiny_run.{cpu_kind()}.json"
    return own if own.exists() else SNAPSHOTS / "tiny_run.json"


SNAPSHOT = snapshot_path()
# columns that differ between two equal runs: wall-clock times
TIMING = re.compile(r"(?:^|_)(?:seconds|wall|time_s|elapsed|ms_per_step|timestamp)(?:$|_)")
MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d| UTC)?"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)? ?(s|min|h|seconds|minutes)\b"), "<duration>"),
    (re.compile(r"/(tmp|work|check|root|home)/\S+"), "<path>"),
    (re.compile(r"(?<![\w.−-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)([0-9a-f]{40}|[0-9a-f]{7,12})\b"), "<commit>"),
    (re.compile(r"\b(torch|snakemake|python|pandas|matplotlib|jinja2|weasyprint|numpy)"
                r"[ =]+\d+(\.\d+)*\S*", re.I), r"\1 <version>"),
]


def _tables(work: Path) -> list[Path]:
    results = work / "results"
    return sorted(p for p in results.rglob("*.csv") if "benchmarks" not in p.parts)


def table_digest(path: Path) -> str:
    """The digest of a table's values: columns in order, floats to 9 significant digits,
    wall-clock columns (and rows, in a long table) left out."""
    frame = pd.read_csv(path)
    frame = frame[[c for c in frame.columns if not TIMING.search(str(c))]]
    if "metric" in frame:  # a long table: wall-clock times are rows
        frame = frame[~frame["metric"].astype(str).str.contains(TIMING)]
    text = frame.to_csv(index=False, float_format="%.9g")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# a report table's column of wall-clock times, by its header
TIMING_HEADER = re.compile(r"\btime \(s\)|\belapsed\b|\bseconds\b")


class _Text(html.parser.HTMLParser):
    """The text of an HTML page, cells separated by " | ", with the cells of a wall-clock
    column (by its header) left out."""

    def __init__(self):
        super().__init__()
        self.parts, self._skip = [], 0
        self._timing, self._column, self._cell, self._in_cell = set(), 0, [], False

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("style", "script")
        if tag == "table":
            self._timing = set()
        if tag == "tr":
            self._column = 0
        if tag in ("td", "th"):
            self._in_cell, self._cell = True, []
        if tag in ("p", "li", "tr", "h1", "h2", "h3", "h4", "figcaption", "caption", "div", "br"):
            self.parts.append("\n")

    def handle_endtag(self, tag):
        self._skip -= tag in ("style", "script")
        if tag in ("td", "th") and self._in_cell:
            text = "".join(self._cell)
            if tag == "th" and TIMING_HEADER.search(text):
                self._timing.add(self._column)
            if self._column not in self._timing:
                self.parts.append(text + " | ")
            self._column += 1
            self._in_cell = False

    def handle_data(self, data):
        if self._skip:
            return
        (self._cell if self._in_cell else self.parts).append(data)


def report_text(html_path: Path) -> list[str]:
    """The report's text, one line per paragraph, cell row or heading, masked."""
    parser = _Text()
    parser.feed(html_path.read_text())
    lines = [" ".join(line.split()) for line in "".join(parser.parts).split("\n")]
    out = []
    for line in filter(None, lines):
        for pattern, mask in MASKS:
            line = pattern.sub(mask, line)
        out.append(line)
    return out


def snapshot(work: Path) -> dict:
    work = Path(work)
    return {"tables": {str(p.relative_to(work)): table_digest(p) for p in _tables(work)},
            "report_text": report_text(work / "reports" / "report.html")}


def differences(now: dict, then: dict) -> list[str]:
    """What differs between two snapshots, one line each (empty: nothing)."""
    out = []
    for name in sorted(set(now["tables"]) | set(then["tables"])):
        a, b = now["tables"].get(name), then["tables"].get(name)
        if a != b:
            out.append(f"{name}: " + ("new" if b is None else "gone" if a is None else "values differ"))
    old, new = then["report_text"], now["report_text"]
    if old != new:
        import difflib

        diff = [d for d in difflib.unified_diff(old, new, "snapshot", "now", n=0, lineterm="")
                if d[:1] in "+-" and not d.startswith(("+++", "---"))]
        out.append(f"report text: {len(diff)} line(s) differ, first: " + " | ".join(diff[:6]))
    return out


if __name__ == "__main__":
    if sys.argv[1:] == ["--path"]:  # the file a snapshot of this machine's run belongs in
        print(SNAPSHOTS / f"tiny_run.{cpu_kind()}.json")
        sys.exit(0)
    json.dump(snapshot(Path(sys.argv[1])), sys.stdout, indent=1)
    sys.stdout.write("\n")
