"""BFCL tool-call parity: accuracy of a served model against its reference cell, free and grammar-constrained.

Stages, one module each::

    bfcl_data.load_items         BFCL's single-turn items + ground truth from the bfcl-eval wheel, seeded sample
    decoding.DECODINGS           free | required | json_schema: request fields and decoders
    chat_stream.stream_chat      one streamed chat completion: assembled tool calls, TTFT, TPOT, named failures
    scoring.check / aggregate    BFCL's AST checker and leaderboard aggregation
    bfcl_run.run_bfcl            items × one server × one decoding -> ParityRun (run_result)
    comparison.compare           reference vs candidate run -> ParityComparison (Δ, flips, McNemar, bootstrap, gate)
    cell_parity.cell_parity      per-decoding comparisons -> the cell's parity.json
    multi_turn_data / _run       BFCL multi-turn entries driven turn by turn, executed and checked in a worker
                                 process (multi_turn_worker), recorded as a MultiTurnRun (multi_turn_result)
    stage.ParityStage            the pipeline's one entry: what a server owes, its runs on the live server, the verdicts

BFCL itself (the wheel's loaders, checker and tool conversion) is reached through ``harness.bfcl``.

Typical use of the parts (the pipeline reaches them through ``ParityStage``)::

    items = load_items(spec.categories, limit=spec.limit, seed=0)
    run = await run_bfcl(srv.base_url, model, items, RunSettings(decoding="free", concurrency=8))
    write_run(run, cell_dir / "parity-free.json")
    verdict = cell_parity({"free": compare(read_run(ref_dir / "parity-free.json"), run, ParityRule(max_drop_pp=1.0))})
    write_cell_parity(verdict, cell_dir / "parity.json")
"""

from harness.bfcl.package import BFCL_VERSION, BfclUnavailable
from harness.parity.bfcl_data import AST_CATEGORIES, CATEGORIES, IRRELEVANCE_CATEGORIES, BfclItem, load_items
from harness.parity.bfcl_run import run_bfcl
from harness.parity.cell_parity import CellParity, cell_parity, find_cell_parity, read_cell_parity, write_cell_parity
from harness.parity.comparison import GATE_RULE, DecodingCost, ParityComparison, ParityRule, compare, decoding_cost
from harness.parity.decoding import DECODINGS, get_decoding
from harness.parity.multi_turn_data import MULTI_TURN_CATEGORIES, MultiTurnItem, load_multi_turn_items
from harness.parity.multi_turn_result import MULTI_TURN, MultiTurnRun, as_parity_run, read_multi_turn_run
from harness.parity.multi_turn_run import run_multi_turn
from harness.parity.parity_runs import ParityStage, check_parity_suite
from harness.parity.run_result import CategoryScore, ItemRecord, ParityRun, RunSettings, read_run, write_run

__all__ = [
    "as_parity_run", "AST_CATEGORIES", "BFCL_VERSION", "BfclItem", "BfclUnavailable", "CATEGORIES", "CategoryScore",
    "cell_parity", "CellParity", "check_parity_suite", "compare", "decoding_cost", "DecodingCost", "DECODINGS",
    "find_cell_parity", "GATE_RULE", "get_decoding", "IRRELEVANCE_CATEGORIES", "ItemRecord", "load_items",
    "load_multi_turn_items", "MULTI_TURN", "MULTI_TURN_CATEGORIES", "MultiTurnItem", "MultiTurnRun",
    "ParityComparison", "ParityRule", "ParityRun", "ParityStage", "read_cell_parity", "read_multi_turn_run", "read_run",
    "run_bfcl", "run_multi_turn", "RunSettings", "write_cell_parity", "write_run",
]
