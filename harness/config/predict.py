"""The matrix's ``predict:`` section: the inputs a performance model must assume, stated where the user sees them.

Every value here is an assumption, printed beside each prediction that used it, never a measurement. Once a run has
measured a cell's speculative acceptance, the measured value replaces the assumed one for that cell's comparison.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class PredictSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    predictor: str | None = Field(None, description="force one predictor by name (aiconfigurator, cpu-step), or "
                                  "none to predict nothing (cpu-step probes the machine for 20-30 s first); "
                                  "default: the registered predictor that applies to the cell's hardware")
    accepted_tokens: dict[int, float] = Field(
        default_factory=dict,
        description="MTP/EAGLE draft length k -> mean ACCEPTED draft tokens per decode step (0..k), an assumption "
                    "until measured; unset k's use the predictor's stated default")
    accepted_by_method: dict[str, dict[int, float]] = Field(
        default_factory=dict,
        description="the same per speculation method (mtp, eagle3, ngram, ...), where methods differ at one k; "
                    "it wins over accepted_tokens")
    moe_routing: str | None = Field(None, description="MoE routing distribution the predictor assumes "
                                    "(AIConfigurator workload distribution, e.g. 'power_law_1.01'); default: its own")
    routing_from: str | None = Field(
        None, description="a run's results directory (reports/<matrix>) whose cells counted expert load "
        "(telemetry.expert_load): its routing, fitted to AIConfigurator's power law (alpha by maximum likelihood, "
        "with a bootstrap interval), picks the nearest distribution AIConfigurator holds tables for, in place of "
        "its default; the plan states the fit. Point it at a run of the model and traffic predicted")

    @model_validator(mode="after")
    def _one_routing(self) -> PredictSpec:
        if self.moe_routing is not None and self.routing_from is not None:
            raise ValueError("moe_routing and routing_from both name the MoE routing: keep one")
        return self

    @model_validator(mode="after")
    def _accepted_within_k(self) -> PredictSpec:
        tables = [("accepted_tokens", self.accepted_tokens)]
        tables += [(f"accepted_by_method.{method}", table) for method, table in self.accepted_by_method.items()]
        for where, table in tables:
            for k, accepted in table.items():
                if k < 1:
                    raise ValueError(f"{where}: draft length {k} must be at least 1")
                if not 0 <= accepted <= k:
                    raise ValueError(f"{where}.{k}: {accepted:g} accepted tokens per step is outside [0, {k}]; at "
                                     f"most every one of the {k} drafted tokens is accepted")
        return self

    def accepted(self, method: str, k: int) -> tuple[float, str] | None:
        """The stated accepted draft tokens per step for ``method`` at ``k``, and where the matrix states it."""
        if k in self.accepted_by_method.get(method, {}):
            return self.accepted_by_method[method][k], f"predict.accepted_by_method.{method}"
        if k in self.accepted_tokens:
            return self.accepted_tokens[k], "predict.accepted_tokens"
        return None
