"""bench/procs.py's file I/O count: what a process reads from and writes to files, its sockets
left out (bench/soak.py reports it per round trip to tell the storage's reads from the load's)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from bench.procs import tree_file_io, tree_pids

SIZE = 256 * 1024


def test_file_reads_and_writes_are_counted(tmp_path: Path) -> None:
    read0, written0 = tree_file_io(os.getpid())
    fd = os.open(tmp_path / "data", os.O_RDWR | os.O_CREAT)
    try:
        assert os.write(fd, b"x" * SIZE) == SIZE
        assert len(os.pread(fd, SIZE, 0)) == SIZE
    finally:
        os.close(fd)
    read1, written1 = tree_file_io(os.getpid())
    assert read1 - read0 >= SIZE
    assert written1 - written0 >= SIZE


def test_socket_traffic_is_not_counted() -> None:
    left, right = socket.socketpair()
    with left, right:
        read0, written0 = tree_file_io(os.getpid())
        chunk = 16 * 1024  # below the pair's buffer: one thread both sends and receives
        for _ in range(8 * SIZE // chunk):  # 8 x SIZE, well above any file I/O meanwhile
            left.sendall(b"y" * chunk)
            received = 0
            while received < chunk:
                received += len(right.recv(chunk))
        read1, written1 = tree_file_io(os.getpid())
    assert read1 - read0 < SIZE
    assert written1 - written0 < SIZE


def test_a_child_process_counts_towards_its_parent(tmp_path: Path) -> None:
    target = tmp_path / "child"
    code = (f"import os, time; fd = os.open({str(target)!r}, os.O_WRONLY | os.O_CREAT);"
            f" os.write(fd, b'z' * {SIZE}); os.close(fd); print('done', flush=True);"
            " time.sleep(30)")
    wrapper = subprocess.Popen([sys.executable, "-c",
                                "import subprocess, sys; subprocess.run([sys.executable, '-c', "
                                f"{code!r}])"], stdout=subprocess.PIPE, text=True)
    try:
        assert wrapper.stdout is not None
        assert wrapper.stdout.readline().strip() == "done"  # written before it said so
        assert tree_file_io(wrapper.pid)[1] >= SIZE
    finally:
        for pid in reversed(tree_pids(wrapper.pid)):  # the child first: it would outlive us
            os.kill(pid, 9)
        wrapper.wait()
