# SPDX-License-Identifier: Apache-2.0
"""DDS must stay on this machine (docs/dds_containment.md).

Cheap checks: the environment of scripts/env.sh is in force (ROS_AUTOMATIC_DISCOVERY_RANGE,
the Fast DDS loopback profile, a ROS_DOMAIN_ID). Packet capture (root + tcpdump only): while two
processes publish and subscribe, tcpdump on every non-loopback interface sees no RTPS/UDP packet
of this run's domain, and on lo (positive control) it does.
"""

import fcntl
import os
import pathlib
import shutil
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ElementTree

import pytest

FASTDDS_NS = '{http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles}'
PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')
MESSAGES_TO_RECEIVE = 20
SIOCGIFFLAGS = 0x8913
IFF_UP = 0x1
IFF_LOOPBACK = 0x8


def _domain_id():
    return int(os.environ.get('ROS_DOMAIN_ID', '0'))


def _rtps_port_range(domain_id):
    """Return the UDP port range of one DDS domain (RTPS port mapping: PB=7400, DG=250)."""
    base = 7400 + 250 * domain_id
    return base, base + 249


def _find(element, tag):
    return element.findall(f'.//{FASTDDS_NS}{tag}')


def test_discovery_range_is_localhost():
    assert os.environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE') == 'LOCALHOST', (
        'run the tests through scripts/env.sh (make test), which confines DDS to loopback')
    assert not os.environ.get('ROS_STATIC_PEERS'), 'static peers could reach other hosts'


def test_domain_id_is_set_and_safe():
    value = os.environ.get('ROS_DOMAIN_ID')
    assert value is not None and value.isdigit(), f'ROS_DOMAIN_ID={value!r}'
    assert 0 <= int(value) <= 101, 'Fast DDS ports are only safe for domain ids 0..101'


def test_fastdds_profile_allows_only_shm_and_loopback_udp():
    paths = {os.environ.get(name) for name in PROFILE_VARIABLES}
    assert len(paths) == 1 and None not in paths, (
        f'set both {PROFILE_VARIABLES} to the same file (Fast DDS 2.x reads the FASTRTPS_ one)')
    path = pathlib.Path(paths.pop())
    assert path.is_file(), f'{path} missing'
    root = ElementTree.parse(path).getroot()

    descriptors = {}
    for descriptor in _find(root, 'transport_descriptor'):
        transport_id = descriptor.findtext(f'{FASTDDS_NS}transport_id')
        descriptors[transport_id] = descriptor
    participants = [p for p in _find(root, 'participant')
                    if p.get('is_default_profile') == 'true']
    assert len(participants) == 1, 'exactly one default participant profile expected'
    rtps = participants[0].find(f'{FASTDDS_NS}rtps')
    assert rtps.findtext(f'{FASTDDS_NS}useBuiltinTransports').strip() == 'false'
    used = [t.text.strip() for t in _find(rtps, 'transport_id')]
    assert used, 'no user transports'

    kinds = set()
    for transport_id in used:
        descriptor = descriptors[transport_id]
        kind = descriptor.findtext(f'{FASTDDS_NS}type').strip()
        kinds.add(kind)
        if kind == 'SHM':
            continue
        assert kind == 'UDPv4', f'transport {transport_id} of type {kind} is not allowed'
        allowed = [a.text.strip() for a in _find(descriptor, 'address')]
        allowed += [i.get('name') for i in _find(descriptor, 'interface')]
        assert allowed == ['127.0.0.1'], f'{transport_id} may use {allowed}'
    assert kinds == {'SHM', 'UDPv4'}


def _interface_flags(name):
    """Return the IFF_* flags of a network interface of this network namespace."""
    request = struct.pack('16sH', name.encode()[:15], 0)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        reply = fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request)
    return struct.unpack('16sH', reply[:18])[1]


def _non_loopback_interfaces():
    """Return the names of the network interfaces that are up, loopback excluded."""
    names = []
    for _, name in socket.if_nameindex():
        try:
            flags = _interface_flags(name)
        except OSError:
            continue
        if flags & IFF_UP and not flags & IFF_LOOPBACK:
            names.append(name)
    return sorted(names)


class _Capture:
    """A tcpdump on one interface, printing one line per matching packet."""

    def __init__(self, tcpdump, interface, bpf_filter):
        self.interface = interface
        self.process = subprocess.Popen(
            [tcpdump, '-i', interface, '-n', '-l', '-q', '-p', bpf_filter],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_ready(self, timeout_s=10.0):
        # tcpdump reports 'listening on IFACE' on stderr once the capture is armed.
        deadline = time.monotonic() + timeout_s
        line = ''
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if 'listening on' in line or not line:
                break
        if 'listening on' not in line:
            self.process.kill()
            raise AssertionError(f'tcpdump on {self.interface} did not start: {line!r}')

    def stop(self):
        """Stop the capture and return the captured packet lines."""
        self.process.send_signal(signal.SIGINT)
        try:
            out, _ = self.process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, _ = self.process.communicate()
        return [line for line in out.splitlines() if line.strip()]


PUBLISHER = textwrap.dedent("""
    import sys, time, math
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from project_ghost_feedback_msgs.msg import CalibrationHistory
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node('containment_pub', context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        publisher = node.create_publisher(CalibrationHistory, 'containment_probe', 10)
        message = CalibrationHistory(worst_position_mahalanobis=math.inf, schema_version=1)
        deadline = time.monotonic() + float(sys.argv[1])
        while time.monotonic() < deadline:
            message.outcomes_considered += 1
            publisher.publish(message)
            executor.spin_once(timeout_sec=0.05)
        executor.shutdown()
        node.destroy_node()
    finally:
        context.try_shutdown()
""")

SUBSCRIBER = textwrap.dedent("""
    import sys, time
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from project_ghost_feedback_msgs.msg import CalibrationHistory
    context = rclpy.Context()
    rclpy.init(context=context)
    received = []
    try:
        node = rclpy.create_node('containment_sub', context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        node.create_subscription(CalibrationHistory, 'containment_probe', received.append, 10)
        deadline = time.monotonic() + float(sys.argv[1])
        while time.monotonic() < deadline and len(received) < int(sys.argv[2]):
            executor.spin_once(timeout_sec=0.05)
        executor.shutdown()
        node.destroy_node()
    finally:
        context.try_shutdown()
    print('received', len(received))
""")


def test_no_dds_packet_leaves_loopback():
    """Capture on all non-lo interfaces during a two-process pub/sub: zero RTPS packets."""
    tcpdump = shutil.which('tcpdump')
    if tcpdump is None:
        pytest.skip('tcpdump not installed (scripts/setup.sh installs it with apt when root)')
    if os.geteuid() != 0:
        pytest.skip('packet capture needs root')
    # Never generate traffic from an unconfined environment just to observe it leak.
    if os.environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE') != 'LOCALHOST' or not all(
            os.environ.get(name) for name in PROFILE_VARIABLES):
        pytest.fail('environment not confined to loopback; not starting DDS (see other tests)')
    interfaces = _non_loopback_interfaces()
    if not interfaces:
        pytest.skip('no non-loopback interface is up: nothing could leave anyway')

    low, high = _rtps_port_range(_domain_id())
    bpf_filter = f'udp portrange {low}-{high}'
    captures = [_Capture(tcpdump, name, bpf_filter) for name in interfaces + ['lo']]
    try:
        for capture in captures:
            capture.wait_ready()
        time.sleep(0.5)
        publisher = subprocess.Popen([sys.executable, '-c', PUBLISHER, '6'])
        try:
            subscriber = subprocess.run(
                [sys.executable, '-c', SUBSCRIBER, '15', str(MESSAGES_TO_RECEIVE)],
                capture_output=True, text=True, timeout=60, check=False)
        finally:
            publisher.wait(timeout=60)
        time.sleep(0.5)
    finally:
        packets = {capture.interface: capture.stop() for capture in captures}

    assert subscriber.returncode == 0, subscriber.stderr
    assert f'received {MESSAGES_TO_RECEIVE}' in subscriber.stdout, subscriber.stdout
    assert publisher.returncode == 0
    # Positive control: the filter does match this run's DDS traffic where it is allowed to be.
    assert packets['lo'], f'no packet on lo in ports {low}-{high}: the capture proves nothing'
    leaked = {name: lines[:5] for name, lines in packets.items() if name != 'lo' and lines}
    assert not leaked, f'DDS packets left loopback: {leaked}'
