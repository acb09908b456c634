#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Provokes direct compaction on this machine, for the real-kernel storm test and by hand.

Two commands, each a process of its own that the caller kills by PID when done (killing frees
everything it holds; it also stops by itself at its limits):

fragment
    Leaves free memory in 4 KiB holes, the recipe of shared/reference/outcomes-measured.md §2:
      1. drop the page cache (with --drop-caches; root);
      2. map anonymous memory of MemAvailable minus --margin-mib, madvise(MADV_NOHUGEPAGE), and
         touch every 4 KiB page;
      3. read --cache-file (created sparse at --cache-mib if missing) so that page cache fills
         what is left;
      4. madvise(MADV_DONTNEED) every other 4 KiB page of the anonymous mapping.
    Then prints one line "fragmented" with the figures as JSON and holds the memory until it
    is killed, or for --hold-seconds.

fault
    Faults transparent huge pages the way a THP-hungry service would: every --interval it maps
    --chunk-mib with madvise(MADV_HUGEPAGE) and touches every 4 KiB of it, and keeps it mapped
    (a freed chunk would hand its 2 MiB blocks straight to the next one, and nothing would need
    compacting). It stops after --seconds, or before MemAvailable would fall below
    --reserve-mib, or at --max-mib in all; it prints one JSON line per second (chunks, MiB,
    AnonHugePages) and a last line "done", then holds its memory until killed (or exits with
    --exit-when-done).

Whether faults then stall in direct compaction depends on defrag (always or madvise do, defer
and never do not) and on the kernel; read compact_stall in /proc/vmstat to know.

No swap is assumed: the margin and the reserve keep at least that much memory available for
everyone else, and page cache is the only memory these commands make the kernel reclaim.
"""

import argparse
import ctypes
import json
import mmap
import os
import sys
import time
from pathlib import Path

PAGE = 4096
MIB = 1024 * 1024
HUGE = 2 * MIB
MLOCK_ONFAULT = 1
MADV_POPULATE_WRITE = 23


def meminfo():
    """/proc/meminfo in kB."""
    values = {}
    for line in Path('/proc/meminfo').read_text().splitlines():
        name, rest = line.split(':', 1)
        values[name] = int(rest.split()[0])
    return values


def free_in_huge_blocks_mib():
    """Free memory in blocks of 2 MiB or more (order >= 9 in /proc/buddyinfo)."""
    total = 0
    for line in Path('/proc/buddyinfo').read_text().splitlines():
        counts = [int(c) for c in line.split()[4:]]
        total += sum(n * (PAGE << order) for order, n in enumerate(counts) if order >= 9)
    return total // MIB


def report(event, **fields):
    print(json.dumps(dict(event=event, time=time.monotonic(), **fields)), flush=True)


def hold(seconds):
    deadline = None if seconds is None else time.monotonic() + seconds
    while deadline is None or time.monotonic() < deadline:
        time.sleep(1 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic())))


def fragment(args):
    phases = {}
    began = time.monotonic()
    if args.drop_caches:
        os.sync()
        Path('/proc/sys/vm/drop_caches').write_text('3\n')

    available = meminfo()['MemAvailable'] * 1024
    size = (available - args.margin_mib * MIB) // HUGE * HUGE
    if size <= 0:
        sys.exit(f'thp_fragment: only {available // MIB} MiB available, less than the margin')
    anon = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    anon.madvise(mmap.MADV_NOHUGEPAGE)
    try:
        # Faults every page in the kernel, much faster than touching them from here (5.14+).
        anon.madvise(MADV_POPULATE_WRITE)
    except OSError:
        for offset in range(0, size, PAGE):
            anon[offset] = 1
    phases['fill_seconds'] = round(time.monotonic() - began, 1)

    began = time.monotonic()
    cache = Path(args.cache_file)
    if not cache.exists() or cache.stat().st_size < args.cache_mib * MIB:
        with open(cache, 'wb') as f:
            f.truncate(args.cache_mib * MIB)
    with open(cache, 'rb', buffering=0) as f:
        buf = bytearray(4 * MIB)
        while f.readinto(buf):
            pass
    phases['cache_seconds'] = round(time.monotonic() - began, 1)

    began = time.monotonic()
    for offset in range(0, size, 2 * PAGE):
        anon.madvise(mmap.MADV_DONTNEED, offset, PAGE)
    phases['punch_seconds'] = round(time.monotonic() - began, 1)

    if args.lock:
        # MLOCK_ONFAULT: lock the pages that are there without faulting the holes back in.
        libc = ctypes.CDLL(None, use_errno=True)
        address = ctypes.addressof(ctypes.c_char.from_buffer(anon))
        if libc.mlock2(ctypes.c_void_p(address), ctypes.c_size_t(size), MLOCK_ONFAULT) != 0:
            sys.exit(f'thp_fragment: mlock2: {os.strerror(ctypes.get_errno())}')

    info = meminfo()
    report('fragmented', anon_mib=size // MIB, free_mib=info['MemFree'] // 1024,
           available_mib=info['MemAvailable'] // 1024, cached_mib=info['Cached'] // 1024,
           free_in_2m_blocks_mib=free_in_huge_blocks_mib(), **phases)
    hold(args.hold_seconds)


def fault(args):
    chunk = args.chunk_mib * MIB
    chunks = []
    start = time.monotonic()
    next_report = start + 1
    reason = 'time'
    while time.monotonic() - start < args.seconds:
        if meminfo()['MemAvailable'] * 1024 - chunk < args.reserve_mib * MIB:
            reason = 'reserve'
            break
        if (len(chunks) + 1) * chunk > args.max_mib * MIB:
            reason = 'max'
            break
        m = mmap.mmap(-1, chunk, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        m.madvise(mmap.MADV_HUGEPAGE)
        for offset in range(0, chunk, PAGE):
            m[offset] = 1
        chunks.append(m)
        now = time.monotonic()
        if now >= next_report:
            report('progress', chunks=len(chunks), mib=len(chunks) * args.chunk_mib,
                   anon_huge_mib=meminfo()['AnonHugePages'] // 1024)
            next_report = now + 1
        time.sleep(max(0.0, args.interval - (time.monotonic() - now)))
    report('done', reason=reason, chunks=len(chunks), mib=len(chunks) * args.chunk_mib,
           anon_huge_mib=meminfo()['AnonHugePages'] // 1024, seconds=time.monotonic() - start)
    if not args.exit_when_done:
        hold(None)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    f = sub.add_parser('fragment', help='leave free memory in 4 KiB holes and hold it so')
    f.add_argument('--margin-mib', type=int, default=6144, help='memory left available before the cache is read')
    f.add_argument('--cache-file', required=True, help='a file on a disk file system (not tmpfs)')
    f.add_argument('--cache-mib', type=int, default=8192)
    f.add_argument('--drop-caches', action='store_true')
    f.add_argument('--lock', action='store_true',
                   help='mlock what is left, so that compaction cannot move it '
                        '(with vm.compact_unevictable_allowed=0)')
    f.add_argument('--hold-seconds', type=float, default=None)
    t = sub.add_parser('fault', help='fault MADV_HUGEPAGE chunks at a steady pace')
    t.add_argument('--chunk-mib', type=int, default=32)
    t.add_argument('--interval', type=float, default=0.2)
    t.add_argument('--seconds', type=float, default=20)
    t.add_argument('--reserve-mib', type=int, default=4096, help='stop before MemAvailable falls below this')
    t.add_argument('--max-mib', type=int, default=4096)
    t.add_argument('--exit-when-done', action='store_true')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.command == 'fragment':
        fragment(args)
    else:
        fault(args)


if __name__ == '__main__':
    main()
