"""Machine identities for the tests that depend on which machine runs them (baselines per machine, CPU findings).

A test never names a real vendor's CPU as "another machine": a CI runner can be that machine. It asks for the
``host`` fixture instead (tests/conftest.py), which injects each identity below in turn through
``HARNESS_CPUINFO`` (``harness.host``), and builds the other machine with ``another_machine(host)``, which differs
from whichever identity is in force. The contract test keeps CPU vendor names out of every other test module.
"""

from __future__ import annotations

from harness.host import HardwareInfo

# /proc/cpuinfo as two 2-core cloud VMs show it (trimmed to the fields the harness reads): the runners this project
# has met. The Intel one has AMX, the AMD one AVX-512 without it.
CPUINFO: dict[str, str] = {
    "amd-epyc": "".join(f"processor\t: {n}\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B14\n"
                        "flags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n\n" for n in range(2)),
    "intel-xeon": "".join(f"processor\t: {n}\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n"
                          "flags\t\t: fpu sse2 avx2 avx512f amx_bf16 amx_tile amx_int8\n\n" for n in range(2)),
}
NAMES = {"amd-epyc": "AMD EPYC 9B14", "intel-xeon": "Intel(R) Xeon(R) Processor"}
ISAS = {"amd-epyc": "AVX-512", "intel-xeon": "AMX"}


def another_machine(host: HardwareInfo) -> HardwareInfo:
    """A machine that is not ``host``, whatever ``host`` is: same kind and size, another model name."""
    return host.model_copy(update={"name": f"{host.name} (another machine)"})
