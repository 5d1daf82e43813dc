from __future__ import annotations

import yaml

from harness.config import Matrix, RandomWorkload
from harness.config.axes import LoadSearch
from harness.pipeline.search import next_load
from harness.plan import SloSearch, expand
from harness.result_records import SearchProbe

from tests.support.matrices import BASE_MATRIX

SERVER = expand(Matrix.model_validate(yaml.safe_load(BASE_MATRIX))).groups[0].server


def _search(axis: str = "concurrency", **spec: float) -> SloSearch:
    fields: dict[str, float] = {"min": 1, "max": 64}
    fields.update(spec)
    return SloSearch(server=SERVER, workload_name="w", axis=axis,  # type: ignore[arg-type]
                     workload=RandomWorkload(input_tokens=8, output_tokens=8),
                     spec=LoadSearch(search="slo", **fields), concurrency=64 if axis == "request_rate" else None)


def _walk(search: SloSearch, knee: float, throughput: dict[float, float] | None = None) -> list[SearchProbe]:
    """Run the search against a known curve: loads up to ``knee`` meet the SLO."""
    probes: list[SearchProbe] = []
    while (value := next_load(search, probes)[0]) is not None:
        rate = (throughput or {}).get(value, value * 10)
        probes.append(SearchProbe(value=value, cell_id=str(value), meets=value <= knee, output_throughput=rate))
    return probes


def test_doubles_then_bisects_to_the_knee() -> None:
    probes = _walk(_search(max_probes=12), knee=10)
    assert [p.value for p in probes] == [1, 2, 4, 8, 16, 12, 10, 11]
    assert next_load(_search(max_probes=12), probes) == (None, "bracketed")


def test_stops_at_saturation_when_more_load_buys_nothing() -> None:
    flat = {1.0: 100, 2.0: 190, 4.0: 300, 8.0: 310}
    probes = _walk(_search(), knee=64, throughput=flat)
    assert [p.value for p in probes] == [1, 2, 4, 8]
    assert next_load(_search(), probes) == (None, "saturated")


def test_the_ends_of_the_range() -> None:
    assert next_load(_search(), _walk(_search(), knee=0.5)) == (None, "min-misses")
    top = _walk(_search(max=20), knee=100)
    assert [p.value for p in top] == [1, 2, 4, 8, 16, 20]
    assert next_load(_search(max=20), top) == (None, "max")
    assert len(_walk(_search(max_probes=3), knee=10)) == 3


def test_a_rate_search_bisects_to_its_resolution() -> None:
    search = _search("request_rate", min=0.5, max=32, resolution=0.1, max_probes=20)
    probes = _walk(search, knee=5.3)
    passing = max(p.value for p in probes if p.meets)
    failing = min(p.value for p in probes if not p.meets)
    assert passing <= 5.3 < failing <= passing * 1.1
    assert next_load(search, probes)[1] == "bracketed"


def test_a_noisy_pass_above_a_miss_does_not_move_the_bracket() -> None:
    probes = [SearchProbe(value=v, cell_id=str(v), meets=m, output_throughput=v * 10)
              for v, m in ((1, True), (2, True), (4, False), (3, True))]
    assert next_load(_search(), probes) == (None, "bracketed")
    noisy = [*probes[:3], SearchProbe(value=8, cell_id="8", meets=True, output_throughput=80)]
    assert next_load(_search(), noisy)[0] == 3  # 8 passing above the miss at 4 is not trusted
