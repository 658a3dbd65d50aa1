"""The core reads bottom-up: no module imports (at any depth, in any function) one that imports it back."""
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
