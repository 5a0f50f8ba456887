"""The import rules of tests/test_architecture.py as plain functions over a package folder, so the
tests can run them on the real package and on tiny made-up ones.

Every `import` and `from ... import` of every module counts, at the top of the file or inside a
function (lazy imports), relative ones resolved against the importing module. Three rules:

- **layers**: a table of tiers, lowest first; each tier holds groups (a module or a package and
  everything under it, or a tuple of those), a module belonging to the group of its longest prefix.
  A module may import its own group and groups of lower tiers; an import of a higher tier is
  *upward*, an import of another group of the same tier is *sideways* (they are independent).
  Every module must be in the table.
- **no circle**: the graph of module → module it imports has no strongly connected component of
  more than one module (Tarjan's algorithm).
- **no private name across modules**: `from m import _x`, `import m._x`, and `m._x` / `Name._x`
  where `m` or `Name` was imported from another module of the package are reported. A private
  *module* (`_native`, a compiled extension) may be imported by the modules of its own package.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

# namedtuple's public methods carry an underscore so they cannot clash with field names
PUBLIC_UNDERSCORE_NAMES = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})


@dataclass(frozen=True)
class Edge:
    importer: str
    target: str
    line: int


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in PUBLIC_UNDERSCORE_NAMES


def package_modules(package_dir: Path, extension_modules: tuple[str, ...] = ()) -> dict[str, Path | None]:
    """Dotted module name → source file, for every .py under `package_dir` (an `__init__.py` names
    its package), plus the compiled `extension_modules` (no source: None)."""
    root = package_dir.parent
    modules: dict[str, Path | None] = {}
    for path in sorted(package_dir.rglob("*.py")):
        modules[".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")] = path
    modules.update({name: None for name in extension_modules})
    return modules


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` reads from (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    base = _package_of(module, path).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _longest_module(dotted: str, modules: dict) -> tuple[str | None, list[str]]:
    """The longest prefix of `dotted` that is a module of the package, and the names after it."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end]), parts[end:]
    return None, parts


def _dotted(node: ast.expr) -> str | None:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id] + names[::-1])


def _reaches_private_module(importer: str, importer_path: Path, dotted: str) -> bool:
    """Whether the module path `dotted` goes through a private module or package (`a._b.c`)
    from outside: only the modules of the package that holds `_b` (and `_b`'s own) may."""
    parts = dotted.split(".")
    for end, part in enumerate(parts):
        if is_private(part):
            private_module = ".".join(parts[: end + 1])
            inside = importer == private_module or importer.startswith(private_module + ".")
            return not inside and _package_of(importer, importer_path) != ".".join(parts[:end])
    return False


def scan_module(module: str, path: Path, modules: dict) -> tuple[list[Edge], list[str]]:
    """The package modules `module` imports (with line numbers) and its private-name uses."""
    package = next(iter(modules)).split(".")[0]
    tree = ast.parse(path.read_text(), filename=str(path))
    edges: list[Edge] = []
    private: list[str] = []
    bound: dict[str, str] = {}  # local name → dotted name in the package it stands for
    where = f"{module}:{{line}}"

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != package:
                    continue
                target, _ = _longest_module(alias.name, modules)
                if target is not None:
                    edges.append(Edge(module, target, node.lineno))
                if target is not None and _reaches_private_module(module, path, target):
                    private.append(f"{where.format(line=node.lineno)} imports {target}")
                elif any(is_private(part) for part in alias.name.split(".")[len((target or "").split(".")):]):
                    private.append(f"{where.format(line=node.lineno)} imports {alias.name}")
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, path, node)
            if source.split(".")[0] != package:
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                bound[alias.asname or alias.name] = full
                if full in modules:  # `from package import submodule`
                    edges.append(Edge(module, full, node.lineno))
                    if _reaches_private_module(module, path, full):
                        private.append(f"{where.format(line=node.lineno)} imports private module {full}")
                    continue
                target, _ = _longest_module(source, modules)
                if target is not None:
                    edges.append(Edge(module, target, node.lineno))
                if target is not None and _reaches_private_module(module, path, target):
                    private.append(f"{where.format(line=node.lineno)} imports from private module {target}")
                elif is_private(alias.name):
                    private.append(f"{where.format(line=node.lineno)} imports {source}.{alias.name}")

    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not is_private(node.attr):
            continue
        dotted = _dotted(node)
        if dotted is None or dotted.split(".")[0] not in bound:
            continue
        first, _, rest = dotted.partition(".")
        resolved = bound[first] + ("." + rest if rest else "")
        owner, names = _longest_module(resolved, modules)
        if owner is None or owner == module:
            continue
        if names and is_private(names[0]) and len(names) == 1 and f"{owner}.{names[0]}" in modules:
            continue  # a private module reached as an attribute: judged by the import above
        if any(is_private(name) for name in names):
            private.append(f"{where.format(line=node.lineno)} uses {resolved}")
    return edges, private


def import_graph(modules: dict) -> tuple[dict[str, list[Edge]], list[str]]:
    """module → the edges to other package modules it imports; and every private-name use."""
    graph: dict[str, list[Edge]] = {}
    private: list[str] = []
    for module, path in modules.items():
        if path is None:
            graph[module] = []
            continue
        edges, uses = scan_module(module, path, modules)
        graph[module] = [edge for edge in edges if edge.target != module]
        private += uses
    return graph, private


def circles(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted({e.target for e in graph[start]})))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in graph:
                    continue
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted({e.target for e in graph[target]}))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _holds(prefix: str, module: str, root: str) -> bool:
    return module == prefix or (prefix != root and module.startswith(prefix + "."))


def group_of(module: str, layers: list[tuple], root: str) -> tuple[int, object] | None:
    """(tier, group) of the group that holds `module` by its longest prefix. A group is a module
    prefix (the module or package and everything under it) or a tuple of them (one group: its
    members may import each other); the root package's prefix holds only the root `__init__`."""
    best = None
    for tier, groups in enumerate(layers):
        for group in groups:
            prefixes = (group,) if isinstance(group, str) else group
            for prefix in prefixes:
                if _holds(prefix, module, root) and (best is None or len(prefix) > best[0]):
                    best = (len(prefix), tier, group)
    return None if best is None else best[1:]


def _label(group) -> str:
    return group if isinstance(group, str) else "(" + ", ".join(group) + ")"


def layer_violations(graph: dict[str, list[Edge]], layers: list[tuple]) -> list[str]:
    root = next(iter(graph)).split(".")[0]
    problems = [f"{module} is in no layer of the table" for module in graph if group_of(module, layers, root) is None]
    for module, edges in graph.items():
        mine = group_of(module, layers, root)
        for edge in edges:
            theirs = group_of(edge.target, layers, root)
            if mine is None or theirs is None or theirs[1] == mine[1]:
                continue
            if theirs[0] > mine[0]:
                problems.append(f"{module}:{edge.line} imports {edge.target} "
                                f"(upward: {_label(mine[1])} is below {_label(theirs[1])})")
            elif theirs[0] == mine[0]:
                problems.append(f"{module}:{edge.line} imports {edge.target} "
                                f"(sideways: {_label(mine[1])} and {_label(theirs[1])} are independent)")
    return problems


def check_package(package_dir: Path, layers: list[tuple], extension_modules: tuple[str, ...] = ()) -> dict[str, list]:
    """Every problem of the three rules: {"layers": [...], "circles": [[...]], "private": [...]}."""
    modules = package_modules(package_dir, extension_modules)
    graph, private = import_graph(modules)
    return {"layers": layer_violations(graph, layers), "circles": circles(graph), "private": private}
