#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Records what the storm watcher samples, once a second, as a trace the classifier tests replay.

    record-storm-trace.py record --output FILE [--seconds N] [--note TEXT]... [-- COMMAND...]
    record-storm-trace.py trim IN --from SEC --to SEC [--note TEXT]... > OUT

record samples until --seconds have passed, or COMMAND (when given) exits, or SIGINT/SIGTERM;
COMMAND gets THPD_TRACE_START, the CLOCK_MONOTONIC time of t_ms 0, in its environment.
trim keeps the samples from --from to --to seconds (the header is kept, t_ms starts over at 0),
which is how the traces in tests/data/storm/ were cut to their interesting minutes.

The format (tests/unit/test-storm-classify.c reads it): lines starting with '#' are comments (this
header says how, where and when the trace was recorded); the first other line names the
columns; then one line per sample, space-separated unsigned integers:
  t_ms                       milliseconds since the first sample (CLOCK_MONOTONIC)
  compact_stall ... thp_collapse_alloc_failed
                             /proc/vmstat counters of the same name, as read (cumulative)
  allocstall                 the sum of /proc/vmstat allocstall_<zone>
  khugepaged_cpu_usec        utime + stime of khugepaged (/proc/PID/stat fields 14 and 15), in
                             microseconds, so in whole clock ticks (10 ms at USER_HZ=100)
  kcompactd_cpu_usec         the same, summed over every kcompactd<N>
  psi_memory_some_usec, psi_memory_full_usec, psi_cpu_some_usec
                             total= of /proc/pressure/memory and /proc/pressure/cpu
Counters are cumulative, as thpd reads them: the classifier takes the deltas itself. A kernel
thread counts only with PF_KTHREAD set, as in thpd (src/shared/procfs.c); the set is found once, at
the start (khugepaged restarting during a recording would need a new trace).

Reads /proc only, so it needs no privileges; it changes nothing.
"""

import argparse
import datetime
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

VMSTAT_COLUMNS = ('compact_stall', 'compact_fail', 'compact_success', 'compact_migrate_scanned',
                  'compact_free_scanned', 'compact_daemon_wake', 'thp_fault_alloc', 'thp_fault_fallback',
                  'thp_collapse_alloc', 'thp_collapse_alloc_failed')
COLUMNS = ('t_ms', *VMSTAT_COLUMNS, 'allocstall', 'khugepaged_cpu_usec', 'kcompactd_cpu_usec',
           'psi_memory_some_usec', 'psi_memory_full_usec', 'psi_cpu_some_usec')
PF_KTHREAD = 0x00200000
CLK_TCK = os.sysconf('SC_CLK_TCK')
THP = Path('/sys/kernel/mm/transparent_hugepage')


def read_stat(pid):
    """(comm, flags, utime + stime in ticks) of /proc/PID/stat, or None once it is gone."""
    try:
        text = Path(f'/proc/{pid}/stat').read_text()
    except OSError:
        return None
    comm = text[text.index('(') + 1:text.rindex(')')]
    fields = text[text.rindex(')') + 2:].split()
    # fields[0] is field 3 (state): flags is field 9, utime and stime fields 14 and 15.
    return comm, int(fields[6]), int(fields[11]) + int(fields[12])


def find_kthreads():
    khugepaged, kcompactd = [], []
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        stat = read_stat(entry.name)
        if stat is None or not stat[1] & PF_KTHREAD:
            continue
        if stat[0] == 'khugepaged':
            khugepaged.append(entry.name)
        elif re.fullmatch(r'kcompactd\d+', stat[0]):
            kcompactd.append(entry.name)
    return khugepaged, kcompactd


def cpu_usec(pids):
    ticks = 0
    for pid in pids:
        stat = read_stat(pid)
        if stat is not None:
            ticks += stat[2]
    return ticks * 1_000_000 // CLK_TCK


def psi_totals(resource):
    """{'some': usec, 'full': usec} of /proc/pressure/RESOURCE; 0 without PSI."""
    totals = {'some': 0, 'full': 0}
    try:
        for line in Path(f'/proc/pressure/{resource}').read_text().splitlines():
            kind, rest = line.split(' ', 1)
            totals[kind] = int(rest.rsplit('total=', 1)[1])
    except OSError:
        pass
    return totals


def sample(start, kthreads):
    vmstat = dict(line.split() for line in Path('/proc/vmstat').read_text().splitlines())
    memory, cpu = psi_totals('memory'), psi_totals('cpu')
    now = time.monotonic()
    return [round((now - start) * 1000), *(int(vmstat.get(c, 0)) for c in VMSTAT_COLUMNS),
            sum(int(v) for k, v in vmstat.items() if k.startswith('allocstall')),
            cpu_usec(kthreads[0]), cpu_usec(kthreads[1]), memory['some'], memory['full'], cpu['some']]


def knob(name):
    try:
        return (THP / name).read_text().strip()
    except OSError:
        return '?'


def machine():
    model = '?'
    for line in Path('/proc/cpuinfo').read_text().splitlines():
        if line.startswith('model name'):
            model = line.split(':', 1)[1].strip()
            break
    meminfo = dict(line.split(':', 1) for line in Path('/proc/meminfo').read_text().splitlines())
    total = int(meminfo['MemTotal'].split()[0]) / 1024 / 1024
    swap = int(meminfo['SwapTotal'].split()[0]) // 1024
    return f'{os.cpu_count()} CPUs ({model}), {total:.1f} GiB, swap {swap} MiB'


def record(args):
    out = open(args.output, 'w')
    command = shlex.join(args.command) if args.command else None
    header = [
        f'Recorded {datetime.datetime.now().astimezone().isoformat(timespec="seconds")} by '
        f'tools/record-storm-trace.py at 1 Hz',
        f'Machine: {machine()}; kernel {platform.release()}',
        f'THP at the start: enabled {knob("enabled")}, defrag {knob("defrag")}, '
        f'khugepaged/defrag {knob("khugepaged/defrag")}',
        *(f'Command: {command}' for _ in [command] if command),
        *args.note,
    ]
    out.write(''.join(f'# {line}\n' for line in header))
    out.write(' '.join(COLUMNS) + '\n')
    out.flush()

    stop = False

    def on_signal(signum, frame):
        nonlocal stop
        stop = True
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    kthreads = find_kthreads()
    start = time.monotonic()
    # The command can say when its phases began in the trace's own time (t_ms / 1000).
    child = subprocess.Popen(args.command, env=dict(os.environ, THPD_TRACE_START=repr(start))) \
        if args.command else None
    n = 0
    while not stop:
        out.write(' '.join(str(v) for v in sample(start, kthreads)) + '\n')
        out.flush()
        n += 1
        if (args.seconds is not None and n > args.seconds) or (child and child.poll() is not None):
            break
        # Fixed rate: the sample times do not drift with the time a sample takes.
        time.sleep(max(0.0, start + n - time.monotonic()))
    out.close()
    if child:
        if child.poll() is None:
            child.terminate()
        return child.wait()
    return 0


def trim(args):
    lines = Path(args.input).read_text().splitlines()
    comments = [l for l in lines if l.startswith('#')]
    rows = [l for l in lines if l and not l.startswith('#')]
    header, data = rows[0], [l.split() for l in rows[1:]]
    kept = [r for r in data if args.begin * 1000 <= int(r[0]) <= args.end * 1000]
    if len(kept) < 3:
        sys.exit(f'trim: only {len(kept)} samples between {args.begin} and {args.end} s')
    base = int(kept[0][0])
    out = comments + [f'# Trimmed to {args.begin:g}-{args.end:g} s of the recording (t_ms starts over at 0).']
    out += [f'# {note}' for note in args.note]
    out.append(header)
    out += [' '.join([str(int(r[0]) - base), *r[1:]]) for r in kept]
    sys.stdout.write('\n'.join(out) + '\n')
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='mode', required=True)
    r = sub.add_parser('record', help='sample once a second into --output')
    r.add_argument('--output', required=True)
    r.add_argument('--seconds', type=float, help='stop after this long (default: when COMMAND exits, or on SIGINT)')
    r.add_argument('--note', action='append', default=[], help='a header line saying what was run')
    r.add_argument('command', nargs='*', help='run this and stop when it exits')
    t = sub.add_parser('trim', help='keep the samples from --from to --to seconds')
    t.add_argument('input')
    t.add_argument('--from', dest='begin', type=float, required=True)
    t.add_argument('--to', dest='end', type=float, required=True)
    t.add_argument('--note', action='append', default=[])
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    return record(args) if args.mode == 'record' else trim(args)


if __name__ == '__main__':
    sys.exit(main())
