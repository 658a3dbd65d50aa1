"""The core reads bottom-up: no module imports (at any depth, in any function) one that imports it back, nor one of
a layer above its own (`LAYERS`, bottom first; the README's package table lists them in this order)."""
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


def test_no_import_cycles():
    graph = {module_name(p): imports_of(p) for p in PACKAGE.rglob("*.py")}
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_walker_sees_function_level_imports(tmp_path):
    assert "assignadd_core.trainer" in imports_of(PACKAGE / "runs.py")  # imported inside train_or_load
    assert "assignadd_core.run_folder" in imports_of(PACKAGE / "trainer.py")


# The core's layers, bottom first. A module may import from its own layer and those below, never from one above.
LAYERS = {
    "foundations": ("config", "study", "paper", "stats", "locks", "threads", "book_mime"),
    "task and model": ("data", "data_prefetch", "model", "loss", "roles", "perturb", "checkpoint", "evaluation",
                       "measures", "steer", "names", "verdicts"),
    "analysis": ("analysis",),
    "measurement and training": ("quantities", "run_folder", "series", "batch_source", "stack_eval", "trainer", "stacked",
                                 "runs", "rescue", "artifacts", "gradient_table"),
    "studies": ("per_seed", "generality", "c10_window", "mode_study", "sweep", "rule_lock",
                "rule_reach"),
    "presentation": ("palette", "wording", "present", "plots", "plots_odds", "claims", "diagram", "front_page",
                     "runs_table", "chapter",
                     "explorer", "book", "cli", "__main__"),
}


def layer_of(module: str) -> int | None:
    """The index in LAYERS of a package module (a subpackage's modules share its layer; the package itself: None)."""
    parts = module.split(".")[1:]
    for index, members in enumerate(LAYERS.values()):
        if parts and parts[0] in members:
            return index
    return None


def test_every_module_has_a_layer():
    assert sorted(m for m in MODULES if m != "assignadd_core" and layer_of(m) is None) == []


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'module (layer) imports target (layer)' for every import of a module from a layer above its own."""
    names = list(LAYERS)
    return [f"{module} ({names[layer_of(module)]}) imports {target} ({names[layer_of(target)]})"
            for module in sorted(graph) if layer_of(module) is not None
            for target in sorted(graph[module]) if layer_of(target) is not None and layer_of(target) > layer_of(module)]


def test_no_module_imports_from_a_layer_above_its_own():
    assert upward_imports({module_name(p): imports_of(p) for p in PACKAGE.rglob("*.py")}) == []


def test_the_layer_check_sees_an_upward_import():
    assert layer_of("assignadd_core.sweep.grid") == layer_of("assignadd_core.sweep")
    graph = {"assignadd_core.analysis.theory": {"assignadd_core.series", "assignadd_core.measures"},
             "assignadd_core.plots": {"assignadd_core.analysis.theory"}}
    assert upward_imports(graph) == ["assignadd_core.analysis.theory (analysis) imports assignadd_core.series"
                                     " (measurement and training)"]
