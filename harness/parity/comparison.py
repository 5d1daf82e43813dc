"""A candidate run against the reference run, paired by item: Δ, flips, significance, agreement, and the gate.

The parity gate: a candidate fails when its BFCL-aggregated overall accuracy is more than ``max_drop_pp`` points
below the reference's **and** the drop is significant by the exact McNemar test on the paired items (p < alpha).
Both conditions, because a drop within the noise of a few hundred items must not fail a cell, and a significant
drop that is smaller than what the matrix tolerates is not a regression the user cares about.

Δ, the per-category figures and the interval are computed on the items both runs answered (normally all), with
the weights of BFCL's aggregation (``scoring.category_weights``). This module also measures what a decoding variant
costs against ``free`` on the same server (``decoding_cost``). It does not run anything.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.parity.paired_stats import (
    PairedStratum,
    bootstrap_delta_interval,
    items_needed,
    mcnemar_exact,
    mcnemar_power,
)
from harness.parity.run_result import ItemRecord, ParityRun, score_categories
from harness.parity.scoring import aggregate, category_weights

POWER_DROP_PP = 5.0
"""The drop the power figure is stated for: a 5-point loss of tool-call accuracy is one no parity sample should
miss (the capstone lecture's FP4 loses 1.5 points on BFCL simple; a sample that cannot see 5 cannot see that either)."""
POWER = 0.8

GATE_RULE = "fails when Δ < -{max_drop_pp:g} pp and the exact McNemar p < {alpha:g}"
CONCLUSIVE_RULE = "; a pass counts when the sample had at least {min_power:.0%} power against a {drop:g}-point drop"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CategoryDelta(_Record):
    """One category's paired accuracies (fractions) and flips."""

    paired: int
    reference_accuracy: float
    candidate_accuracy: float
    delta_pp: float
    right_to_wrong: int
    wrong_to_right: int


class ParityComparison(_Record):
    """A candidate run judged against the reference run; ``passed`` is None when it could not be judged."""

    passed: bool | None
    delta_pp: float | None
    overall_accuracy: float | None
    """The candidate's overall accuracy (fraction) on the paired items."""
    reference_accuracy: float | None
    reason: str
    rule: str
    decoding: str
    reference_decoding: str
    max_drop_pp: float
    alpha: float
    paired_items: int = 0
    unpaired_items: int = 0
    right_to_wrong: int = 0
    wrong_to_right: int = 0
    mcnemar_p: float | None = None
    ci_low_pp: float | None = None
    ci_high_pp: float | None = None
    bootstrap_resamples: int = 0
    bootstrap_seed: int = 0
    agreement: float | None = None
    """Fraction of paired items whose decoded calls equal the reference's (order of parallel calls ignored)."""
    malformed_rate: float | None = None
    reference_malformed_rate: float | None = None
    categories: dict[str, CategoryDelta] = {}
    right_to_wrong_ids: tuple[str, ...] = ()
    wrong_to_right_ids: tuple[str, ...] = ()
    discordance: float | None = None
    """Share of paired items that flipped either way: what the power of the McNemar test depends on."""
    power_drop_pp: float = POWER_DROP_PP
    power: float | None = None
    """Probability that this many paired items make a true drop of ``power_drop_pp`` significant at ``alpha``, at
    the measured discordance (at least the drop itself: a drop of d points flips at least d% of the items)."""
    items_needed: int | None = None
    """Paired items for 80% power against that drop at that discordance (None: beyond 5,000)."""
    rerun: bool = False
    """The reference's own rerun judged against its first run (``parity.rerun_reference``)."""
    min_power: float = 0.0
    """The power against ``power_drop_pp`` a pass needs to count (``parity.min_power``); 0 in files written before
    it existed, whose passes all counted."""

    @property
    def conclusive(self) -> bool:
        """A fail is a finding; a pass is one only when its sample could have seen the drop (``min_power``)."""
        if self.passed is None:
            return False
        return not self.passed or (self.power or 0.0) >= self.min_power


@dataclass(frozen=True, slots=True)
class ParityRule:
    """The parity gate's settings (``ParitySpec``'s, or these defaults): the drop a cell may show, the McNemar
    level it must be significant at to fail, the power a pass needs to count, and the bootstrap's draws and seed."""

    max_drop_pp: float = 1.0
    alpha: float = 0.05
    min_power: float = 0.0
    resamples: int = 2000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.max_drop_pp < 0 or not 0 < self.alpha < 1 or not 0 <= self.min_power <= 1:
            raise ValueError(f"need max_drop_pp >= 0, 0 < alpha < 1 and 0 <= min_power <= 1, got "
                             f"{self.max_drop_pp}, {self.alpha}, {self.min_power}")


def compare(reference: ParityRun, candidate: ParityRun, rule: ParityRule = ParityRule()) -> ParityComparison:
    """Pair ``candidate`` with ``reference`` by item id and apply the parity gate; a pass whose sample had less
    than ``rule.min_power`` against a ``POWER_DROP_PP`` drop is kept as a pass but marked inconclusive."""
    max_drop_pp, alpha, min_power = rule.max_drop_pp, rule.alpha, rule.min_power
    resamples, seed = rule.resamples, rule.seed
    stated = GATE_RULE.format(max_drop_pp=max_drop_pp, alpha=alpha)
    if min_power:
        stated += CONCLUSIVE_RULE.format(min_power=min_power, drop=POWER_DROP_PP)
    base: dict[str, Any] = {"rule": stated, "decoding": candidate.decoding, "reference_decoding": reference.decoding,
                            "max_drop_pp": max_drop_pp, "alpha": alpha, "min_power": min_power}
    for name, run in (("reference", reference), ("candidate", candidate)):
        if run.error is not None:
            return ParityComparison(passed=None, delta_pp=None, overall_accuracy=candidate.overall_accuracy,
                                    reference_accuracy=reference.overall_accuracy,
                                    reason=f"not judged: the {name} run failed: {run.error}", **base)
    by_id = {item.id: item for item in reference.items}
    pairs = [(by_id[item.id], item) for item in candidate.items if item.id in by_id]
    unpaired = len(reference.items) + len(candidate.items) - 2 * len(pairs)
    if not pairs:
        return ParityComparison(passed=None, delta_pp=None, overall_accuracy=None, reference_accuracy=None,
                                reason="not judged: the runs have no item in common", unpaired_items=unpaired,
                                **base)

    groups: dict[str, list[tuple[ItemRecord, ItemRecord]]] = {}
    for pair in pairs:
        groups.setdefault(pair[0].category, []).append(pair)
    counts = {category: len(group) for category, group in groups.items()}
    weights = category_weights(counts)
    strata = {c: PairedStratum([r.correct for r, _ in g], [k.correct for _, k in g], weights[c])
              for c, g in groups.items()}
    ref_overall = aggregate({c: _mean(s.reference) for c, s in strata.items()}, counts).overall or 0.0
    cand_overall = aggregate({c: _mean(s.candidate) for c, s in strata.items()}, counts).overall or 0.0
    delta_pp = (cand_overall - ref_overall) * 100
    lost = [k.id for r, k in pairs if r.correct and not k.correct]
    gained = [k.id for r, k in pairs if k.correct and not r.correct]
    p = mcnemar_exact(len(lost), len(gained))
    low, high = bootstrap_delta_interval(strata, resamples=resamples, seed=seed)
    failed = delta_pp < -max_drop_pp and p < alpha
    headroom = sum(r.correct for r, _ in pairs) / len(pairs)
    power = _power(len(pairs), (len(lost) + len(gained)) / len(pairs), headroom, alpha)
    reason = _reason(delta_pp, p, max_drop_pp, alpha)
    if not failed and power["power"] < min_power:
        reason += "; " + _inconclusive(len(pairs), power, headroom)
    return ParityComparison(
        passed=not failed, delta_pp=delta_pp, overall_accuracy=cand_overall, reference_accuracy=ref_overall,
        reason=reason, paired_items=len(pairs), unpaired_items=unpaired,
        right_to_wrong=len(lost), wrong_to_right=len(gained), mcnemar_p=p, ci_low_pp=low * 100,
        ci_high_pp=high * 100, bootstrap_resamples=resamples, bootstrap_seed=seed,
        agreement=sum(_calls_key(r) == _calls_key(k) for r, k in pairs) / len(pairs),
        malformed_rate=_mean([k.malformed for _, k in pairs]),
        reference_malformed_rate=_mean([r.malformed for r, _ in pairs]),
        categories={c: _category_delta(g) for c, g in groups.items()},
        right_to_wrong_ids=tuple(lost), wrong_to_right_ids=tuple(gained), **base, **power,
    )


def _power(items: int, discordance: float, headroom: float, alpha: float) -> dict[str, Any]:
    drop = POWER_DROP_PP / 100
    if headroom < drop:
        # A drop of d points needs d% of the items right in the reference to lose: a reference that answers
        # (almost) nothing right cannot show one, whatever the sample size. Zeros compared with zeros see nothing.
        return {"discordance": discordance, "power": 0.0, "items_needed": None}
    assumed = max(discordance, drop)
    return {"discordance": discordance, "power": mcnemar_power(items, assumed, drop, alpha),
            "items_needed": items_needed(assumed, drop, alpha, POWER)}


def _inconclusive(items: int, power: dict[str, Any], headroom: float) -> str:
    if headroom < POWER_DROP_PP / 100:
        return (f"inconclusive: the reference answers {headroom:.0%} of the {items} items right, too few to lose "
                f"{POWER_DROP_PP:g} points")
    needed = power["items_needed"]
    return (f"inconclusive: {items} paired items had {power['power']:.1%} power against a {POWER_DROP_PP:g}-point "
            f"drop ({f'{needed:,}' if needed else 'more than 5,000'} needed for {POWER:.0%})")


def _reason(delta_pp: float, p: float, max_drop_pp: float, alpha: float) -> str:
    if delta_pp >= -max_drop_pp:
        return f"Δ {delta_pp:+.2f} pp is within the allowed drop of {max_drop_pp:g} pp"
    if p < alpha:
        return f"Δ {delta_pp:+.2f} pp is below -{max_drop_pp:g} pp and significant (McNemar p = {p:.3g} < {alpha:g})"
    return (f"Δ {delta_pp:+.2f} pp is below -{max_drop_pp:g} pp but not significant (McNemar p = {p:.3g} >= "
            f"{alpha:g}); more items would tell")


def _category_delta(group: list[tuple[ItemRecord, ItemRecord]]) -> CategoryDelta:
    ref = _mean([r.correct for r, _ in group])
    cand = _mean([k.correct for _, k in group])
    return CategoryDelta(paired=len(group), reference_accuracy=ref, candidate_accuracy=cand,
                         delta_pp=(cand - ref) * 100, right_to_wrong=sum(r.correct and not k.correct for r, k in group),
                         wrong_to_right=sum(k.correct and not r.correct for r, k in group))


def _calls_key(item: ItemRecord) -> tuple[str, ...] | None:
    # Sorted, because BFCL does not order parallel calls: the same calls in another order agree.
    if item.calls is None:
        return None
    return tuple(sorted(json.dumps(call, sort_keys=True) for call in item.calls))


def _mean(flags: Any) -> float:
    return sum(flags) / len(flags) if len(flags) else 0.0


class DecodingCost(_Record):
    """What a decoding variant costs against ``free`` on the same server, over the items both ran."""

    decoding: str
    baseline_decoding: str
    paired_items: int
    accuracy_delta_pp: float | None
    malformed_rate: float | None
    baseline_malformed_rate: float | None
    tpot_median_ms: float | None
    baseline_tpot_median_ms: float | None
    tpot_ratio: float | None
    """Median TPOT of the variant / median TPOT of the baseline (> 1: the variant decodes slower)."""
    paired_tpot_delta_median_ms: float | None
    """Median over items of (variant TPOT − baseline TPOT) for the same item."""
    ttft_median_ms: float | None
    baseline_ttft_median_ms: float | None
    per_token_ms: float | None = None
    """Median over items of end-to-end time / output tokens (robust to a parser that holds streamed text)."""
    baseline_per_token_ms: float | None = None
    per_token_ratio: float | None = None
    """per_token_ms of the variant / of the baseline (> 1: the variant costs more time per output token)."""


def decoding_cost(baseline: ParityRun, variant: ParityRun) -> DecodingCost:
    """Compare ``variant`` with ``baseline`` (normally ``free``) run on the same server and items."""
    by_id = {item.id: item for item in baseline.items}
    pairs = [(by_id[item.id], item) for item in variant.items if item.id in by_id]
    base_tpot = _median([b.tpot_ms for b, _ in pairs])
    var_tpot = _median([v.tpot_ms for _, v in pairs])
    var_overall, base_overall = _overall([v for _, v in pairs]), _overall([b for b, _ in pairs])
    base_token = _median([_per_token(b) for b, _ in pairs])
    var_token = _median([_per_token(v) for _, v in pairs])
    return DecodingCost(
        decoding=variant.decoding, baseline_decoding=baseline.decoding, paired_items=len(pairs),
        accuracy_delta_pp=(var_overall - base_overall) * 100 if var_overall is not None and base_overall is not None
        else None,
        malformed_rate=_mean([v.malformed for _, v in pairs]) if pairs else None,
        baseline_malformed_rate=_mean([b.malformed for b, _ in pairs]) if pairs else None,
        tpot_median_ms=var_tpot, baseline_tpot_median_ms=base_tpot,
        tpot_ratio=var_tpot / base_tpot if var_tpot is not None and base_tpot else None,
        paired_tpot_delta_median_ms=_median([v.tpot_ms - b.tpot_ms for b, v in pairs
                                             if v.tpot_ms is not None and b.tpot_ms is not None]),
        ttft_median_ms=_median([v.ttft_ms for _, v in pairs]),
        baseline_ttft_median_ms=_median([b.ttft_ms for b, _ in pairs]),
        per_token_ms=var_token, baseline_per_token_ms=base_token,
        per_token_ratio=var_token / base_token if var_token is not None and base_token else None,
    )


def _per_token(item: ItemRecord) -> float | None:
    return item.e2e_ms / item.output_tokens if item.e2e_ms is not None and item.output_tokens else None


def _overall(items: list[ItemRecord]) -> float | None:
    scores = score_categories(items)
    return aggregate({c: s.accuracy for c, s in scores.items()}, {c: s.total for c, s in scores.items()}).overall


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None
