# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the benchmarks share: reading a process's CPU time and context switches, inotify on
knob files, nearest-rank percentiles, and the plain-text table they print."""

import ctypes
import ctypes.util
import os
import struct
from pathlib import Path

IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_CLOSE_NOWRITE = 0x00000010
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
INOTIFY_EVENT = struct.Struct('iIII')


class Inotify:
    """A non-blocking inotify descriptor; watches are named so events say what they concern."""

    def __init__(self):
        self._libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)
        self._libc.inotify_init1.argtypes = [ctypes.c_int]
        self._libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            e = ctypes.get_errno()
            raise OSError(e, f'inotify_init1: {os.strerror(e)}')
        self._names = {}

    def add(self, path, name, mask):
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            e = ctypes.get_errno()
            raise OSError(e, f'inotify_add_watch {path}: {os.strerror(e)}')
        self._names[wd] = name

    def read(self):
        """[(name, mask)] of the events queued now, in kernel order."""
        events = []
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return events
            offset = 0
            while offset < len(data):
                wd, mask, _, length = INOTIFY_EVENT.unpack_from(data, offset)
                offset += INOTIFY_EVENT.size + length
                if wd in self._names:
                    events.append((self._names[wd], mask))

    def close(self):
        os.close(self.fd)


def cpu_ticks(pid):
    """utime + stime of every thread of pid, in CLK_TCK ticks (fields 14 and 15 of stat)."""
    stat = Path(f'/proc/{pid}/stat').read_text()
    fields = stat[stat.rindex(')') + 2:].split()
    return int(fields[11]) + int(fields[12])


def context_switches(pid):
    """{tid: voluntary + nonvoluntary context switches} for every thread of pid."""
    counts = {}
    for task in Path(f'/proc/{pid}/task').iterdir():
        try:
            lines = (task / 'status').read_text().splitlines()
        except FileNotFoundError:
            continue
        counts[int(task.name)] = sum(int(line.split()[1]) for line in lines
                                     if line.startswith(('voluntary_ctxt_switches:',
                                                         'nonvoluntary_ctxt_switches:')))
    return counts


def switches_between(before, after):
    """Switches in the interval; a thread that appeared counts from zero."""
    return sum(n - before.get(tid, 0) for tid, n in after.items())


def percentile(samples, p):
    """Nearest-rank percentile, p in 0..100."""
    ordered = sorted(samples)
    return ordered[max(0, -(-len(ordered) * p // 100) - 1)]


def render(rows, right=()):
    """Rows as a table, the first row the header; the columns numbered in right are right-aligned."""
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append('  '.join(str(c).rjust(w) if i in right else str(c).ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths))).rstrip())
        if n == 0:
            lines.append('  '.join('-' * w for w in widths))
    return '\n'.join(lines)
