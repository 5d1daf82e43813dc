"""When each request of a cell is sent: the seeded, pure schedules of a ``LoadPattern`` (``harness.config.load``).

Two modes, as ``vllm bench serve`` has them:

- fixed concurrency (no ``request_rate``): ``concurrency`` users, each sending its next request as soon as its
  previous one finished (``--request-rate inf --max-concurrency N``);
- a request rate: arrivals whose gaps are gamma-distributed with shape ``burstiness`` and mean ``1/rate``
  (burstiness 1 is a Poisson process, below 1 burstier, above 1 more regular), capped at ``concurrency`` in flight
  (``--request-rate R --burstiness B --max-concurrency N``). Like vLLM, a count-bounded schedule without ramp-up
  is rescaled so that its last arrival falls exactly at ``count / rate``, which steadies throughput across seeds.

An optional linear ramp-up over ``ramp_up_s`` seconds: in rate mode the arrival intensity grows linearly from 0 to
``rate`` (vLLM ramps by request index between two rates instead; a ramp in time also serves duration-bounded
runs); in concurrency mode user k of N starts at ``k * ramp_up_s / N``. A run is bounded by the workload's
request count, or by ``duration_s`` (no request is sent after it; those in flight finish).

The same seed gives the same schedule: nothing here reads a clock.
"""

from __future__ import annotations

import numpy as np

from harness.config.load import LoadPattern

_SCHEDULE_STREAM = 2  # the RNG stream of arrival gaps (prompts use 0 and 1): schedules never shift prompts


def _unit_arrivals(rng: np.random.Generator, burstiness: float, count: int) -> np.ndarray:
    """Cumulative arrival 'times' of a process with mean gap 1 (gamma gaps of shape ``burstiness``)."""
    return np.cumsum(rng.gamma(shape=burstiness, scale=1.0 / burstiness, size=count))


def _warp(units: np.ndarray, rate: float, ramp_up_s: float) -> np.ndarray:
    """Map unit-rate arrivals through the inverse of the cumulative intensity Λ(t) = ∫ rate·min(t/T, 1) dt."""
    if ramp_up_s <= 0:
        return units / rate
    knee = rate * ramp_up_s / 2  # Λ(T): arrivals expected during the ramp
    ramping = np.sqrt(2 * ramp_up_s * np.minimum(units, knee) / rate)
    return np.where(units <= knee, ramping, units / rate + ramp_up_s / 2)


def arrival_times(pattern: LoadPattern, seed: int, *, count: int | None = None) -> np.ndarray:
    """Send times (s after the start of the measured phase) in rate mode.

    ``count`` requests when the run is count-bounded; else every arrival before ``pattern.duration_s``.
    """
    rate = pattern.request_rate
    if rate is None:
        raise ValueError("arrival times need a request_rate; fixed concurrency has no schedule")
    rng = np.random.default_rng((seed, _SCHEDULE_STREAM))
    if count is not None:
        times = _warp(_unit_arrivals(rng, pattern.burstiness, count), rate, pattern.ramp_up_s)
        if pattern.ramp_up_s <= 0 and count and times[-1] > 0:
            times *= (count / rate) / times[-1]  # vLLM's normalisation: the last arrival at exactly N / rate
        return times
    if pattern.duration_s is None:
        raise ValueError("a rate schedule is bounded by a request count or by duration_s")
    horizon = pattern.duration_s
    batch = max(16, int(rate * horizon * 1.2) + 16)
    units = _unit_arrivals(rng, pattern.burstiness, batch)
    times = _warp(units, rate, pattern.ramp_up_s)
    while times[-1] < horizon:  # rarely: the draw ran short of the horizon; extend the same stream
        more = units[-1] + _unit_arrivals(rng, pattern.burstiness, batch)
        units = np.concatenate([units, more])
        times = _warp(units, rate, pattern.ramp_up_s)
    return times[times < horizon]


def user_start_offsets(pattern: LoadPattern, concurrency: int) -> list[float]:
    """When each of ``concurrency`` users starts in fixed-concurrency mode (all at 0 without ramp-up)."""
    return [k * pattern.ramp_up_s / concurrency for k in range(concurrency)]
