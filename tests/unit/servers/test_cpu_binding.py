"""Each rank of a multi-rank CPU server gets its own cores, in the id-list syntax vLLM and SGLang parse."""

from __future__ import annotations

import pytest

from harness.servers.cpu_binding import omp_threads_bind, part_cores, rank_cores, thread_env


def test_one_core_per_rank_on_two_cores() -> None:
    assert omp_threads_bind((0, 1), 2) == "0|1"


def test_contiguous_shares_are_written_as_ranges() -> None:
    assert omp_threads_bind(range(8), 2) == "0-3|4-7"
    assert rank_cores([7, 6, 5, 4], 2) == [[4, 5], [6, 7]]


def test_gaps_in_the_affinity_mask_are_listed_one_by_one() -> None:
    assert omp_threads_bind((0, 2, 4, 6), 2) == "0,2|4,6"


def test_the_remainder_stays_unbound_for_the_api_server() -> None:
    assert omp_threads_bind((0, 1, 2), 2) == "0|1"


def test_fewer_cores_than_ranks_is_refused_naming_both() -> None:
    with pytest.raises(ValueError, match=r"4 ranks need a core each; this process may use 2 \(0-1\)"):
        rank_cores((0, 1), 4)


def test_the_binding_parses_with_vllms_own_id_list_parser() -> None:
    cr_utils = pytest.importorskip("vllm.utils.cpu_resource_utils")
    assert [cr_utils.parse_id_list(s) for s in omp_threads_bind((0, 1, 2, 3, 5), 2).split("|")] == [[0, 1], [2, 3]]


def test_thread_env_binds_only_several_ranks_with_a_core_each() -> None:
    assert thread_env(None, 1, [0, 1], "X_BIND") == {}
    assert thread_env(4, 2, [0, 1], "X_BIND") == {"OMP_NUM_THREADS": "4", "X_BIND": "0|1"}
    assert thread_env(None, 4, [0, 1], "X_BIND") == {}  # too few cores: the plan refuses it, no half binding


def test_a_confined_part_binds_its_share_even_with_one_rank() -> None:
    assert thread_env(None, 1, [1], "X_BIND", confined=True) == {"X_BIND": "1"}
    assert thread_env(None, 2, [2, 3], "X_BIND", confined=True) == {"X_BIND": "2|3"}
    assert thread_env(None, 2, [2], "X_BIND", confined=True) == {}  # a share too small to bind every rank


def test_colocated_parts_split_the_cores_when_every_rank_gets_one() -> None:
    assert part_cores([0, 1], 2, 1) == [[0], [1]]
    assert part_cores(range(8), 2, 2) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert part_cores([0, 1], 2, 2) is None  # two TP 2 replicas on two cores: nothing to split
    assert part_cores([0, 1], 1, 1) is None  # one part keeps the machine
