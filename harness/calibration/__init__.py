"""How fast the machine is running: a fixed probe between rounds of launches (``probe``), stored with the run as
``calibration.json`` (``record``), so that a gate and a report can say "this machine ran at 0.71x of the baseline's
speed" and judge timing figures relative to it. The pipeline takes a run's probes through ``stage.RoundProbes``.
"""

from harness.calibration.calibration_file import Calibration, read_calibration, write_calibration
from harness.calibration.probe import ProbeResult, probe
from harness.calibration.round_probes import RoundProbes

__all__ = [
    "Calibration", "probe", "ProbeResult", "read_calibration", "RoundProbes", "write_calibration",
]
