"""The package's layers, read from its import statements (every import, at any depth).

Bottom up, each layer imports only itself and the layers below it:

- core: the model, the data and tasks, training, files;
- analysis: what every stage and the claims share (the head-role rule, intervals);
- formatting: how numbers, names and figures are written, and the figure declarations;
- the command infrastructure: the command registry, settings files, JSON documents and the
  stage loader (``inductionlab.stages`` itself);
- the stage folders (``inductionlab.stages.<stage>``): each one's computation, figures and
  commands; a folder may import another (never in a cycle);
- the stacked tables: the formats every stage declares (``inductionlab.stages.tables``)
  and the stacking of every model's tables, where the head-role rule is applied
  (``inductionlab.stages.aggregate``);
- claims: the verdicts on the write-up's sentences;
- report: rendering and words; it computes no reading of its own;
- the experiments: folders of ``inductionlab/experiments/``; no layer below imports one;
- the workflow's own commands (stacking, claims, figures, the report, tools, the parser),
  which load the experiments.

The top-level modules (atomic, records, config, folders, ...) may be imported by any
layer. The config check imports nothing above the command infrastructure, the analyses write
no files, and no module imports itself through others.
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
                # "from package import module" imports the module (and the package's
                # __init__ only when a name is not a module of it)
                named = [f"{target}.{a.name}" for a in node.names]
                candidates = [n for n in named if n in modules]
                if len(candidates) < len(named):
                    candidates.append(target)
            elif isinstance(node, ast.Import):
                candidates = [a.name for a in node.names]
            else:
                continue
            found |= {c for c in candidates if c in modules and c != name}
        graph[name] = found
    return graph


LAYERS = [
    ("core", ("inductionlab.core",)),
    ("analysis", ("inductionlab.analysis",)),
    ("formatting", ("inductionlab.formatting",)),
    ("commands", ("inductionlab.stages.commands", "inductionlab.stages.settings",
                  "inductionlab.stages.documents")),
    ("stage folders", ("inductionlab.stages.",)),
    ("stacked tables", ("inductionlab.stages.tables", "inductionlab.stages.aggregate")),
    ("claims", ("inductionlab.claims",)),
    ("report", ("inductionlab.report",)),
    ("experiments", ("inductionlab.experiments",)),
    ("workflow commands", ("inductionlab.stages.reporting", "inductionlab.stages.tools",
                           "inductionlab.stages.registry")),
]


def layer(module: str) -> str:
    """The layer of ``module`` (:data:`LAYERS`, the longest prefix that names it); "top"
    for a top-level module; the stage loader (``inductionlab.stages``) is a command module."""
    if module == "inductionlab.stages":
        return "commands"
    best, size = "top", 0
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            hit = module == prefix or module.startswith(prefix if prefix.endswith(".")
                                                        else prefix + ".")
            if hit and len(prefix) > size:
                best, size = name, len(prefix)
    return best


def test_layers_import_only_downwards():
    order = [name for name, _ in LAYERS]
    rank = {name: k for k, name in enumerate(order)}
    bad = sorted(f"{m} ({layer(m)}) imports {t} ({layer(t)})" for m, targets in imports().items()
                 for t in targets if layer(m) != "top" and layer(t) != "top"
                 and rank[layer(t)] > rank[layer(m)])
    assert bad == []


def test_every_module_has_a_layer():
    """A module in a package that no layer names (a new top-level package) is refused, so
    that the layers above say where it sits."""
    unplaced = sorted(m for m in imports() if layer(m) == "top" and m.count(".") > 1)
    assert unplaced == []


def test_the_config_check_imports_no_analysis():
    above = {name for name, _ in LAYERS} - {"core", "commands"}
    assert not {t for t in imports()["inductionlab.config"] if layer(t) in above}


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
