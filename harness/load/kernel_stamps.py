"""Arrival times from the kernel: a socket asks for ``SO_TIMESTAMPNS``, and each read's stamp is moved onto the
``time.perf_counter()`` clock the records use.

Every read then carries the time its last packet reached the socket (events that share a read share that stamp). A
busy client (64 streams whose chunks land in the same millisecond, a garbage collection, a loaded machine) reads
late but still stamps each chunk when it arrived, which is what TTFT and ITL mean. Where the kernel gives no
timestamp (another platform, or a socket that refuses the option) the read is stamped on receipt.
"""

from __future__ import annotations

import socket
import struct
import sys
import time

# Python's socket module does not export it; 35 is SO_TIMESTAMPNS (and SCM_TIMESTAMPNS) in Linux's generic and
# x86 headers. Elsewhere, or where setsockopt refuses it, reads are stamped on receipt.
_SO_TIMESTAMPNS: int | None = getattr(socket, "SO_TIMESTAMPNS", 35 if sys.platform == "linux" else None)
_SCM_TIMESTAMPNS: int | None = getattr(socket, "SCM_TIMESTAMPNS", _SO_TIMESTAMPNS)
_TIMESPEC = struct.Struct("@qq")
ANCILLARY_SIZE = socket.CMSG_SPACE(_TIMESPEC.size)
"""Room for one read's timestamp in ``recvmsg``'s ancillary data."""


def enable_kernel_stamps(sock: socket.socket) -> bool:
    """Ask the kernel to stamp every read of ``sock``; whether it will (False where unsupported or refused)."""
    if _SO_TIMESTAMPNS is None:
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


def kernel_arrival(ancillary: list[tuple[int, int, bytes]], now: float) -> float:
    """The arrival time a read's ``SCM_TIMESTAMPNS`` gives, on the perf_counter clock; ``now`` when absent.

    The kernel stamps on CLOCK_REALTIME; it is moved onto perf_counter's clock with the offset between the two
    taken at this read, so a clock step between reads cannot bend an interval. A stamp from the future (not
    possible unless the offset is off) is clamped to ``now``."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _SCM_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            seconds: int
            nanos: int
            seconds, nanos = _TIMESPEC.unpack_from(data)
            return min(now, seconds + nanos * 1e-9 - (time.time() - now))
    return now
