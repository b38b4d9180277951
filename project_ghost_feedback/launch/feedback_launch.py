# SPDX-License-Identifier: Apache-2.0
"""Launch feedback_node with config/feedback.yaml; optionally record (own recorder or ros2 bag).

Usage (a ROS 2 install with this workspace sourced)::

    ros2 launch project_ghost_feedback feedback_launch.py
    ros2 launch project_ghost_feedback feedback_launch.py namespace:=robot1 record:=true
    ros2 launch project_ghost_feedback feedback_launch.py params_file:=my.yaml use_sim_time:=true

Launch arguments:
- ``namespace`` (default ``''``, the root): the node's namespace. Its topic names are relative, so
  they move with it (``/robot1/prediction_outcome``, ...); ``/diagnostics`` stays global.
- ``outcome_topic``, ``assessment_topic``, ``calibrated_topic``: where the node's
  ``prediction_outcome``, ``self_assessment/raw`` and ``self_assessment/calibrated`` are remapped
  (defaults: the same names). Topic names are not parameters.
- ``params_file`` (default: the package's installed ``config/feedback.yaml``).
- ``use_sim_time`` (default ``false``): take time from ``/clock``.
- ``respawn`` (default ``false``): restart the node when it exits; set ``telemetry_dir`` in the
  params file so each run records a new timestamped bag.
- ``log_level`` (default ``info``): the node's ROS log level.
- ``vec3_components`` (default ``''``: the params file's): ``P,O`` sets the node's
  ``position_components`` and ``orientation_components`` (``2,1`` behind a bridge with
  ``ignored_axes`` z, roll, pitch; ``bridge_feedback_launch.py`` passes what its bridge
  parameters say), so that the k it reports is read in the vec3s' real degrees of freedom.
- ``telemetry_bag`` (default ``''``: off): record with the node's own recorder (its
  ``telemetry_bag`` parameter; no rosbag2 needed) into this new bag directory: the node's inputs,
  output, events, overconfidence estimate and ``/diagnostics``, plus ``record_topics``.
- ``record_topics`` (default ``''``): more topics for the node's recorder, comma-separated, each
  ``/topic:pkg/msg/Type`` (``bridge_feedback_launch.py`` passes the bridge's two inputs).
- ``record`` (default ``false``): ``true`` also starts ``ros2 bag record -s mcap`` of the node's
  two inputs and its output, ``feedback_events``, ``self_assessment/overconfidence`` and
  ``/diagnostics`` (Foxglove-ready:
  docs/foxglove/), plus ``extra_record_topics`` (comma-separated), resolved in ``namespace``,
  with ``--topics`` (rosbag2 0.26.4 or later on Jazzy). Without rosbag2 installed it falls back
  to the node's own recorder (into ``bag_output``, else a new ``ghost_feedback_<date>`` folder
  in the current directory; ``record_topics`` too) and says so in one line
  (:data:`RECORD_FALLBACK`).
- ``extra_record_topics`` (default ``''``): more topics for ``record:=true``, comma-separated.
- ``bag_output`` (default ``''``: ``ros2 bag`` picks ``rosbag2_<date>``): the bag directory.
- ``record_qos_overrides`` (default ``''``): a ``ros2 bag record --qos-profile-overrides-path``
  file for ``record:=true``. rosbag2 subscribes KEEP_LAST 10 by default, so a burst of more than
  10 messages on one topic can overflow its queue on a loaded machine; a file giving the topics a
  deeper history keeps them (docs/node.md, "rosbag2").

No tf arguments: the feedback node reads no /tf and names no frame (its inputs carry their
frames). The tf topics and the frame prefix of a robot are ``bridge_feedback_launch.py``'s
(``tf_topic``, ``tf_static_topic``, ``frame_prefix``, for the outcome bridge, the one node that
reads tf); that file passes its tf topics to the recordings here (``extra_record_topics``,
``record_topics``).

Tested statically by ``test/ros/test_launch_static.py`` (parses this file with ``ast``; checks the
package, executable and config file it names, the remappings, and runs :func:`resolve_topic` in
isolation), and with the real ``ros2 launch`` by ``test/system/test_ros2_cli.py`` where launch /
launch_ros are installed (they are not on PyPI). Without rosbag2, ``record:=true`` logs
:data:`RECORD_FALLBACK` and the node records its own bag.
"""

import importlib.util
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, LogInfo, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

PACKAGE = 'project_ghost_feedback'
EXECUTABLE = 'feedback_node'
NODE_NAME = 'feedback_node'
CONFIG_FILE = os.path.join('config', 'feedback.yaml')
"""The parameters file, relative to the package's share directory."""

TOPICS = {
    'outcome_topic': 'prediction_outcome',
    'assessment_topic': 'self_assessment/raw',
    'calibrated_topic': 'self_assessment/calibrated',
}
"""Launch argument -> the node's topic name it remaps (two inputs, then the output)."""

RECORDED_ALSO = ('feedback_events', 'self_assessment/overconfidence', '/diagnostics')
"""Recorded with the node's topics: its events (what replay needs), its overconfidence estimate
and /diagnostics (Foxglove)."""


RECORD_FALLBACK = (
    'record:=true: rosbag2 is not installed here (ros2bag, rosbag2_storage_mcap), so the feedback '
    "node's own recorder records instead, into {where} (the telemetry_bag parameter: an MCAP "
    'rosbag2 bag that ghost-feedback replay and ros2 bag read; docs/telemetry.md)')
"""The one line logged for ``record:=true`` where ``ros2 bag`` is not installed."""


def rosbag2_available():
    """Return True when rosbag2's CLI (the ``ros2bag`` package) can be imported."""
    return importlib.util.find_spec('ros2bag') is not None


def _node_recording(context):
    """Return ``(parameters, where)``: the node's recorder settings, and where it records.

    ``telemetry_bag`` when given; else, for ``record:=true`` without rosbag2, ``bag_output`` or a
    new timestamped folder in the current directory (the node's ``telemetry_dir``). ``({}, '')``
    when the node does not record.
    """
    bag = LaunchConfiguration('telemetry_bag').perform(context)
    record = LaunchConfiguration('record').perform(context) == 'true'
    if not bag and record and not rosbag2_available():
        bag = LaunchConfiguration('bag_output').perform(context)
        if not bag:
            folder = os.getcwd()
            parameters = {'telemetry_dir': folder}
            where = f'a new ghost_feedback_<date> folder in {folder}'
        else:
            parameters, where = {'telemetry_bag': os.path.abspath(bag)}, os.path.abspath(bag)
    elif bag:
        parameters, where = {'telemetry_bag': os.path.abspath(bag)}, os.path.abspath(bag)
    else:
        return {}, ''
    topics = LaunchConfiguration('record_topics').perform(context)
    topics = [topic.strip() for topic in topics.split(',') if topic.strip()]
    if topics:
        parameters['record_topics'] = topics
    return parameters, where


def vec3_components_parameters(text):
    """Return the node parameters of a ``vec3_components`` argument (``'2,1'``; ``''``: none).

    ValueError naming the argument for anything but two comma-separated ints.
    """
    if not text.strip():
        return {}
    parts = [part.strip() for part in text.split(',')]
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        raise ValueError(f"launch argument vec3_components must be 'P,O' (e.g. '2,1'), got "
                         f'{text!r}')
    return {'position_components': int(parts[0]), 'orientation_components': int(parts[1])}


def _feedback_node(context):
    """Return the feedback node action, with its recorder's parameters (OpaqueFunction)."""
    recording, _ = _node_recording(context)
    components = vec3_components_parameters(
        LaunchConfiguration('vec3_components').perform(context))
    return [Node(
        package=PACKAGE,
        executable=EXECUTABLE,
        name=NODE_NAME,
        namespace=LaunchConfiguration('namespace'),
        remappings=[
            (topic, LaunchConfiguration(argument)) for argument, topic in TOPICS.items()],
        respawn=PythonExpression(["'", LaunchConfiguration('respawn'), "' == 'true'"]),
        respawn_delay=1.0,
        ros_arguments=['--log-level', LaunchConfiguration('log_level')],
        parameters=[
            LaunchConfiguration('params_file'),
            {'use_sim_time': ParameterValue(
                LaunchConfiguration('use_sim_time'), value_type=bool)},
        ] + ([recording] if recording else []) + ([components] if components else []),
        output='screen',
    )]


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


def _bag_record(context):
    """Return the ``ros2 bag record`` process for the node's inputs and output (OpaqueFunction).

    Without rosbag2's CLI (the ``ros2bag`` package) return the one line saying that the node's
    own recorder records instead (:func:`_node_recording` gave it the parameters).
    """
    if not rosbag2_available():
        return [LogInfo(msg=RECORD_FALLBACK.format(where=_node_recording(context)[1]))]
    namespace = LaunchConfiguration('namespace').perform(context)
    bag_output = LaunchConfiguration('bag_output').perform(context)
    command = ['ros2', 'bag', 'record', '-s', 'mcap']
    if bag_output:
        command += ['-o', bag_output]
    qos_overrides = LaunchConfiguration('record_qos_overrides').perform(context)
    if qos_overrides:
        command += ['--qos-profile-overrides-path', qos_overrides]
    topics = [resolve_topic(namespace, LaunchConfiguration(argument).perform(context))
              for argument in TOPICS]
    topics += [resolve_topic(namespace, topic) for topic in RECORDED_ALSO]
    extra = LaunchConfiguration('extra_record_topics').perform(context)
    topics += [resolve_topic(namespace, t.strip()) for t in extra.split(',') if t.strip()]
    command += ['--topics'] + topics
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
        *[DeclareLaunchArgument(
            argument, default_value=topic,
            description=f"Topic the node's {topic} is remapped to (relative names resolve in "
            'the namespace).') for argument, topic in TOPICS.items()],
        DeclareLaunchArgument(
            'respawn', default_value='false', choices=['true', 'false'],
            description='Restart the node when it exits (with telemetry_dir it records a new '
            'timestamped bag each time).'),
        DeclareLaunchArgument(
            'log_level', default_value='info', choices=['debug', 'info', 'warn', 'error', 'fatal'],
            description="The node's ROS log level."),
        DeclareLaunchArgument(
            'record', default_value='false', choices=['true', 'false'],
            description='Also record the node inputs and output with ros2 bag (MCAP).'),
        DeclareLaunchArgument(
            'bag_output', default_value='',
            description="Bag directory for record:=true ('' lets ros2 bag name it)."),
        DeclareLaunchArgument(
            'record_qos_overrides', default_value='',
            description='QoS overrides file for record:=true (ros2 bag record '
            "--qos-profile-overrides-path; '' uses rosbag2's, KEEP_LAST 10)."),
        DeclareLaunchArgument(
            'extra_record_topics', default_value='',
            description="More topics for record:=true, comma-separated (e.g. the bridge's "
            'inputs).'),
        DeclareLaunchArgument(
            'telemetry_bag', default_value='',
            description="Record with the node's own recorder into this new bag directory "
            "('' off; no rosbag2 needed)."),
        DeclareLaunchArgument(
            'record_topics', default_value='',
            description="More topics for the node's recorder, comma-separated, each "
            '/topic:pkg/msg/Type.'),
        DeclareLaunchArgument(
            'vec3_components', default_value='',
            description="'P,O': the node's position_components and orientation_components "
            "(e.g. '2,1' for a planar source; '' keeps the params file's)."),
        OpaqueFunction(function=_feedback_node),
        OpaqueFunction(
            function=_bag_record, condition=IfCondition(LaunchConfiguration('record'))),
    ])
