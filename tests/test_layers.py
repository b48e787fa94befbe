"""The package's layers, read from its import statements (every import, at any depth).

core (the model, the task, training, loading) imports nothing of the other layers;
analysis (what is measured on a model) imports core and analysis; formatting (how numbers
and names are written) imports those two; claims (the verdicts on the write-up's sentences)
may import the three below it; report (tables, figures, templates) may import all four,
and never decides a verdict itself; the stages (each command from its input files to its
output files) may import every layer below them; an experiment (a folder of
inductionlab/experiments/) may import every layer, and no layer imports an experiment; the config check imports no analysis;
the analyses write no files; and no module imports itself through others.
"""
import ast
from pathlib import Path

from helpers import ROOT

PACKAGE = ROOT / "src" / "inductionlab"
TOP = {"atomic", "config", "cli", "workflow_checks", "__init__"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (relative imports resolved)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                candidates = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                candidates = [a.name for a in node.names]
            else:
                continue
            found |= {c for c in candidates if c in modules and c != name}
        graph[name] = found
    return graph


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else "top"


def test_layers_import_only_downwards():
    order = ["core", "analysis", "formatting", "claims", "report", "stages", "experiments"]
    allowed = {name: {*order[: i + 1], "top"} for i, name in enumerate(order)}
    bad = sorted(f"{m} imports {t}" for m, targets in imports().items() if layer(m) in allowed
                 for t in targets if layer(t) not in allowed[layer(m)]
                 and t.rsplit(".", 1)[-1] not in TOP | set(allowed))
    assert bad == []


def test_the_config_check_imports_no_analysis():
    assert not {t for t in imports()["inductionlab.config"]
                if layer(t) in ("analysis", "formatting", "claims", "report")}


def test_no_import_cycles():
    graph = imports()
    cycles = []

    def visit(node, path):
        for nxt in sorted(graph[node]):
            if nxt in path:
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in done:
                visit(nxt, path + [nxt])
        done.add(node)

    done: set[str] = set()
    for start in sorted(graph):
        if start not in done:
            visit(start, [start])
    assert cycles == []


def test_the_analyses_write_no_files():
    """Writing (atomically) is the stage layer's: no analysis module imports the atomic
    writers or saves a table or an archive itself."""
    found = []
    for path in sorted((PACKAGE / "analysis").glob("*.py")):
        text = path.read_text()
        found += [f"{path.name}: {w}" for w in ("atomic", ".to_csv(", "np.savez", "torch.save(")
                  if w in text]
    assert "inductionlab.atomic" not in {t for m, ts in imports().items()
                                         if layer(m) == "analysis" for t in ts}
    assert found == []
