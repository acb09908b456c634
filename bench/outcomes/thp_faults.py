#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The workload of compaction.py, run as a systemd unit: a THP-hungry service that times every
2 MiB fault.

Every --interval it maps --chunk-mib of anonymous memory (2 MiB aligned), madvises it
MADV_HUGEPAGE and faults it in 2 MiB at a time with MADV_POPULATE_WRITE, timing each call: one
call is one huge page fault (or, when no huge page can be had, 512 small ones). It keeps the
chunks mapped (a freed chunk would hand its 2 MiB blocks to the next one). Before each chunk it
reads THP "defrag", so each fault is tagged with the setting it ran under; around each chunk it
reads /proc/vmstat, so each chunk carries the compaction stalls and THP fallbacks the machine
saw meanwhile. One JSON line per chunk goes to --out; a last line {"done": ...} ends the file.
It stops after --seconds, at --max-mib, or before MemAvailable falls below --reserve-mib, then
exits (freeing everything)."""

import argparse
import ctypes
import json
import mmap
import time
from pathlib import Path

MIB = 1 << 20
HUGE = 2 * MIB
MADV_POPULATE_WRITE = 23
DEFRAG = Path('/sys/kernel/mm/transparent_hugepage/defrag')
COUNTERS = ('compact_stall', 'compact_fail', 'compact_success', 'thp_fault_alloc', 'thp_fault_fallback',
            'allocstall_normal', 'allocstall_movable', 'pgsteal_direct')


def vmstat():
    values = dict(line.split() for line in Path('/proc/vmstat').read_text().splitlines())
    return {c: int(values.get(c, 0)) for c in COUNTERS}


def mem_available():
    for line in Path('/proc/meminfo').read_text().splitlines():
        if line.startswith('MemAvailable:'):
            return int(line.split()[1]) * 1024
    return 0


def defrag():
    text = DEFRAG.read_text()
    return text[text.index('[') + 1:text.index(']')]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--out', required=True)
    parser.add_argument('--chunk-mib', type=int, default=32)
    parser.add_argument('--interval', type=float, default=0.2)
    parser.add_argument('--seconds', type=float, default=15)
    parser.add_argument('--max-mib', type=int, default=3072)
    parser.add_argument('--reserve-mib', type=int, default=4096)
    args = parser.parse_args()

    chunks = []
    reason = 'time'
    start = time.monotonic()
    with open(args.out, 'w', buffering=1) as out:
        while time.monotonic() - start < args.seconds:
            if mem_available() - args.chunk_mib * MIB < args.reserve_mib * MIB:
                reason = 'reserve'
                break
            if (len(chunks) + 1) * args.chunk_mib > args.max_mib:
                reason = 'max'
                break
            began = time.monotonic()
            # One huge page more than needed, so a 2 MiB aligned run of chunk-mib fits.
            m = mmap.mmap(-1, args.chunk_mib * MIB + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            address = ctypes.addressof(ctypes.c_char.from_buffer(m))
            first = -address % HUGE
            m.madvise(mmap.MADV_HUGEPAGE)
            mode = defrag()
            before = vmstat()
            faults = []
            for offset in range(first, first + args.chunk_mib * MIB, HUGE):
                t0 = time.perf_counter_ns()
                m.madvise(MADV_POPULATE_WRITE, offset, HUGE)
                faults.append((time.perf_counter_ns() - t0) // 1000)
            after = vmstat()
            chunks.append(m)
            out.write(json.dumps({'t': round(began - start, 3), 'defrag': mode, 'fault_us': faults,
                                  **{c: after[c] - before[c] for c in COUNTERS}}) + '\n')
            time.sleep(max(0.0, args.interval - (time.monotonic() - began)))
        out.write(json.dumps({'done': reason, 'chunks': len(chunks),
                              'seconds': round(time.monotonic() - start, 2)}) + '\n')


if __name__ == '__main__':
    main()
