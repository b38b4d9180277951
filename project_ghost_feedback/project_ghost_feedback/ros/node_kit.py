# SPDX-License-Identifier: Apache-2.0
"""The plumbing both project nodes share: parameters, /diagnostics, stamps, capped text, executors.

- :class:`ParameterSpec` + :func:`descriptor`: every parameter declared with a descriptor that
  states its type, meaning, read-only flag and range or choices;
- :class:`ParameterSet`: declares the specs, validates a change as a whole in the on-set callback
  (undeclared names, the empty name included, and read-only ones refused; the reason and its log
  line capped to :data:`MAX_TEXT` characters), applies the validated configuration in the
  post-set callback;
- :func:`diagnostic_status`: one DiagnosticStatus named ``<node fully qualified name>: <task>``
  (diagnostic_updater's convention), hardware_id the node name, message and values capped;
  :func:`diagnostic_array` wraps it with the node clock's stamp;
- :func:`stamp_to_ns` / :func:`ns_to_stamp` / :func:`fill_stamp`: the one conversion between
  integer nanoseconds and builtin_interfaces/Time, with one rule: ``nanosec`` must be below 10**9
  (a ValueError otherwise, never silently carried into the next second);
- :func:`cap_text`; :func:`make_executor` (the ``executor`` parameter's choices).
"""

from collections.abc import Callable, Collection, Iterable, Mapping
import importlib
import time
from typing import Any, cast

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from project_ghost_feedback_msgs.msg import (
    BeliefSelfAssessment as BeliefSelfAssessmentMsg,
    PredictionOutcome as PredictionOutcomeMsg,
)
from rclpy.exceptions import ParameterException
from rclpy.context import Context
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.qos import QoSProfile
from rclpy.parameter import Parameter
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)

from ..msg_decoding import NS_PER_S, stamp_to_ns as _contract_stamp_to_ns
from ..parameter_spec import (  # noqa: F401 - the kit's parameter and text rules, re-exported
    cap_text,
    EXECUTORS,
    MAX_TEXT,
    ParameterError,
    ParameterSpec,
)
from .conversions import fill_stamp, ns_to_stamp  # noqa: F401 - the kit's stamp conversion

MAX_INT = 2**31 - 1
NO_PUBLISHER_EVENTS = PublisherEventCallbacks(use_default_callbacks=False)
"""For the nodes' output publishers: no rclpy default event handlers (incompatible QoS, type).

Each handler is a waitable that the single-threaded executor puts in its wait set on every
wake-up (~5% of the outcome bridge's CPU per pair for its six). The outputs offer RELIABLE
(VOLATILE, or TRANSIENT_LOCAL for the feedback events), which every request but a deadline or
a liveliness lease matches, and a subscriber that asks for more is warned by its own side
(``ros2 topic echo`` prints it). The inputs' subscriptions keep theirs: an incompatible
publisher is logged (the outcome bridge also counts it: ``*_incompatible_qos`` on
/diagnostics)."""


def stamp_to_ns(stamp: Any, owner: str = 'message', field: str = 'header.stamp') -> int:
    """Return ``sec * 10**9 + nanosec`` of a Time message (nanosec >= 10**9: ValueError)."""
    return _contract_stamp_to_ns(stamp, owner, field)


def _kind(default: object) -> int:
    if isinstance(default, bool):
        return ParameterType.PARAMETER_BOOL
    if isinstance(default, int):
        return ParameterType.PARAMETER_INTEGER
    if isinstance(default, float):
        return ParameterType.PARAMETER_DOUBLE
    if isinstance(default, (list, tuple)) and default and isinstance(default[0], float):
        return ParameterType.PARAMETER_DOUBLE_ARRAY
    if isinstance(default, (list, tuple)):
        return ParameterType.PARAMETER_STRING_ARRAY
    return ParameterType.PARAMETER_STRING


def descriptor(name: str, spec: ParameterSpec) -> ParameterDescriptor:
    """Return the ParameterDescriptor of a parameter: type, meaning, read-only, range, choices."""
    result = ParameterDescriptor(
        name=name, type=_kind(spec.default), description=spec.description,
        read_only=spec.read_only)
    low: float
    high: float
    if spec.integer_range is not None:
        low, high = spec.integer_range
        result.integer_range = [IntegerRange(from_value=low, to_value=min(high, MAX_INT), step=1)]
        result.additional_constraints = f'integer in [{low}, {high}]'
    elif spec.float_range is not None:
        low, high = spec.float_range
        result.floating_point_range = [
            FloatingPointRange(from_value=float(low), to_value=float(high), step=0.0)]
        result.additional_constraints = f'in [{low}, {high}]'
    if spec.choices is not None:
        result.additional_constraints = f'one of: {", ".join(spec.choices)}'
    if isinstance(spec.default, (list, tuple)) and not spec.default:
        # rclpy infers an empty list's type as a byte array, and then refuses a list of strings
        # given at start: such a parameter is dynamically typed and its validator checks the type.
        result.dynamic_typing = True
    return result


def refusal(node: Node, parameters: Iterable[Parameter], names: Collection[str],
            read_only: Collection[str]) -> str | None:
    """Return why a change of ``parameters`` is refused by name, or None.

    Refused: a name the node has not declared (the empty name included: rclpy lets it through to
    the callbacks), and a name in ``read_only``. ``names`` are the specs' names; the node's other
    declared parameters (``use_sim_time``, ``qos_overrides.*``) pass.
    """
    for parameter in parameters:
        name = parameter.name
        if not name or (name not in names and not node.has_parameter(name)):
            return f'{cap_text(repr(name), 80)} is not a parameter of this node'
        if name in read_only:
            return f'{name} is read-only (set it at start)'
    return None


class ParameterSet:
    """A node's parameters from specs: declared, validated as a whole on set, applied after set.

    Call :meth:`watch` once the node has declared everything.
    ``validate(values)`` returns a configuration object or raises
    :class:`~..parameter_spec.ParameterError` with a one-line reason;
    ``apply(old, new, parameters)`` is called in the post-set callback with the configuration the
    on-set callback validated (never for a change that leaves it equal). ``error_type`` is raised
    at construction for an invalid start-up set (run_node() exits 2 for a ValueError).
    """

    def __init__(self, node: Node, specs: Mapping[str, ParameterSpec],
                 validate: Callable[[dict[str, Any]], Any],
                 apply: Callable[[Any, Any, list[Parameter]], None],
                 error_type: type[Exception] = ValueError) -> None:
        self._node = node
        self._specs = dict(specs)
        self._validate = validate
        self._apply = apply
        self.read_only = frozenset(n for n, s in self._specs.items() if s.read_only)
        self._pending: Any = None
        try:
            for name, spec in self._specs.items():
                node.declare_parameter(name, spec.default, descriptor(name, spec))
        except ParameterException as error:  # out of range or of the wrong type
            raise error_type(f'invalid parameters: {cap_text(error)}') from None
        try:
            self.config = validate(self.values())
        except ParameterError as error:
            raise error_type(f'invalid parameters: {cap_text(error)}') from None

    def watch(self) -> None:
        """Install the on-set and post-set callbacks (after the node declared all it declares).

        rclpy runs on-set callbacks for declarations too: a node that declares more after this
        (``qos_overrides.*`` with a subscription) would see them refused as undeclared.
        """
        self._node.add_on_set_parameters_callback(self._check)
        self._node.add_post_set_parameters_callback(self._applied)

    def value(self, name: str) -> Any:
        """Return the current value of one parameter."""
        return self._node.get_parameter(name).value

    def values(self) -> dict[str, Any]:
        """Return ``{name: value}`` of every spec'd parameter."""
        return {name: self._node.get_parameter(name).value for name in self._specs}

    def _check(self, parameters: list[Parameter]) -> SetParametersResult:
        """On-set: refuse by name, then validate the whole resulting set; apply nothing."""
        reason = refusal(self._node, parameters, self._specs, self.read_only)
        if reason is None:
            values = self.values()
            values.update((p.name, p.value) for p in parameters if p.name in values)
            try:
                self._pending = self._validate(values)
            except ParameterError as error:
                reason = cap_text(error)
        if reason is not None:
            self._pending = None
            self._node.get_logger().warning(f'parameter change refused: {reason}')
            return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    def _applied(self, parameters: list[Parameter]) -> None:
        """Post-set: apply the configuration the on-set callback validated."""
        config, self._pending = self._pending, None
        if config is None or config == self.config:
            return
        old, self.config = self.config, config
        self._apply(old, config, parameters)
        self._node.get_logger().info(cap_text(
            'parameters changed: ' + ', '.join(f'{p.name}={p.value!r}' for p in parameters)))


class TimedLogger:
    """A node's rclpy logger whose lines begin with when: seconds since start and ROS time.

    ``[+12.345 s | ROS time 151.200 s] text``: the seconds since the node started (steady time)
    and the node clock (sim time under ``use_sim_time``), which is what a bag's stamps and a
    simulator show, instead of rcutils' epoch seconds (run_node() leaves ``{time}`` out of
    ``RCUTILS_CONSOLE_OUTPUT_FORMAT`` unless the user set one). Everything but the severity
    methods is the wrapped logger's.
    """

    def __init__(self, logger: Any, node: Node, start_ns: int) -> None:
        self._logger, self._node, self._start_ns = logger, node, start_ns

    def prefix(self) -> str:
        """Return ``[+<seconds since start> s | ROS time <node clock> s] ``."""
        elapsed = (time.monotonic_ns() - self._start_ns) / NS_PER_S
        try:
            ros = f'{self._node.get_clock().now().nanoseconds / NS_PER_S:.3f} s'
        except Exception:  # noqa: BLE001 - no clock yet (rclpy logging while it builds the node)
            ros = '-'
        return f'[+{elapsed:.3f} s | ROS time {ros}] '

    # One call of the rclpy logger per severity, each on its own line: rclpy refuses a call
    # site (file and line) that logs at two severities.
    def debug(self, message: object, **kwargs: Any) -> Any:
        """Log at DEBUG, with the prefix."""
        return self._logger.debug(self.prefix() + str(message), **kwargs)

    def info(self, message: object, **kwargs: Any) -> Any:
        """Log at INFO, with the prefix."""
        return self._logger.info(self.prefix() + str(message), **kwargs)

    def warning(self, message: object, **kwargs: Any) -> Any:
        """Log at WARN, with the prefix."""
        return self._logger.warning(self.prefix() + str(message), **kwargs)

    warn = warning

    def error(self, message: object, **kwargs: Any) -> Any:
        """Log at ERROR, with the prefix."""
        return self._logger.error(self.prefix() + str(message), **kwargs)

    def fatal(self, message: object, **kwargs: Any) -> Any:
        """Log at FATAL, with the prefix."""
        return self._logger.fatal(self.prefix() + str(message), **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logger, name)


class TimedLogging:
    """Node mixin (before ``Node`` in the bases): ``get_logger()`` is a :class:`TimedLogger`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._log_start_ns = time.monotonic_ns()
        super().__init__(*args, **kwargs)

    def get_logger(self) -> Any:
        """Return the node's logger, its lines prefixed with the time since start and ROS time."""
        node = cast(Node, self)
        return TimedLogger(super().get_logger(), node,  # type: ignore[misc]
                           self._log_start_ns)


STATUS_NAMES = ('OK', 'WARN', 'ERROR', 'STALE')
"""DiagnosticStatus level names by value (``ros2 topic echo`` shows the level as a byte)."""


def producer_publishers(node: Node, qos: QoSProfile) -> tuple[Publisher, Publisher, Publisher]:
    """Return the ``prediction_outcome``, ``self_assessment/raw`` and ``/diagnostics`` publishers.

    The outputs every bridge shares (the outcome, innovation and NavSat bridges), ``qos`` for the
    first two, none with rclpy's default event handlers (:data:`NO_PUBLISHER_EVENTS`).
    """
    return (node.create_publisher(PredictionOutcomeMsg, 'prediction_outcome', qos,
                                  event_callbacks=NO_PUBLISHER_EVENTS),
            node.create_publisher(BeliefSelfAssessmentMsg, 'self_assessment/raw', qos,
                                  event_callbacks=NO_PUBLISHER_EVENTS),
            node.create_publisher(DiagnosticArray, '/diagnostics', 10,
                                  event_callbacks=NO_PUBLISHER_EVENTS))


def status_name(level: bytes | int) -> str:
    """Return the name of a DiagnosticStatus level (a byte, as rclpy has it, or an int)."""
    value = level[0] if isinstance(level, (bytes, bytearray)) else int(level)
    return STATUS_NAMES[value] if 0 <= value < len(STATUS_NAMES) else str(value)


def diagnostic_status(name: str, task: str, level: bytes, message: object,
                      values: Mapping[str, object]) -> DiagnosticStatus:
    """Return the DiagnosticStatus ``<name>: <task>``, its text capped.

    ``name``: the node's fully qualified name (the hardware id too). The first value,
    ``status``, names the level (OK, WARN, ERROR, STALE).
    """
    values = {'status': status_name(level), **values}
    return DiagnosticStatus(
        level=level, name=f'{name}: {task}', message=cap_text(message), hardware_id=name,
        values=[KeyValue(key=key, value=cap_text(value)) for key, value in values.items()])


def diagnostic_array(node: Node, *statuses: DiagnosticStatus) -> DiagnosticArray:
    """Return a DiagnosticArray of ``statuses`` stamped with the node clock."""
    array = DiagnosticArray(status=list(statuses))
    array.header.stamp = node.get_clock().now().to_msg()
    return array


class PeriodicTimer:
    """A node's timer whose period a parameter can change (both nodes' /diagnostics timer).

    :meth:`set_period` replaces the rclpy timer when the period differs (rclpy timers cannot
    change their period); the callback and the clock stay.
    """

    def __init__(self, node: Node, period_s: float, callback: Callable[[], None],
                 clock: Any) -> None:
        self._node, self._callback, self._clock = node, callback, clock
        self.period_s = period_s
        self._timer = node.create_timer(period_s, callback, clock=clock)

    def set_period(self, period_s: float) -> None:
        """Fire every ``period_s`` seconds from now on (nothing happens when it is unchanged)."""
        if period_s == self.period_s:
            return
        self._node.destroy_timer(self._timer)
        self.period_s = period_s
        self._timer = self._node.create_timer(period_s, self._callback, clock=self._clock)


def make_executor(name: str, context: Context | None = None) -> Executor:
    """Return the executor called ``name`` (one of EXECUTORS) bound to ``context``.

    ``events`` is rclpy.experimental.EventsExecutor: faster, but on rclpy 7.1 it cannot call a
    subscription callback that takes the message info (no sequence-gap counting with it).
    """
    if name == 'events':
        from rclpy.experimental import EventsExecutor
        return EventsExecutor(context=context)
    return SingleThreadedExecutor(context=context)


def message_class(msgtype: object) -> Any:
    """Return the Python class of a ROS 2 message type name ``pkg/msg/Type``.

    ValueError with a one-line reason when the package or the type cannot be imported.
    """
    package, _, name = str(msgtype).partition('/msg/')
    try:
        module = importlib.import_module(f'{package}.msg')
        return getattr(module, name)
    except (ImportError, AttributeError, ValueError):
        raise ValueError(f'cannot import the message type {msgtype!r} (is its package '
                         'installed and sourced?)') from None


__all__ = [
    'cap_text', 'descriptor', 'diagnostic_array', 'diagnostic_status', 'EXECUTORS',
    'fill_stamp', 'make_executor', 'MAX_TEXT', 'message_class', 'NS_PER_S', 'ns_to_stamp',
    'ParameterSet', 'ParameterSpec', 'PeriodicTimer', 'refusal', 'stamp_to_ns',
    'TimedLogger', 'TimedLogging',
]
