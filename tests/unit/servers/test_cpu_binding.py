"""Each rank of a multi-rank CPU server gets its own cores, in the id-list syntax vLLM and SGLang parse."""

from __future__ import annotations

import pytest

from harness.servers.cpu_binding import omp_threads_bind, rank_cores, thread_env


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
