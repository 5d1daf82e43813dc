from __future__ import annotations

import pytest

from harness_testing.proxy_faults import FaultAction, FaultPlan, FaultRule


def test_a_spec_maps_indexes_to_actions() -> None:
    plan = FaultPlan.parse("0-2=status:429:1, 5=reset,7=stall,*=pass")
    assert [str(plan.action_for(index)) for index in range(9)] == [
        "status:429:1", "status:429:1", "status:429:1", "pass", "pass", "reset", "pass", "stall", "pass"]
    assert plan.action_for(0) == FaultAction(kind="status", status=429, retry_after_s=1)
    assert plan.rules[0] == FaultRule(0, 2, FaultAction(kind="status", status=429, retry_after_s=1))


@pytest.mark.parametrize(("spec", "canonical"), [
    ("", ""),
    ("*=pass", ""),
    ("*=status:503", "*=status:503"),
    ("3-6=status:503", "3-6=status:503"),
    ("7=stall,0-2=status:429:1,5=reset", "7=stall,0-2=status:429:1,5=reset"),
    ("4-4=reset,*=stall", "4=reset,*=stall"),
])
def test_a_plan_prints_as_the_spec_it_parses_from(spec: str, canonical: str) -> None:
    plan = FaultPlan.parse(spec)
    assert str(plan) == canonical and FaultPlan.parse(str(plan)) == plan


def test_the_default_covers_what_no_rule_names() -> None:
    plan = FaultPlan.parse("*=status:503,1=pass")
    assert [str(plan.action_for(index)) for index in range(3)] == ["status:503", "pass", "status:503"]
    assert str(FaultPlan().action_for(10**6)) == "pass"


@pytest.mark.parametrize(("spec", "named"), [
    ("0=explode", "'explode'"),
    ("0", "'0'"),
    ("x=reset", "'x'"),
    ("-1=reset", "'-1'"),
    ("0=status:200", "'status:200'"),
    ("0=status:42", "'status:42'"),
    ("0=status:429:soon", "'status:429:soon'"),
    ("*=reset,*=pass", "'*=pass'"),
    ("5-3=reset", "5-3=reset"),
    ("0-4=reset,3=stall", "0-4=reset and 3=stall"),
    ("0=reset,,1=stall", "''"),
])
def test_a_bad_spec_names_its_bad_part(spec: str, named: str) -> None:
    with pytest.raises(ValueError, match=named.replace("*", r"\*")):
        FaultPlan.parse(spec)
