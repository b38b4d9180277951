# SPDX-License-Identifier: Apache-2.0
"""The package's import graph: no cycle, no arrow back up a layer, no leaning sideways.

Every ``import`` of the package is read with :mod:`ast`, function-level imports included (a lazy
import hides a dependency from start-up time, not from the design), and so are imports under
``if TYPE_CHECKING:`` (a type named for annotations is a dependency of the design too: a
diagnostics module that names its node's class is in a cycle with it, whether or not Python
executes the import). The
modules are grouped by their first name under the package (``core``, ``bridge``, ``telemetry``,
...) and the groups stand in :data:`LAYERS`, lowest first. A module may import its own group and
any group of a lower layer; an import of a higher layer is an arrow back up, and an import of
another group of the same layer is leaning sideways (``evaluate`` and ``audit`` share what they
share through a lower layer). Separately, the module graph has no cycle. Each rule has a self-test
on a small generated package.
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'project_ghost_feedback'

LAYERS = (
    ('core',),
    ('msg_decoding', 'safe_io', 'verification', 'parameter_spec', 'plots', 'px4_aid_source',
     'navsat_reference'),
    ('msg_encoding',),
    ('bridge',),
    ('sim', 'telemetry'),
    ('bridge_inputs',),
    ('field_inputs',),
    ('evaluate', 'audit'),
    ('ros',),
    ('demo',),
    ('cli', '__init__'),
)
"""Groups by layer, lowest first: the pure core; leaf helpers (message decoding, safe text,
the verification models, the parameter declarations, the plot panels); message encoding
(over decoding's interface versions); the pure bridge; the simulators
and bags; an ordinary bag's inputs run through the bridge (what evaluate and audit share); a
bag's innovations run through the innovation bridge's engine (field mode, beside it); the
offline tools; the ROS nodes; the demos (which start nodes); the command line."""


def module_graph(package_dir):
    """Return ``{module: {imported module, ...}}`` for the package's own modules.

    Module names are dotted paths relative to ``package_dir`` (``core.loop``); a package is
    named by its folder (its ``__init__``), the package root by ``__init__``.
    """
    package_dir = pathlib.Path(package_dir)
    modules = {}
    for path in sorted(package_dir.rglob('*.py')):
        parts = list(path.relative_to(package_dir).with_suffix('').parts)
        if parts[-1] == '__init__' and len(parts) > 1:
            parts = parts[:-1]
        modules['.'.join(parts)] = path
    graph = {}
    for name, path in modules.items():
        is_package = path.name == '__init__.py'
        here = [] if name == '__init__' else name.split('.')
        base = here if is_package else here[:-1]
        targets = set()
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                    module = node.module or ''
                else:
                    head, _, module = (node.module or '').partition('.')
                    if head != package_dir.name:
                        continue
                    anchor = []
                prefix = anchor + (module.split('.') if module else [])
                for alias in node.names:
                    targets.add(_resolve(prefix + [alias.name], modules))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    head, _, rest = alias.name.partition('.')
                    if head == package_dir.name and rest:
                        targets.add(_resolve(rest.split('.'), modules))
        targets.discard(None)
        targets.discard(name)
        graph[name] = targets
    return graph


def _resolve(parts, modules):
    """Return the longest prefix of ``parts`` that names a module of ours (None for none)."""
    parts = list(parts)
    while parts:
        if '.'.join(parts) in modules:
            return '.'.join(parts)
        parts.pop()
    return '__init__' if '__init__' in modules else None


def group_of(module):
    """Return the layer group of a module name (its first part)."""
    return module.split('.')[0]


def layer_violations(graph, layers=LAYERS):
    """Return sorted ``(module, imported, why)`` for every import against :data:`LAYERS`."""
    rank = {group: index for index, groups in enumerate(layers) for group in groups}
    found = []
    for module, targets in graph.items():
        source = group_of(module)
        for target in targets:
            destination = group_of(target)
            if destination == source:
                continue
            if source not in rank or destination not in rank:
                found.append((module, target, 'a group not placed in LAYERS'))
            elif rank[destination] > rank[source]:
                found.append((module, target, 'arrow back up'))
            elif rank[destination] == rank[source]:
                found.append((module, target, 'sideways, same layer'))
    return sorted(found)


def cycles(graph):
    """Return the strongly connected components of more than one module (Tarjan), sorted."""
    index = {}
    low = {}
    stack = []
    on_stack = set()
    found = []
    counter = [0]

    def visit(node):
        # Iterative Tarjan: the package is small, but recursion depth should not be a worry.
        work = [(node, iter(sorted(graph.get(node, ()))))]
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        while work:
            current, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[current] = min(low[current], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[current])
            if low[current] == index[current]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == current:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_package_has_no_import_cycle():
    assert cycles(module_graph(PACKAGE)) == []


def test_every_import_goes_down_the_layers():
    graph = module_graph(PACKAGE)
    placed = {group for groups in LAYERS for group in groups}
    assert {group_of(module) for module in graph} <= placed
    assert layer_violations(graph) == []


def test_the_offline_tools_import_no_node_and_no_demo():
    graph = module_graph(PACKAGE)
    for module, targets in graph.items():
        if group_of(module) in ('evaluate', 'audit'):
            assert not {group_of(t) for t in targets} & {'ros', 'demo'}, (module, targets)


def modules_importing_tests(test_root):
    """Return ``(file, imported)`` for each test file importing a test module or conftest."""
    found = []
    for path in sorted(pathlib.Path(test_root).rglob('*.py')):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ''] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                top = name.split('.')[0]
                if top == 'conftest' or top.startswith('test_'):
                    found.append((path.relative_to(test_root).as_posix(), name))
    return found


def test_no_test_module_imports_another():
    """Shared harnesses live in test/support/; a test module imports neither tests nor conftest."""
    assert modules_importing_tests(pathlib.Path(__file__).resolve().parents[1]) == []


def test_self_test_a_test_module_importing_another_is_found(tmp_path):
    (tmp_path / 'core').mkdir()
    (tmp_path / 'core' / 'test_a.py').write_text('def test():\n    from test_b import x\n')
    (tmp_path / 'core' / 'test_c.py').write_text(
        'from conftest import y\nfrom support.z import w\n')
    assert modules_importing_tests(tmp_path) == [
        ('core/test_a.py', 'test_b'), ('core/test_c.py', 'conftest')]


@pytest.fixture
def toy_package(tmp_path):
    """Return a small package with one cycle, one arrow back up and one sideways import."""
    root = tmp_path / 'toy'
    files = {
        '__init__.py': '',
        'core/__init__.py': 'from .a import A\n',
        'core/a.py': 'def f():\n    from .b import B\n',
        'core/b.py': 'from .a import A\nB = 1\n',
        'core/c.py': 'from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n',
        'core/d.py': 'from .c import C\n',
        'bridge/__init__.py': '',
        'bridge/pairing.py': 'from ..core import A\n',
        'telemetry/__init__.py': '',
        'telemetry/reader.py': 'from ..bridge.pairing import x\n',
        'ros/__init__.py': '',
        'ros/node.py': 'from ..telemetry import reader\nfrom toy.core import a\n',
        'evaluate/__init__.py': '',
        'evaluate/run.py': 'def main():\n    from ..ros.node import N\n',
        'audit/__init__.py': '',
        'audit/task.py': 'from ..evaluate import run\n',
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_self_test_the_graph_reads_relative_absolute_and_lazy_imports(toy_package):
    graph = module_graph(toy_package)
    assert graph['core.a'] == {'core.b'}  # a function-level import counts
    assert graph['core.c'] == {'core.d'}  # an import for annotations only counts too
    assert graph['core'] == {'core.a'}
    assert graph['ros.node'] == {'telemetry.reader', 'core.a'}  # absolute import counts
    assert graph['evaluate.run'] == {'ros.node'}


def test_self_test_a_cycle_is_found(toy_package):
    assert cycles(module_graph(toy_package)) == [['core.a', 'core.b'], ['core.c', 'core.d']]


def test_self_test_upward_and_sideways_imports_are_found(toy_package):
    found = layer_violations(module_graph(toy_package))
    assert ('evaluate.run', 'ros.node', 'arrow back up') in found
    assert ('audit.task', 'evaluate.run', 'sideways, same layer') in found
    assert len(found) == 2  # core inside itself, telemetry -> bridge and ros -> lower: allowed
