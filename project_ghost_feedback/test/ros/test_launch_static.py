# SPDX-License-Identifier: Apache-2.0
"""Static checks of launch/feedback_launch.py and config/feedback.yaml.

launch and launch_ros have no PyPI wheels, so this test never imports the launch file (where they
are installed, test_ros2_cli.py runs it with the real ``ros2 launch``): it is parsed with ``ast``,
what it names (package, executable, config file, launch arguments, topics, the ros2 bag command)
is checked against the package as built and installed, and its two pure helpers are compiled
alone and run. The parameters file is compared with the parameters a real FeedbackNode declares,
key by key and value by value.
"""

import ast
import os
import pathlib
import xml.etree.ElementTree as ElementTree

from ament_index_python.packages import get_package_prefix, get_package_share_directory
from support.ros_context import new_rclpy_context
import pytest

from project_ghost_feedback.ros.feedback_node import (
    ASSESSMENT_TOPIC,
    CALIBRATED_TOPIC,
    FeedbackNode,
    OUTCOME_TOPIC,
)
from support.launch_files import (
    CONFIG_FILE,
    config_parameters,
    LAUNCH_ARGUMENTS,
    PACKAGE_DIR,
    RCLPY_OWN_PARAMETERS,
    TOPIC_ARGUMENTS,
    uncommented_parameter_lines,
)

LAUNCH_FILE = PACKAGE_DIR / 'launch' / 'feedback_launch.py'
HELPERS = ('resolve_topic', 'vec3_components_parameters')


@pytest.fixture(scope='module')
def tree():
    """Return the parsed launch file."""
    return ast.parse(LAUNCH_FILE.read_text(encoding='utf-8'), filename=str(LAUNCH_FILE))


@pytest.fixture(scope='module')
def constants(tree):
    """Return the launch file's module-level constant assignments, evaluated literally."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id.isupper():
                try:
                    found[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    found[target.id] = node.value
    # CONFIG_FILE is os.path.join('config', 'feedback.yaml'): evaluate that one call.
    value = found['CONFIG_FILE']
    if isinstance(value, ast.Call):
        assert ast.unparse(value.func) == 'os.path.join'
        found['CONFIG_FILE'] = os.path.join(*(ast.literal_eval(a) for a in value.args))
    return found


@pytest.fixture(scope='module')
def helpers(tree):
    """Compile the launch file's pure helpers (and the constants they use) alone; return them."""
    wanted = [
        node for node in tree.body
        if (isinstance(node, ast.FunctionDef) and node.name in HELPERS)
        or (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in ('NODE_NAME', 'TOPICS'))
    ]
    module = ast.Module(body=wanted, type_ignores=[])
    namespace = {}
    exec(compile(module, str(LAUNCH_FILE), 'exec'), namespace)
    return namespace


@pytest.fixture
def node():
    """Return a FeedbackNode with default parameters in a private context."""
    context = new_rclpy_context()
    made = []
    try:
        made.append(FeedbackNode(context=context))
        yield made[0]
    finally:
        for item in made:
            item.destroy_node()
        context.try_shutdown()


def _calls(tree, name):
    """Return every call of ``name`` (a bare or dotted name ending in it) in the tree."""
    return [
        node for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func).split('.')[-1] == name
    ]


# -- the launch file ------------------------------------------------------------------------------

def test_launch_file_parses_and_says_how_it_is_tested(tree):
    """It is valid Python with generate_launch_description and a docstring naming its tests."""
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert 'generate_launch_description' in functions
    docstring = ast.get_docstring(tree)
    assert 'Tested statically by' in docstring
    assert 'test_ros2_cli.py' in docstring
    assert LAUNCH_FILE.read_text(encoding='utf-8').startswith(
        '# SPDX-License-Identifier: Apache-2.0\n')


def test_launch_file_imports_only_launch_and_ament_index(tree):
    """Top-level imports are the launch API, ament_index and the standard library only."""
    modules = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            modules.update(alias.name.split('.')[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.add(node.module.split('.')[0])
    assert modules <= {'importlib', 'os', 'ament_index_python', 'launch', 'launch_ros'}, modules


def test_package_executable_and_config_exist_and_are_installed(constants):
    """PACKAGE is this package, EXECUTABLE an installed console script, CONFIG_FILE installed."""
    package = constants['PACKAGE']
    manifest = ElementTree.parse(PACKAGE_DIR / 'package.xml').getroot()
    assert manifest.findtext('name') == package

    executable = constants['EXECUTABLE']
    setup_py = (PACKAGE_DIR / 'setup.py').read_text(encoding='utf-8')
    assert f"'{executable} = project_ghost_feedback.ros.feedback_node:main'" in setup_py
    installed = os.path.join(get_package_prefix(package), 'lib', package, executable)
    assert os.access(installed, os.X_OK), f'{installed} missing: run scripts/setup.sh'

    config = constants['CONFIG_FILE']
    assert (PACKAGE_DIR / config).is_file()
    installed_config = os.path.join(get_package_share_directory(package), config)
    assert os.path.isfile(installed_config), f'{installed_config} missing: run scripts/setup.sh'
    assert pathlib.Path(installed_config).read_bytes() == (PACKAGE_DIR / config).read_bytes()
    installed_launch = os.path.join(
        get_package_share_directory(package), 'launch', LAUNCH_FILE.name)
    assert os.path.isfile(installed_launch), f'{installed_launch} missing: run scripts/setup.sh'


def test_node_action_runs_the_package_executable_in_the_namespace(tree, constants):
    """Node(package=PACKAGE, executable=EXECUTABLE, namespace=<namespace argument>, params)."""
    nodes = _calls(tree, 'Node')
    assert len(nodes) == 1
    keywords = {k.arg: ast.unparse(k.value) for k in nodes[0].keywords}
    assert keywords['package'] == 'PACKAGE'
    assert keywords['executable'] == 'EXECUTABLE'
    assert keywords['name'] == 'NODE_NAME' and constants['NODE_NAME'] == 'feedback_node'
    assert keywords['namespace'] == "LaunchConfiguration('namespace')"
    assert "LaunchConfiguration('params_file')" in keywords['parameters']
    assert "LaunchConfiguration('use_sim_time')" in keywords['parameters']
    default = [
        call for call in _calls(tree, 'join')
        if 'get_package_share_directory(PACKAGE)' in ast.unparse(call)]
    assert [ast.unparse(c.args[1]) for c in default] == ['CONFIG_FILE']


def test_launch_arguments_are_declared_and_every_use_is_declared(tree):
    """The launch arguments (topic remaps included); no undeclared use."""
    def names(calls):
        found = set()
        for call in calls:
            if isinstance(call.args[0], ast.Constant):
                found.add(call.args[0].value)
            else:  # DeclareLaunchArgument(argument, ...) / LaunchConfiguration(argument): TOPICS
                assert ast.unparse(call.args[0]) == 'argument'
                found |= TOPIC_ARGUMENTS
        return found

    assert names(_calls(tree, 'DeclareLaunchArgument')) == LAUNCH_ARGUMENTS
    assert names(_calls(tree, 'LaunchConfiguration')) == LAUNCH_ARGUMENTS
    conditions = [ast.unparse(c) for c in _calls(tree, 'IfCondition')]
    assert conditions == ["IfCondition(LaunchConfiguration('record'))"]


def test_record_runs_ros2_bag_record_mcap_on_the_node_topics(tree):
    """The recorder is ``ros2 bag record -s mcap ... --topics <inputs and output>``."""
    lists = [
        ast.literal_eval(n) for n in ast.walk(tree)
        if isinstance(n, ast.List) and n.elts
        and all(isinstance(e, ast.Constant) for e in n.elts)]
    assert ['ros2', 'bag', 'record', '-s', 'mcap'] in lists
    assert ['--topics'] in lists
    processes = _calls(tree, 'ExecuteProcess')
    assert len(processes) == 1
    source = ast.unparse(next(f for f in tree.body if getattr(f, 'name', '') == '_bag_record'))
    assert 'resolve_topic(namespace, LaunchConfiguration(argument).perform(context))' in source


def test_launch_remaps_exactly_the_node_topic_names(constants, tree):
    """TOPICS maps each remap argument to one of the node's topic names; no topic parameter."""
    topics = constants['TOPICS']
    assert list(topics) == ['outcome_topic', 'assessment_topic', 'calibrated_topic']
    assert list(topics.values()) == [OUTCOME_TOPIC, ASSESSMENT_TOPIC, CALIBRATED_TOPIC]
    (node_call,) = _calls(tree, 'Node')
    remappings = next(k.value for k in node_call.keywords if k.arg == 'remappings')
    assert ast.unparse(remappings) == (
        '[(topic, LaunchConfiguration(argument)) for argument, topic in TOPICS.items()]')


@pytest.mark.parametrize('namespace', ['', '/', 'robot1', '/robot1', '/fleet/robot_2/'])
def test_resolve_topic_agrees_with_rclpy(helpers, namespace, rclpy_context):
    """resolve_topic gives the very names rclpy resolves for a node in that namespace."""
    resolve_topic = helpers['resolve_topic']
    node = None
    try:
        ros_namespace = '/' + namespace.strip('/')
        node = FeedbackNode(context=rclpy_context, namespace=ros_namespace)
        resolved = [
            node.outcome_subscription.topic_name,
            node.assessment_subscription.topic_name,
            node._publisher.topic_name,
        ]
        expected = [
            resolve_topic(namespace, name)
            for name in (OUTCOME_TOPIC, ASSESSMENT_TOPIC, CALIBRATED_TOPIC)]
        assert resolved == expected
        for topic in ('/absolute/x', '~/private', 'a/b'):
            publisher = node.create_publisher(node._publisher.msg_type, topic, 1)
            assert publisher.topic_name == resolve_topic(namespace, topic)
    finally:
        if node is not None:
            node.destroy_node()


def test_vec3_components_argument_sets_the_two_node_parameters(helpers):
    """``vec3_components:=2,1`` gives the node's position/orientation_components; '' nothing."""
    parse = helpers['vec3_components_parameters']
    assert parse('2,1') == {'position_components': 2, 'orientation_components': 1}
    assert parse(' 3, 2 ') == {'position_components': 3, 'orientation_components': 2}
    assert parse('') == {}
    for bad in ('2', '2,1,1', 'a,b', '2;1', '-1,2'):
        with pytest.raises(ValueError, match='vec3_components'):
            parse(bad)


# -- the parameters file --------------------------------------------------------------------------

def test_config_keys_are_exactly_the_node_parameters(node):
    """feedback.yaml sets every parameter the node declares (rclpy's own aside), no other."""
    declared = set(node.list_parameters([], 0).names) - RCLPY_OWN_PARAMETERS
    assert set(config_parameters()) == declared


def test_config_values_are_the_node_defaults_with_their_types(node):
    """Every value in feedback.yaml is the node's default, of the same type (2.0 is not 2)."""
    for name, value in config_parameters().items():
        default = node.get_parameter(name).value
        assert (type(value), value) == (type(default), default), name


def test_config_is_accepted_by_the_node_as_a_params_file():
    """A node started with ``--params-file feedback.yaml`` comes up with those values."""
    context = new_rclpy_context(args=[
        'feedback_node', '--ros-args', '--params-file', str(CONFIG_FILE),
        '-p', 'mahalanobis_downgrade.downgrade_threshold:=3'])
    node = None
    try:
        node = FeedbackNode(context=context)
        values = config_parameters()
        values['mahalanobis_downgrade.downgrade_threshold'] = 3
        assert {name: node.get_parameter(name).value for name in values} == values
    finally:
        if node is not None:
            node.destroy_node()
        context.try_shutdown()


def test_config_comments_every_parameter():
    """Every parameter line of feedback.yaml carries a comment, or the line above it does."""
    assert uncommented_parameter_lines(CONFIG_FILE) == []
