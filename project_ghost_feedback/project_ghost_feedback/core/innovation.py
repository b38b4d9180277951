# SPDX-License-Identifier: Apache-2.0
"""Kalman-filter innovations -> the policies' per-vec3 distances (stdlib only).

An honest filter's innovation ``e`` (``m`` components, predicted covariance ``S``) has
``e^T S^-1 e ~ chi-square(m)``, so its unsquared distance ``d ~ chi(m)``. The policies assume each
vec3 distance of a calibrated outcome is ``chi(3)``. :func:`chi_to_chi3` maps ``d`` onto ``chi(3)``
by a probability integral transform, ``d3 = F3^-1(Fm(d))``, computed through the survival
functions above the median so that the tail is not lost to ``1 - p`` rounding: an honest filter's
``d3`` has exactly the law the policies assume, and a filter that is ``k`` times overconfident
still maps to a larger ``d3`` (the map is increasing). The map is the identity for ``m = 3``.

:func:`block_distances` whitens each block (the components of one kind, position or orientation)
with the Cholesky factor of its own block of ``S`` (stdlib, no numpy) and maps it; a block the
filter does not report is ``None``, never invented. :class:`InnovationPairing` turns a stream of
innovations into outcome rows, one engine for the live node and offline readers:

- a source reporting both blocks gives one row per innovation (position, orientation);
- a source reporting one block gives one row per **two consecutive** innovations of that source:
  the earlier one's ``d3`` in the position slot, the later one's in the orientation slot. An
  optimal filter's innovations are white, so the two are independent ``chi(3)`` and the row has
  exactly the law the policies assume (two independent calibrated vec3 per outcome); nothing is
  filled with a made-up value. ``docs/contracts.md``, "Innovations";
- every row carries the sources' bias evidence (:meth:`InnovationPairing.bias_evidence`): an
  optimal filter's whitened innovations have mean zero, a biased measurement does not.

Bad input raises nothing: :meth:`InnovationPairing.push` returns the refusal reason (one of
:data:`REFUSAL_REASONS`) and counts it.
"""

from collections.abc import Sequence
import dataclasses
from dataclasses import dataclass, field
import math

from .bias_evidence import BiasEvidence
from .serial_whitening import squared_norm
from .validation import TAXONOMY_MAX_LEN, TAXONOMY_PATTERN
from .feedback.chi_square import (  # noqa: F401  (chi_to_chi3 is part of this module's API)
    chi_square_quantile,
    chi_square_survival,
    chi_to_chi3,
    regularized_gammas,
)

MAX_COMPONENTS = 6
KIND_POSITION = 1
KIND_ORIENTATION = 2
KINDS = (KIND_POSITION, KIND_ORIENTATION)

REFUSAL_REASONS = (
    'no_components',          # m == 0
    'too_many_components',    # m > 6
    'covariance_size',        # len(S) != m * m
    'kinds_size',             # len(kinds) != m
    'unknown_kind',           # a kind neither position nor orientation
    'not_finite',             # NaN or inf in e or S
    'not_symmetric',          # |S_ij - S_ji| above the tolerance
    'not_positive_definite',  # a block's Cholesky factorisation fails
    'layout_changed',         # the source reported another layout before
    'stamp_backwards',        # stamp below the source's previous one
    'rejected_by_filter',     # the filter's own gate rejected it: counted, not judged
    'bad_source',             # source name not taxonomy
)
"""Every reason :meth:`InnovationPairing.push` can refuse an innovation with."""

# Relative tolerance of the symmetry check: |S_ij - S_ji| <= tol * sqrt(S_ii S_jj) (+ tiny).
SYMMETRY_TOLERANCE = 1e-9
_THREE = 3


class InnovationRefused(ValueError):
    """An innovation that cannot be judged; ``reason`` is one of :data:`REFUSAL_REASONS`."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def cholesky(matrix: Sequence[float], m: int) -> list[list[float]]:
    """Return the lower Cholesky factor of a symmetric ``m x m`` row-major matrix.

    Reads the lower triangle only. InnovationRefused('not_positive_definite') when a pivot is
    not positive (or not finite).
    """
    lower = [[0.0] * m for _ in range(m)]
    for i in range(m):
        row = lower[i]
        for j in range(i + 1):
            other = lower[j]
            # S_ij - sum_k<j L_ik L_jk, the sum added in the order of k from the int 0, as sum()
            # does (an int S_ij with nothing to subtract stays an int); explicit loops here and
            # below: the same bits on every Python, whose sum() may compensate
            products: float = 0
            for k in range(j):
                products += row[k] * other[k]
            total = matrix[i * m + j] - products
            if i == j:
                if not total > 0.0 or not math.isfinite(total):
                    raise InnovationRefused(
                        'not_positive_definite',
                        f'covariance is not positive definite (pivot {i}: {total!r})')
                row[i] = math.sqrt(total)
            else:
                row[j] = total / other[j]
    return lower


def whiten(error: Sequence[float], matrix: Sequence[float]) -> list[float]:
    """Return ``z = L^-1 e`` for ``S = L L^T`` (row-major ``matrix``): forward substitution.

    Under a covariance ``S`` that is honest, ``z`` has identity covariance; ``|z|`` is the
    Mahalanobis distance. InnovationRefused('not_positive_definite') as :func:`cholesky`.
    """
    m = len(error)
    lower = cholesky(matrix, m)
    white = [0.0] * m
    for i in range(m):
        row = lower[i]
        products = 0.0
        for k in range(i):
            products += row[k] * white[k]
        white[i] = (error[i] - products) / row[i]
    return white


def norm(v: Sequence[float]) -> float:
    """Return the Euclidean norm of ``v`` (the square root of :func:`squared_norm`)."""
    return math.sqrt(squared_norm(v))


def whitened_distance(error: Sequence[float], matrix: Sequence[float]) -> float:
    """Return the unsquared ``sqrt(e^T S^-1 e)`` by forward substitution with ``chol(S)``."""
    return norm(whiten(error, matrix))


def check_layout(innovation: Sequence[float], covariance: Sequence[float],
                 kinds: Sequence[int]) -> None:
    """Raise InnovationRefused for a malformed innovation (sizes, kinds, NaN, asymmetry)."""
    m = len(innovation)
    if m == 0:
        raise InnovationRefused('no_components', 'innovation has no components')
    if m > MAX_COMPONENTS:
        raise InnovationRefused(
            'too_many_components', f'innovation has {m} components, at most {MAX_COMPONENTS}')
    if len(covariance) != m * m:
        raise InnovationRefused(
            'covariance_size',
            f'covariance has {len(covariance)} values, {m} x {m} = {m * m} expected')
    if len(kinds) != m:
        raise InnovationRefused(
            'kinds_size', f'component_kinds has {len(kinds)} values, {m} expected')
    for kind in kinds:
        if kind not in KINDS:
            raise InnovationRefused(
                'unknown_kind', f'component kind {kind!r} is neither position (1) nor '
                'orientation (2)')
    if not all(math.isfinite(v) for v in innovation) or not all(
            math.isfinite(v) for v in covariance):
        raise InnovationRefused('not_finite', 'innovation or covariance holds NaN or inf')
    for i in range(m):
        for j in range(i):
            a, b = covariance[i * m + j], covariance[j * m + i]
            scale = math.sqrt(abs(covariance[i * m + i] * covariance[j * m + j]))
            if abs(a - b) > SYMMETRY_TOLERANCE * scale + 1e-300:
                raise InnovationRefused(
                    'not_symmetric', f'covariance is not symmetric: S[{i}][{j}] = {a!r}, '
                    f'S[{j}][{i}] = {b!r}')


def whitened_blocks(innovation: Sequence[float], covariance: Sequence[float],
                    kinds: Sequence[int]) -> tuple[list[float] | None, list[float] | None]:
    """Return each block's whitened components ``(z_position, z_orientation)`` (``None``: absent).

    Each block is whitened with the Cholesky factor of its own block of ``S`` (the marginal
    covariance of its components). InnovationRefused for malformed input (:func:`check_layout`)
    or a block that is not positive definite.
    """
    check_layout(innovation, covariance, kinds)
    m = len(innovation)
    result: list[list[float] | None] = []
    for kind in KINDS:
        index = [i for i in range(m) if kinds[i] == kind]
        if not index:
            result.append(None)
            continue
        error = [innovation[i] for i in index]
        block = [covariance[i * m + j] for i in index for j in index]
        result.append(whiten(error, block))
    return result[0], result[1]


def _mapped_distance(white: list[float]) -> float:
    """Return a whitened block's ``chi(m_b)`` distance mapped onto ``chi(3)``."""
    return chi_to_chi3(norm(white), len(white))


def block_distances(innovation: Sequence[float], covariance: Sequence[float],
                    kinds: Sequence[int]) -> tuple[float | None, float | None]:
    """Return ``(d3_position, d3_orientation)`` of one innovation (``None``: block not reported).

    Each block's :func:`whitened_blocks` ``chi(m_b)`` distance mapped onto ``chi(3)``
    (:func:`chi_to_chi3`). InnovationRefused as :func:`whitened_blocks`.
    """
    z_position, z_orientation = whitened_blocks(innovation, covariance, kinds)
    return (None if z_position is None else _mapped_distance(z_position),
            None if z_orientation is None else _mapped_distance(z_orientation))


@dataclass(frozen=True)
class InnovationOutcome:
    """One outcome row: stamps, the two slots' ``chi(3)`` distances and the reported components.

    ``position_error`` / ``orientation_error`` hold the reported components of the slot's
    innovation block in order, zero-padded to 3 (the padding is not evidence: the policies use
    only the distances). For a one-block source both slots hold that block, from two innovations.
    """

    source: str
    prediction_stamp_ns: int
    observed_stamp_ns: int
    position_mahalanobis: float
    orientation_mahalanobis: float
    position_error: tuple[float, float, float]
    orientation_error: tuple[float, float, float]
    frame_id: str = ''
    bias_evidence_nats: float = 0.0
    bias_position_share: float = 0.0


def _padded(values: Sequence[float]) -> tuple[float, float, float]:
    head = [float(v) for v in values[:3]] + [0.0] * max(0, 3 - len(values))
    return head[0], head[1], head[2]


@dataclass
class _SourceState:
    layout: tuple[int, ...]
    last_stamp_ns: int
    pending: tuple[int, float, tuple[float, float, float], list[float]] | None = None
    bias: BiasEvidence = field(default_factory=BiasEvidence)


def vec3_components_of(kinds: Sequence[int]) -> tuple[int, int]:
    """Return the (position, orientation) components an outcome's two slots hold for a layout.

    A two-block source fills each slot with its block; a one-block source of ``m`` components
    fills both slots with that block (two innovations per outcome): ``(m, m)``. These are the
    feedback node's ``position_components`` / ``orientation_components`` for an unbiased k.
    """
    position = sum(1 for k in kinds if k == KIND_POSITION)
    orientation = sum(1 for k in kinds if k == KIND_ORIENTATION)
    if position and orientation:
        return position, orientation
    block = position or orientation
    return block, block


def is_source_name(name: str) -> bool:
    """Return True for a valid source name: taxonomy, ``[a-z][a-z0-9_]*``, 1-64 characters."""
    return 0 < len(name) <= TAXONOMY_MAX_LEN and TAXONOMY_PATTERN.fullmatch(name) is not None


@dataclass
class InnovationPairing:
    """Innovations of any number of sources -> outcome rows, one source never mixed with another.

    ``push`` returns an :class:`InnovationOutcome`, ``None`` (accepted, waiting for the second
    innovation of a one-block source), or the refusal reason (a ``str``). ``accepted``,
    ``refused`` (by reason) and ``outcomes`` count every push. ``reset()`` forgets every source.

    Time going back: a stamp below the source's previous one by at most ``jump_tolerance_ns``
    is refused (``stamp_backwards``: out of order); by more, the source restarted (a simulator
    reset, a replayed log): its state (layout, pending innovation) is forgotten, the innovation
    starts it again, and ``source_resets`` counts it.

    The bias channel: each source's whitened blocks (both blocks of one innovation, or the two
    innovations of a one-block row) feed its own :class:`~.bias_evidence.BiasEvidence`, which
    restarts with the source. An outcome carries :meth:`bias_evidence`: the largest source's
    evidence less ``ln(number of sources)`` (a union bound: several sources spend the budget once).
    """

    jump_tolerance_ns: int = 5_000_000_000
    source_resets: int = 0
    accepted: int = 0
    outcomes: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    _sources: dict[str, _SourceState] = field(default_factory=dict)

    def reset(self) -> None:
        """Forget every source's layout, last stamp and pending innovation."""
        self._sources.clear()

    def layout(self, source: str) -> tuple[int, ...] | None:
        """Return the component kinds ``source`` reports (None before its first innovation)."""
        state = self._sources.get(source)
        return None if state is None else state.layout

    def layouts(self) -> dict[str, tuple[int, ...]]:
        """Return every known source's component kinds."""
        return {source: state.layout for source, state in self._sources.items()}

    def _refuse(self, reason: str) -> str:
        self.refused[reason] = self.refused.get(reason, 0) + 1
        return reason

    def push(self, source: str, stamp_ns: int, innovation: Sequence[float],
             covariance: Sequence[float], kinds: Sequence[int], rejected_by_filter: bool = False,
             frame_id: str = '') -> InnovationOutcome | None | str:
        """Take one innovation; return an outcome row, ``None`` (pending) or a refusal reason."""
        if not is_source_name(source):
            return self._refuse('bad_source')
        try:
            z_position, z_orientation = whitened_blocks(innovation, covariance, kinds)
        except InnovationRefused as refused:
            return self._refuse(refused.reason)
        layout = tuple(kinds)
        state = self._sources.get(source)
        if state is not None and stamp_ns < state.last_stamp_ns - self.jump_tolerance_ns:
            del self._sources[source]
            self.source_resets += 1
            state = None
        if state is not None and state.layout != layout:
            return self._refuse('layout_changed')
        if state is not None and stamp_ns < state.last_stamp_ns:
            return self._refuse('stamp_backwards')
        if rejected_by_filter:
            return self._refuse('rejected_by_filter')
        if state is None:
            state = self._sources[source] = _SourceState(layout, stamp_ns)
        state.last_stamp_ns = stamp_ns
        self.accepted += 1
        if z_position is not None and z_orientation is not None:
            pos = _padded([v for v, k in zip(innovation, kinds) if k == KIND_POSITION])
            ori = _padded([v for v, k in zip(innovation, kinds) if k == KIND_ORIENTATION])
            state.bias.add(z_position, z_orientation)
            return self._emit(source, InnovationOutcome(
                source, stamp_ns, stamp_ns, _mapped_distance(z_position),
                _mapped_distance(z_orientation), pos, ori, frame_id))
        white = z_position if z_position is not None else z_orientation
        assert white is not None
        distance = _mapped_distance(white)
        components = _padded(innovation)
        if state.pending is None:
            state.pending = (stamp_ns, distance, components, white)
            return None
        first_stamp, first_distance, first_components, first_white = state.pending
        state.pending = None
        state.bias.add(first_white, white)
        return self._emit(source, InnovationOutcome(
            source, first_stamp, stamp_ns, first_distance, distance, first_components,
            components, frame_id))

    def _emit(self, source: str, outcome: InnovationOutcome) -> InnovationOutcome:
        """Count ``outcome`` and put the sources' bias evidence on it (class documentation)."""
        self.outcomes += 1
        evidence, share = self.bias_evidence(source)
        return dataclasses.replace(outcome, bias_evidence_nats=evidence,
                                   bias_position_share=share)

    def bias_evidence(self, source: str) -> tuple[float, float]:
        """Return ``(evidence, position_share)`` for an outcome of ``source`` (class doc).

        The largest of the known sources' evidence less ``ln(number of sources)``, so that the
        sources together spend the bias channel's budget once; the share of the source it comes
        from, or, for a one-block source, 1 for a position block and 0 for an orientation block.
        """
        best, share = 0.0, 0.0
        for name, state in self._sources.items():
            value, position_share = state.bias.last
            if value > best or (name == source and value == best):
                best = value
                share = _share_of(state.layout, position_share)
        if len(self._sources) > 1:
            best = max(0.0, best - math.log(len(self._sources)))
        return best, share


def _share_of(layout: tuple[int, ...], position_share: float) -> float:
    """Return a source's position share: its evidence's, or its one block's kind (1 / 0)."""
    kinds = set(layout)
    if kinds == {KIND_POSITION}:
        return 1.0
    if kinds == {KIND_ORIENTATION}:
        return 0.0
    return position_share


__all__ = [
    'block_distances', 'check_layout', 'chi_to_chi3', 'cholesky',
    'InnovationOutcome', 'InnovationPairing', 'InnovationRefused', 'is_source_name',
    'KIND_ORIENTATION', 'KIND_POSITION', 'MAX_COMPONENTS', 'REFUSAL_REASONS',
    'vec3_components_of', 'whiten', 'whitened_blocks', 'whitened_distance',
]
