# SPDX-License-Identifier: Apache-2.0
"""Launch feedback_node with config/feedback.yaml; optionally record its topics with ros2 bag.

Usage (a ROS 2 install with this workspace sourced)::

    ros2 launch project_ghost_feedback feedback_launch.py
    ros2 launch project_ghost_feedback feedback_launch.py namespace:=robot1 record:=true
    ros2 launch project_ghost_feedback feedback_launch.py params_file:=my.yaml use_sim_time:=true

Launch arguments:
- ``namespace`` (default ``''``, the root): the node's namespace. Its topic names are relative, so
  they move with it (``/robot1/prediction_outcome``, ...); ``/diagnostics`` stays global.
- ``params_file`` (default: the package's installed ``config/feedback.yaml``).
- ``use_sim_time`` (default ``false``): take time from ``/clock``.
- ``record`` (default ``false``): ``true`` also starts ``ros2 bag record -s mcap`` of the node's
  two inputs and its output, their names read from ``params_file`` (defaults otherwise) and
  resolved in ``namespace``. It passes them with ``--topics`` (rosbag2 0.26.4 or later on Jazzy;
  positional topics are deprecated).
- ``bag_output`` (default ``''``: ``ros2 bag`` picks ``rosbag2_<date>``): the bag directory.

Tested statically by ``test/test_launch_static.py`` (parses this file with ``ast``, checks the
package, executable and config file it names exist (installed), that its topic names are the
node's parameter defaults, and runs its two pure helpers (:func:`resolve_topic`,
:func:`topics_from_params`) in isolation), and with the real ``ros2 launch`` by
``test/test_ros2_cli.py`` where launch / launch_ros are installed (they are not on PyPI). Without
rosbag2, ``record:=true`` logs :data:`RECORD_UNAVAILABLE` and the node runs on.
"""

import importlib.util
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, LogInfo, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

PACKAGE = 'project_ghost_feedback'
EXECUTABLE = 'feedback_node'
NODE_NAME = 'feedback_node'
CONFIG_FILE = os.path.join('config', 'feedback.yaml')
"""The parameters file, relative to the package's share directory."""

TOPIC_PARAMETERS = {
    'outcome_topic': 'prediction_outcome',
    'assessment_topic': 'self_assessment/raw',
    'calibrated_topic': 'self_assessment/calibrated',
}
"""The node's topic parameters and their defaults: two inputs, then the output."""


RECORD_UNAVAILABLE = (
    'ERROR: record:=true needs rosbag2 (ros2bag and rosbag2_storage_mcap, e.g. apt install '
    'ros-jazzy-ros2bag ros-jazzy-rosbag2-storage-mcap): not recording; the node runs on')
"""The one line logged for ``record:=true`` where ``ros2 bag`` is not installed."""


def resolve_topic(namespace, topic, node_name=NODE_NAME):
    """Return the absolute name ROS gives ``topic`` for a node in ``namespace``.

    An absolute ``topic`` is kept; ``~/x`` is private to the node; any other name is relative to
    the namespace (``''`` or ``'/'`` is the root).
    """
    namespace = '/'.join(part for part in namespace.split('/') if part)
    prefix = f'/{namespace}' if namespace else ''
    if topic.startswith('/'):
        return topic
    if topic == '~' or topic.startswith('~/'):
        return f'{prefix}/{node_name}{topic[1:]}'.rstrip('/')
    return f'{prefix}/{topic}'


def topics_from_params(path, node_name=NODE_NAME):
    """Return the node's topic parameters, as set in the ROS parameters file ``path``.

    Entries for ``/**`` and for the node's name are read in file order (later ones win);
    parameters the file does not set keep their defaults (:data:`TOPIC_PARAMETERS`).
    """
    import yaml  # a dependency of launch itself

    topics = dict(TOPIC_PARAMETERS)
    with open(path, encoding='utf-8') as stream:
        document = yaml.safe_load(stream) or {}
    for key, entry in document.items():
        if key.strip('/').split('/')[-1] not in ('**', node_name):
            continue
        parameters = (entry or {}).get('ros__parameters', {}) or {}
        topics.update(
            {name: str(parameters[name]) for name in TOPIC_PARAMETERS if name in parameters})
    return topics


def _bag_record(context):
    """Return the ``ros2 bag record`` process for the node's inputs and output (OpaqueFunction).

    Without rosbag2's CLI (the ``ros2bag`` package) return one error line instead: the node runs
    on, unrecorded.
    """
    if importlib.util.find_spec('ros2bag') is None:
        return [LogInfo(msg=RECORD_UNAVAILABLE)]
    namespace = LaunchConfiguration('namespace').perform(context)
    params_file = LaunchConfiguration('params_file').perform(context)
    bag_output = LaunchConfiguration('bag_output').perform(context)
    topics = topics_from_params(params_file)
    command = ['ros2', 'bag', 'record', '-s', 'mcap']
    if bag_output:
        command += ['-o', bag_output]
    command += ['--topics'] + [resolve_topic(namespace, topics[name]) for name in TOPIC_PARAMETERS]
    return [ExecuteProcess(cmd=command, name='feedback_bag_record', output='screen')]


def generate_launch_description():
    """Return the launch description: arguments, the node, and the optional bag recorder."""
    default_params_file = os.path.join(get_package_share_directory(PACKAGE), CONFIG_FILE)
    return LaunchDescription([
        DeclareLaunchArgument(
            'namespace', default_value='', description='Namespace of the feedback node.'),
        DeclareLaunchArgument(
            'params_file', default_value=default_params_file,
            description='ROS parameters file of the feedback node.'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false', choices=['true', 'false'],
            description='Use /clock as the node clock.'),
        DeclareLaunchArgument(
            'record', default_value='false', choices=['true', 'false'],
            description='Also record the node inputs and output with ros2 bag (MCAP).'),
        DeclareLaunchArgument(
            'bag_output', default_value='',
            description="Bag directory for record:=true ('' lets ros2 bag name it)."),
        Node(
            package=PACKAGE,
            executable=EXECUTABLE,
            name=NODE_NAME,
            namespace=LaunchConfiguration('namespace'),
            parameters=[
                LaunchConfiguration('params_file'),
                {'use_sim_time': ParameterValue(
                    LaunchConfiguration('use_sim_time'), value_type=bool)},
            ],
            output='screen',
        ),
        OpaqueFunction(
            function=_bag_record, condition=IfCondition(LaunchConfiguration('record'))),
    ])
