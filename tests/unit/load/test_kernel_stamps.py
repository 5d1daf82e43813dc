"""Arrival times from the kernel: a read's timestamp moved onto the perf_counter clock, and a socket that asks for
them or cannot."""

from __future__ import annotations

import socket
import struct
import sys
import time

import pytest

from harness.load.kernel_stamps import enable_kernel_stamps, kernel_arrival


def test_kernel_arrival_reads_the_timestamp_and_falls_back_to_now() -> None:
    now = time.perf_counter()
    wall = time.time() - 0.25
    stamp = struct.pack("@qq", int(wall), int((wall % 1) * 1e9))
    kind = getattr(socket, "SCM_TIMESTAMPNS", 35)
    assert kernel_arrival([(socket.SOL_SOCKET, kind, stamp)], now) == pytest.approx(now - 0.25, abs=0.01)
    assert kernel_arrival([], now) == now
    future = time.time() + 5
    ahead = struct.pack("@qq", int(future), 0)
    assert kernel_arrival([(socket.SOL_SOCKET, kind, ahead)], now) == now


def test_a_short_or_foreign_control_message_is_not_a_stamp() -> None:
    now = time.perf_counter()
    kind = getattr(socket, "SCM_TIMESTAMPNS", 35)
    stamp = struct.pack("@qq", int(time.time()) - 10, 0)
    assert kernel_arrival([(socket.SOL_SOCKET, kind, stamp[:8])], now) == now
    assert kernel_arrival([(socket.IPPROTO_TCP, kind, stamp)], now) == now


@pytest.mark.skipif(sys.platform != "linux", reason="SO_TIMESTAMPNS is Linux's")
def test_a_tcp_socket_asks_the_kernel_for_stamps_and_a_closed_one_cannot() -> None:
    option = getattr(socket, "SO_TIMESTAMPNS", 35)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        assert sock.getsockopt(socket.SOL_SOCKET, option) == 0
        assert enable_kernel_stamps(sock)
        assert sock.getsockopt(socket.SOL_SOCKET, option) == 1
    closed = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    closed.close()
    assert not enable_kernel_stamps(closed)  # refused: its reads are stamped on receipt
