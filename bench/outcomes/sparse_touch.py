#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The synthetic workload of bloat.py, run as a systemd unit: a service that maps a large
anonymous region and touches it sparsely (a hash table sized for growth, a sparse array, an
arena reserved up front).

It maps --mib of private anonymous memory (2 MiB aligned, no madvise: it takes whatever THP
"enabled" gives it) and writes one byte every --stride-kib, timing the loop. Then it writes one
JSON line to --out ({"touched": N, "touch_ms": ..., "enabled": ...}) and sleeps until it is
stopped, holding the memory, so that its RSS and AnonHugePages can be read from /proc."""

import argparse
import ctypes
import json
import mmap
import time
from pathlib import Path

MIB = 1 << 20
HUGE = 2 * MIB


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--out', required=True)
    parser.add_argument('--mib', type=int, default=4096)
    parser.add_argument('--stride-kib', type=int, default=2048)
    args = parser.parse_args()

    size = args.mib * MIB
    m = mmap.mmap(-1, size + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    first = -ctypes.addressof(ctypes.c_char.from_buffer(m)) % HUGE
    enabled = Path('/sys/kernel/mm/transparent_hugepage/enabled').read_text()
    stride = args.stride_kib * 1024
    began = time.perf_counter()
    touched = 0
    for offset in range(first, first + size, stride):
        m[offset] = 1
        touched += 1
    touch_ms = (time.perf_counter() - began) * 1000
    with open(args.out, 'w') as out:
        out.write(json.dumps({'touched': touched, 'touch_ms': round(touch_ms, 1), 'mib': args.mib,
                              'stride_kib': args.stride_kib,
                              'enabled': enabled[enabled.index('[') + 1:enabled.index(']')]}) + '\n')
    while True:
        time.sleep(3600)


if __name__ == '__main__':
    main()
