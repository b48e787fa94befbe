"""The README and docs/: short enough, their links and file paths resolve, the quickstart
commands are the ones CI runs, and every number they quote that the code or another doc
can check agrees with it."""
import importlib.util
import math
import re
from pathlib import Path

import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
ALL_DOCS = [README, *DOCS]

INSTALL_AND_RUN = "pip install -e . && snakemake --cores 8"
INSTALL_AND_TEST = "pip install -e '.[test]' && python -m pytest"

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# a path inside the repository, in backticks: starts at a tracked top-level folder, no
# wildcards or placeholders
REPO_PATH = re.compile(r"`((?:src|workflow|tests|benchmarks|profiles|docs|\.ci)/[^`\s{}<>*]*)`")


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", read(path), flags=re.S)  # no headings in code blocks
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", text, flags=re.M)}


def test_docs_exist():
    names = {p.name for p in DOCS}
    assert {"methods.md", "runtime.md", "development.md"} <= names


def test_readme_is_at_most_250_lines():
    lines = read(README).splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail to docs/"


def test_readme_has_both_quickstart_commands_in_its_quickstart():
    text = read(README)
    quickstart = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", quickstart, flags=re.S)
    assert block, "the Quickstart section has no bash block"
    commands = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    assert INSTALL_AND_RUN in commands
    assert INSTALL_AND_TEST in commands


def test_ci_runs_the_readme_test_command():
    ci = read(ROOT / ".ci" / "run")
    last = [line for line in ci.splitlines() if line.strip() and not line.startswith("#")][-1]
    assert last.strip() == INSTALL_AND_TEST


@pytest.mark.parametrize("doc", ALL_DOCS, ids=lambda p: p.name)
def test_every_relative_link_resolves(doc):
    broken = []
    for target in LINK.findall(read(doc)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading with anchor #{anchor} in {file.name}")
    assert not broken, f"{doc.name}: " + "; ".join(broken)


@pytest.mark.parametrize("doc", ALL_DOCS, ids=lambda p: p.name)
def test_every_repository_path_named_exists(doc):
    missing = sorted({p for p in REPO_PATH.findall(read(doc)) if not (ROOT / p).exists()})
    assert not missing, f"{doc.name} names files that do not exist: {missing}"


@pytest.mark.parametrize("doc", ALL_DOCS, ids=lambda p: p.name)
def test_no_doc_cites_a_file_outside_the_repository(doc):
    text = read(doc)
    assert "SCIENCE.md" not in text
    assert "../shared" not in text
    for target in LINK.findall(text):
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and target.partition("#")[0]:
            assert ROOT in (doc.parent / target.partition("#")[0]).resolve().parents, target


@pytest.mark.parametrize("doc", ALL_DOCS, ids=lambda p: p.name)
def test_no_doc_quotes_a_line_count(doc):
    """Line counts of files drift with every edit; the docs name files, not their length."""
    found = re.findall(r"\b\d[\d,]*[- ]lines?\b", read(doc))
    assert not found, f"{doc.name} quotes line counts {found}"


def test_source_pointers_to_methods_name_its_sections():
    """A docstring that says ``docs/methods.md, "Section"`` names a heading there."""
    headings = {m.group(1) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", read(ROOT / "docs" / "methods.md"),
                                                flags=re.M)}
    pointers = {}
    for path in sorted((ROOT / "src").rglob("*.py")):
        for section in re.findall(r'docs/methods\.md, "([^"]+)"', read(path)):
            pointers.setdefault(section, []).append(path.name)
    assert pointers, "no source file points to docs/methods.md"
    unknown = {s: files for s, files in pointers.items() if s not in headings}
    assert not unknown, f"docs/methods.md has no such section: {unknown}"


# numbers docs/methods.md quotes that the code computes


def default_config() -> dict:
    return yaml.safe_load(read(ROOT / "config.yaml"))


def test_methods_parameter_counts_match_the_model():
    from inductionlab.core.model import ModelConfig, build_model

    text = read(ROOT / "docs" / "methods.md")
    quoted = re.search(r"Parameters: ([\d,]+) \(1 layer\), ([\d,]+) \(1 layer, smeared keys\), "
                       r"([\d,]+) \(2 layers\), ([\d,]+) \(1 layer,\s+learned table\)", text)
    assert quoted, "docs/methods.md: the parameter counts are not where the test reads them"
    models = [{"n_layers": 1}, {"n_layers": 1, "smear_layers": [0]}, {"n_layers": 2},
              {"n_layers": 1, "pos_encoding": "learned"}]
    counts = [sum(p.numel() for p in build_model(ModelConfig(**m), 0).parameters()) for m in models]
    assert [int(q.replace(",", "")) for q in quoted.groups()] == counts


def methods_score_table() -> dict[str, tuple[str, str]]:
    """score -> (chance, role threshold) as docs/methods.md's score table prints them."""
    text = read(ROOT / "docs" / "methods.md")
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and re.fullmatch(r"`\w+`", cells[0]):
            rows[cells[0].strip("`")] = (cells[3], cells[4])
    return rows


def test_methods_chance_levels_and_role_thresholds_match_the_code():
    from helpers import write_up_sources
    from inductionlab.stages.behaviour.attention import ATTENTION_SCORES, chance_level, score_masks
    from inductionlab.analysis.roles import ROLE_SCORES, role_threshold

    config = default_config()
    task, roles = config["task"], config["behaviour"]["roles"]
    T, n = task["block_len"] * task["n_blocks"], task["block_len"]
    distinct = torch.arange(n).repeat(task["n_blocks"])[None]  # blocks of distinct letters
    rows = methods_score_table()
    assert set(rows) == set(ATTENTION_SCORES)
    for score in ATTENTION_SCORES:
        keys, queries = score_masks(score, T, roles["local_window"], write_up_sources(T, n), distinct)
        chance = chance_level(keys, queries)
        printed_chance, printed_threshold = rows[score]
        assert printed_chance == f"{chance:.3f}", score
        if score in ROLE_SCORES:
            assert printed_threshold == f"{role_threshold(chance, roles):.3f}", score
        else:
            assert printed_threshold == "–", score


def test_methods_loss_floor_matches_the_task():
    task = default_config()["task"]
    T, n, V = task["block_len"] * task["n_blocks"], task["block_len"], task["vocab_size"]
    floor = (n - 1) / (T - 1) * math.log(V)
    assert f"= {floor:.3f} nats" in read(ROOT / "docs" / "methods.md")


def test_development_variance_shares_match_the_tables():
    from inductionlab.experiments.positional_table.analysis import variance_share

    config = default_config()
    d = config["variants"]["one_layer"].get("d_model", 32) // config["variants"]["one_layer"].get("n_heads", 4)
    T = config["task"]["block_len"] * config["task"]["n_blocks"]
    text = read(ROOT / "docs" / "development.md")
    for form in ("original", "standard"):
        assert f"{100 * variance_share(form, T, d):.1f}%" in text, form


# docs/runtime.md and the README's runtime statement


def runtime_table(heading: str, columns: int) -> dict[str, list[str]]:
    """The rows of the table under ``heading`` in docs/runtime.md that have ``columns``
    cells: the first cell names the row, the rest are its values."""
    text = read(ROOT / "docs" / "runtime.md")
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == columns and cells[0] and not set(cells[0]) <= {"-"}:
            rows[cells[0]] = cells[1:]
    return rows


def runtime_totals() -> dict[str, list[str]]:
    return runtime_table("## Totals", 3)


def seconds_in(cell: str) -> float:
    return float(re.match(r"([\d,.]+) s", cell).group(1).replace(",", ""))


def minutes_in(cell: str) -> float:
    return float(re.search(r"([\d,.]+) min", cell).group(1).replace(",", ""))


def share_in(cell: str) -> float:
    return float(re.search(r"\(([\d.]+) %\)", cell).group(1))


CPU_ROW = "CPU seconds, the kernel's count"


def test_runtime_totals_are_consistent():
    rows = runtime_totals()
    for column in (0, 1):
        cpu_s = seconds_in(rows[CPU_ROW][column])
        assert minutes_in(rows[CPU_ROW][column]) == round(cpu_s / 60, 1)
        assert minutes_in(rows["CPU seconds / 2"][column]) == round(cpu_s / 2 / 60, 1)
        train = rows["training (the train commands)"][column]
        rest = rows["everything else"][column]
        assert abs(seconds_in(train) + seconds_in(rest) - cpu_s) <= 0.15
        for cell in (train, rest):
            assert share_in(cell) == round(100 * seconds_in(cell) / cpu_s, 1), cell


def whole(x: float) -> int:
    """Rounded half up, as the docs round (26.5 min is "27 min")."""
    return math.floor(x + 0.5)


def whole_run() -> dict[str, str]:
    """The rows of docs/runtime.md's table of the default run measured whole."""
    return {name: value for name, (value,) in runtime_table("## The default run, measured whole", 2).items()}


def test_the_whole_run_adds_up():
    rows = whole_run()
    cpu_s = seconds_in(rows[CPU_ROW])
    assert minutes_in(rows[CPU_ROW]) == round(cpu_s / 60, 1)
    assert f"/ 2 cores = {round(cpu_s / 120, 1)} min" in rows[CPU_ROW]
    parts = [cell for key, cell in rows.items() if re.match(r"[\d,.]+ s \(", cell)]
    assert len(parts) == 4 and abs(sum(seconds_in(c) for c in parts) - cpu_s) <= 0.15
    for cell in parts:
        assert share_in(cell) == round(100 * seconds_in(cell) / cpu_s, 1), cell


def test_readme_runtime_statement_agrees_with_docs_runtime():
    rows = whole_run()
    cpu_s = seconds_in(rows[CPU_ROW])
    training = next(cell for key, cell in rows.items() if key.startswith("training ("))
    text = " ".join(read(README).split())
    assert f"{whole(cpu_s):,} CPU seconds, {whole(cpu_s / 120)} min on two free cores" in text
    assert f"training {whole(share_in(training))} %" in text


def load_runtime_table():
    spec = importlib.util.spec_from_file_location("runtime_table", ROOT / "benchmarks" / "runtime_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_benchmark(path: Path, s: float, cpu: float, rss: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
                    f"{s}\t0:00:00\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n")


def test_runtime_table_sums_per_rule_and_model(tmp_path, capsys):
    bench = tmp_path / "results" / "benchmarks"
    write_benchmark(bench / "train" / "a" / "seed0.tsv", 100, 80, 500)
    write_benchmark(bench / "train" / "a" / "seed1.tsv", 120, 90, 700)
    write_benchmark(bench / "train" / "b" / "seed0.tsv", 300, 250, 900)
    write_benchmark(bench / "exp" / "analysis" / "a" / "seed0.tsv", 10, 5, 100)
    write_benchmark(bench / "figure" / "a" / "training.tsv", 4, 3, 200)
    write_benchmark(bench / "aggregate" / "train_log.tsv", 2, 1, 50)
    write_benchmark(bench / "report.tsv", 20, 15, 400)
    runtime = load_runtime_table()
    jobs = runtime.job_table(tmp_path)
    assert len(jobs) == 7
    assert set(jobs["rule"]) == {"train", "exp_analysis", "figure", "aggregate", "report"}
    assert jobs.groupby("model")["s"].sum().to_dict() == {"-": 22, "a": 234, "b": 300}
    runtime.main([str(tmp_path), "--cores", "2"])
    out = capsys.readouterr().out
    assert "| jobs | 7 |" in out
    assert "| job-seconds (serial) | 556 s = 9.3 min |" in out
    assert "| CPU seconds | 444 s |" in out
    assert "| lower bound on wall time, 2 cores | 278 s = 4.6 min |" in out
    assert "| train | 3 | 520 | 93.5% | 173 | 300 | 420 | 900 |" in out
    runtime.main([str(tmp_path), "--models", "a"])
    out = capsys.readouterr().out
    assert "| jobs | 6 |" in out and "| job-seconds (serial) | 256 s = 4.3 min |" in out
    with pytest.raises(SystemExit):
        runtime.main([str(tmp_path), "--models", "nope"])


def test_runtime_table_names_an_empty_run(tmp_path):
    runtime = load_runtime_table()
    with pytest.raises(SystemExit, match="no benchmark files"):
        runtime.job_table(tmp_path)
