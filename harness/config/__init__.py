"""The matrix a user writes, as strict models validated once (``matrix.load_matrix``): the schema only.

Nothing here imports another stage; every other package may import this one. A typo or an impossible value is a
``ConfigError`` naming the file, the key and the fix (``errors``).
"""

from harness.config.executor import LocalExecutor, SlurmExecutor, executor_models, register_executor_model
from harness.config.gates import GateSpec
from harness.config.matrix import Matrix, Slo, load_matrix
from harness.config.workloads import RandomWorkload

__all__ = [
    "executor_models", "GateSpec", "load_matrix", "LocalExecutor", "Matrix", "RandomWorkload",
    "register_executor_model", "Slo", "SlurmExecutor",
]
