"""The package reads bottom-up, folder by folder: no module imports (at any depth, in any function) one that imports it
back, nor one of a folder above its own (`LAYERS`, bottom first; the README's layout table lists them in this order).
The core imports nothing from the other folders and stays short enough to read in one sitting."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "assignadd_core"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Package modules imported anywhere in the file (relative or absolute)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # `from . import x` may name a module
                candidates = (f"{target}.{alias.name}", target)
                found.add(next((c for c in candidates if c in MODULES), target))
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in MODULES and m != name}


MODULES = {module_name(p) for p in PACKAGE.rglob("*.py")}


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in PACKAGE.rglob("*.py")}


def test_no_import_cycles():
    edges = graph()
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_walker_sees_function_level_imports(tmp_path):
    assert "assignadd_core.experiments.training" in imports_of(PACKAGE / "experiments" / "named_runs.py")  # in train_or_load
    assert "assignadd_core.core.run_folder" in imports_of(PACKAGE / "core" / "trainer.py")


# The package's folders, bottom first: a module imports only from its own folder and those below, never from one above.
# The package's own modules sit at the two ends: the book's renderer plug-in (it imports nothing of the package) and
# the command line (it imports from every folder).
LAYERS = {
    "the book's renderer plug-in": ("book_mime",),
    "core": ("core",),
    "measure": ("measure",),
    "rules": ("rules",),
    "analysis": ("analysis",),
    "experiments": ("experiments",),
    "report": ("report",),
    "command line": ("cli", "__main__"),
}
CORE_MAX_LINES = 2200  # the thin core, read top to bottom in one sitting


def layer_of(module: str) -> int | None:
    """The index in LAYERS of a package module (a folder's modules share its layer; the package itself: None)."""
    parts = module.split(".")[1:]
    for index, members in enumerate(LAYERS.values()):
        if parts and parts[0] in members:
            return index
    return None


def test_every_module_has_a_layer():
    assert sorted(m for m in MODULES if m != "assignadd_core" and layer_of(m) is None) == []


def test_every_folder_is_a_layer_and_the_root_holds_only_the_faces():
    folders = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert folders == sorted(m for members in LAYERS.values() for m in members if (PACKAGE / m).is_dir())
    assert sorted(p.stem for p in PACKAGE.glob("*.py")) == ["__init__", "__main__", "book_mime", "cli"]


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    """'module (layer) imports target (layer)' for every import of a module from a layer above its own."""
    names = list(LAYERS)
    return [f"{module} ({names[layer_of(module)]}) imports {target} ({names[layer_of(target)]})"
            for module in sorted(edges) if layer_of(module) is not None
            for target in sorted(edges[module]) if layer_of(target) is not None and layer_of(target) > layer_of(module)]


def test_no_module_imports_from_a_folder_above_its_own():
    assert upward_imports(graph()) == []


def test_the_core_imports_nothing_from_the_other_folders():
    outside = sorted(f"{module} imports {target}" for module, targets in graph().items()
                     if module.startswith("assignadd_core.core") for target in targets
                     if not target.startswith("assignadd_core.core"))
    assert outside == []


def test_the_core_is_thin():
    lines = sum(len(p.read_text().splitlines()) for p in (PACKAGE / "core").rglob("*.py"))
    assert lines <= CORE_MAX_LINES, f"core/ has {lines} lines (at most {CORE_MAX_LINES}: read in one sitting)"


def test_the_layer_check_sees_an_upward_import():
    assert layer_of("assignadd_core.experiments.sweep.grid") == layer_of("assignadd_core.experiments")
    edges = {"assignadd_core.analysis.theory": {"assignadd_core.experiments.training", "assignadd_core.measure.measures"},
             "assignadd_core.report.plots": {"assignadd_core.analysis.theory"}}
    assert upward_imports(edges) == ["assignadd_core.analysis.theory (analysis) imports"
                                     " assignadd_core.experiments.training (experiments)"]
