# SPDX-License-Identifier: Apache-2.0
r"""Launch the outcome bridge and the feedback node together on an estimator's topics.

Usage (a ROS 2 install with this workspace sourced)::

    ros2 launch project_ghost_feedback bridge_feedback_launch.py \\
        estimate_topic:=/odometry/filtered reference_topic:=/ground_truth/odom
    ros2 launch project_ghost_feedback bridge_feedback_launch.py namespace:=robot1 \\
        estimate_type:=pose_with_covariance reference_type:=pose use_sim_time:=true \\
        bridge_params_file:=my_bridge.yaml record:=true log_level:=debug

Launch arguments:
- ``estimate_topic`` (default ``/odometry/filtered``): the estimate, remapped onto the bridge's
  ``estimate`` input; ``estimate_type`` (``odometry`` or ``pose_with_covariance``).
- ``reference_topic`` (default ``/ground_truth/odom``): the reference, remapped onto
  ``reference``; ``reference_type`` (``odometry``, ``pose`` or ``pose_with_covariance``).
- ``namespace`` (default ``''``): both nodes' namespace. The bridge's outputs
  (``prediction_outcome``, ``self_assessment/raw``) are the feedback node's inputs by their
  relative names, so they meet in the namespace with no remapping.
- ``bridge_params_file`` (default the package's ``config/outcome_bridge.yaml``: every bridge
  parameter, ``ignored_axes`` and ``transform.*`` included), ``params_file`` (default the
  package's ``config/feedback.yaml``): the two nodes' parameters. ``estimate_type`` and
  ``reference_type`` given here win over the file. The bridge file's ``ignored_axes`` also set
  the feedback node's ``position_components`` / ``orientation_components`` (feedback_launch.py's
  ``vec3_components``: ``2,1`` for z, roll, pitch), so its k is read in the real dimensions.
- ``use_sim_time`` (default ``false``).
- ``respawn`` (default ``false``): restart a node when it exits (both nodes).
- ``log_level`` (default ``info``): both nodes' ROS log level.
- ``tf_topic`` (default ``/tf``), ``tf_static_topic`` (default ``/tf_static``): where the
  bridge's tf listener subscribes (its ``/tf`` and ``/tf_static`` remapped), e.g.
  ``/robot1/tf`` and ``/robot1/tf_static`` for a robot whose transforms are namespaced; the
  recordings below record these topics.
- ``frame_prefix`` (default ``''``): the bridge's ``frame_prefix`` parameter: prepended to the
  inputs' frame names that lack it (``robot1/`` for a robot whose tf says ``robot1/odom`` and
  ``robot1/base_link`` while its messages say ``odom`` and ``base_link``); it ends with ``/``.
  Frames are matched by name, so two robots on one shared /tf need prefixed frames, two robots
  each on its own tf topics do not.
- ``record`` (default ``false``), ``bag_output``, ``record_qos_overrides``: record with
  ``ros2 bag record -s mcap`` the feedback node's topics (the bridge's outputs, the calibrated
  output, ``feedback_events`` and ``/diagnostics``), as ``feedback_launch.py`` does, which this
  file includes for the feedback node.
- ``record_inputs`` (default ``true``): with ``record:=true``, the bridge's inputs go into that
  bag too: the two topics and the tf topics (what ``ghost-feedback evaluate`` reads offline).
- ``telemetry_bag`` (default ``''``: off): the feedback node's own recorder (no rosbag2 needed)
  records into this new bag directory its topics and, as ``record_topics``, the bridge's inputs
  with their types, the tf topics included (static transforms taken transient local, so those
  published before the launch are recorded too): one bag that ``ghost-feedback replay``
  verifies and ``ghost-feedback evaluate`` reads. ``record:=true`` without rosbag2 falls back to
  it (the inputs unless ``record_inputs:=false``) and says so in one line.

Tested statically (``test/ros/test_bridge_launch_static.py``): parsed, never imported; and with the
real ``ros2 launch`` by ``test/system/test_ros2_cli.py`` where launch / launch_ros are installed.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction, SetLaunchConfiguration)
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

PACKAGE = 'project_ghost_feedback'
BRIDGE_EXECUTABLE = 'outcome_bridge'
FEEDBACK_EXECUTABLE = 'feedback_node'
BRIDGE_CONFIG_FILE = os.path.join('config', 'outcome_bridge.yaml')
"""The bridge's parameters file, relative to the package's share directory."""
FEEDBACK_LAUNCH = os.path.join('launch', 'feedback_launch.py')
"""The feedback node's launch file (included: the node, its parameters, record)."""
BRIDGE_INPUTS = ('estimate', 'reference')
"""The bridge's relative input names, remapped to estimate_topic and reference_topic."""
SHARED_ARGUMENTS = ('namespace', 'params_file', 'use_sim_time', 'respawn', 'record',
                    'bag_output', 'record_qos_overrides', 'log_level', 'telemetry_bag')
"""Arguments passed on to feedback_launch.py as they are."""
INPUT_TYPES = {'odometry': 'nav_msgs/msg/Odometry',
               'pose_with_covariance': 'geometry_msgs/msg/PoseWithCovarianceStamped',
               'pose': 'geometry_msgs/msg/PoseStamped'}
"""estimate_type / reference_type -> the message type the node's recorder is given."""
TF_TYPE = 'tf2_msgs/msg/TFMessage'
TF_TOPICS = {'/tf': 'tf_topic', '/tf_static': 'tf_static_topic'}
"""The bridge's tf subscriptions -> the launch argument each is remapped to."""


def _record_topics():
    """Return the feedback launch's ``record_topics``: the bridge's inputs with their types.

    The estimate, the reference and the two tf topics (what evaluate and replay need). Given when
    the node's recorder records (``telemetry_bag``) or when ``record_inputs:=true`` (used only if
    ``record:=true`` falls back to the node's recorder); else ``''``.
    """
    def typed(name):
        return ["'", LaunchConfiguration(f'{name}_topic'), f":' + {INPUT_TYPES!r}['",
                LaunchConfiguration(f'{name}_type'), "']"]

    def tf(name):
        return [" + ',", LaunchConfiguration(name), f":{TF_TYPE}'"]
    condition = [") if ('", LaunchConfiguration('telemetry_bag'), "' or '",
                 LaunchConfiguration('record_inputs'), "' == 'true') else ''"]
    return PythonExpression(
        ['('] + typed('estimate') + [" + ',' + "] + typed('reference') + tf('tf_topic')
        + tf('tf_static_topic') + condition)


def _planar_components(context):
    """Set ``vec3_components`` for feedback_launch.py from the bridge's ``ignored_axes``.

    ``'2,1'`` for ``ignored_axes`` z, roll, pitch (the bridge maps those vec3s' distances onto
    chi(3); the feedback node then reads k in their real degrees of freedom); ``''`` when every
    axis is kept or the bridge parameters file cannot be read (the bridge itself says why).
    """
    from project_ghost_feedback.bridge.geometry import vec3_components
    from project_ghost_feedback.bridge_inputs import bridge_parameters

    path = LaunchConfiguration('bridge_params_file').perform(context)
    try:
        components = vec3_components(bridge_parameters(path)['ignored_axes'])
    except Exception:  # noqa: BLE001 - the bridge node reports a bad file itself
        components = (3, 3)
    value = '' if components == (3, 3) else '{},{}'.format(*components)
    return [SetLaunchConfiguration('vec3_components', value)]


def generate_launch_description():
    """Return the launch description: arguments, the bridge, and feedback_launch.py."""
    share = get_package_share_directory(PACKAGE)
    return LaunchDescription([
        DeclareLaunchArgument('estimate_topic', default_value='/odometry/filtered',
                              description='Estimate topic (remapped onto the bridge).'),
        DeclareLaunchArgument('estimate_type', default_value='odometry',
                              choices=['odometry', 'pose_with_covariance'],
                              description='Estimate message type.'),
        DeclareLaunchArgument('reference_topic', default_value='/ground_truth/odom',
                              description='Reference topic (remapped onto the bridge).'),
        DeclareLaunchArgument('reference_type', default_value='odometry',
                              choices=['odometry', 'pose', 'pose_with_covariance'],
                              description='Reference message type.'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of both nodes.'),
        DeclareLaunchArgument('bridge_params_file',
                              default_value=os.path.join(share, BRIDGE_CONFIG_FILE),
                              description='ROS parameters file of the bridge.'),
        DeclareLaunchArgument('params_file',
                              default_value=os.path.join(share, 'config', 'feedback.yaml'),
                              description='ROS parameters file of the feedback node.'),
        DeclareLaunchArgument('use_sim_time', default_value='false', choices=['true', 'false'],
                              description='Use /clock as the node clocks.'),
        DeclareLaunchArgument('respawn', default_value='false', choices=['true', 'false'],
                              description='Restart a node when it exits.'),
        DeclareLaunchArgument('log_level', default_value='info',
                              choices=['debug', 'info', 'warn', 'error', 'fatal'],
                              description='ROS log level of both nodes.'),
        DeclareLaunchArgument('record', default_value='false', choices=['true', 'false'],
                              description="Also record the feedback node's topics with ros2 bag "
                              '(MCAP).'),
        DeclareLaunchArgument('bag_output', default_value='',
                              description="Bag directory for record:=true ('' lets ros2 bag "
                              'name it).'),
        DeclareLaunchArgument('record_qos_overrides', default_value='',
                              description='QoS overrides file for record:=true (ros2 bag record '
                              "--qos-profile-overrides-path; '' uses rosbag2's)."),
        DeclareLaunchArgument('tf_topic', default_value='/tf',
                              description="Where the bridge's tf listener reads /tf (e.g. "
                              '/robot1/tf).'),
        DeclareLaunchArgument('tf_static_topic', default_value='/tf_static',
                              description="Where the bridge's tf listener reads /tf_static "
                              '(e.g. /robot1/tf_static).'),
        DeclareLaunchArgument('frame_prefix', default_value='',
                              description="Prepended to the inputs' frame names that lack it "
                              "(e.g. robot1/ for tf frames robot1/odom; '' none)."),
        DeclareLaunchArgument('record_inputs', default_value='true', choices=['true', 'false'],
                              description="With record:=true, also record the bridge's inputs "
                              '(estimate_topic, reference_topic, tf_topic, tf_static_topic), '
                              'what ghost-feedback evaluate and replay read.'),
        DeclareLaunchArgument('telemetry_bag', default_value='',
                              description="Record with the feedback node's own recorder into "
                              "this new bag directory, the bridge's inputs and tf topics "
                              "included ('' off)."),
        Node(
            package=PACKAGE, executable=BRIDGE_EXECUTABLE, name='outcome_bridge',
            namespace=LaunchConfiguration('namespace'),
            parameters=[
                LaunchConfiguration('bridge_params_file'),
                {'estimate_type': LaunchConfiguration('estimate_type'),
                 'reference_type': LaunchConfiguration('reference_type'),
                 'frame_prefix': ParameterValue(LaunchConfiguration('frame_prefix'),
                                                value_type=str),
                 'use_sim_time': ParameterValue(LaunchConfiguration('use_sim_time'),
                                                value_type=bool)},
            ],
            remappings=[(name, LaunchConfiguration(f'{name}_topic')) for name in BRIDGE_INPUTS]
            + [(topic, LaunchConfiguration(argument)) for topic, argument in TF_TOPICS.items()],
            respawn=PythonExpression(["'", LaunchConfiguration('respawn'), "' == 'true'"]),
            respawn_delay=1.0,
            ros_arguments=['--log-level', LaunchConfiguration('log_level')],
            output='screen'),
        OpaqueFunction(function=_planar_components),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(share, FEEDBACK_LAUNCH)),
            launch_arguments=[(name, LaunchConfiguration(name)) for name in SHARED_ARGUMENTS] + [
                ('vec3_components', LaunchConfiguration('vec3_components')),
                ('extra_record_topics', PythonExpression([
                    "'", LaunchConfiguration('estimate_topic'), ',',
                    LaunchConfiguration('reference_topic'), ',',
                    LaunchConfiguration('tf_topic'), ',', LaunchConfiguration('tf_static_topic'),
                    "' if '",
                    LaunchConfiguration('record_inputs'), "' == 'true' else ''"])),
                ('record_topics', _record_topics())]),
    ])
