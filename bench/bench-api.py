#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""D-Bus API benchmark: how long thpd-ctl status takes, and how many GetAll calls thpd answers
per second, each beside the bare D-Bus round trip to thpd on the same bus as the floor.

This is a benchmark, not a test: it prints one table with the figures beside their targets and
exits 0 whatever they are; it exits 1 when the benchmark itself could not run to the end, or 77
("skipped") when this machine cannot run the stack (not root, no systemd).

How to run (as root):

    meson setup build && ninja -C build
    meson test --benchmark -C build --verbose api      # about 15 s
    PYTHONPATH=tests /usr/bin/python3 -B bench/bench-api.py --thpd build/src/daemon/thpd --ctl build/src/ctl/thpd-ctl \\
        --client build/bench/bench-api-client

The set-up
    A private systemd --user manager with its own session bus (thpdtest.Stack, tests/thpdtest/),
    thpd --user at its default log level on a scratch sysfs tree, one policy with Enabled=never,
    Defrag=never and a 16-page hugetlb pool whose unit runs, so that every property has
    something in it (the status output has 20 lines).

1. thpd-ctl status, wall time (--runs, default 100, after 10 unmeasured runs; the commands below
   take turns, run by run)
    fork+exec of thpd-ctl --user status with stdout to a pipe, connecting, Hello, GetUnitUsage
    and GetAll, formatting, exit, as a shell would see it. Median and p90 (nearest rank). Target: median
    under 5 ms. Floor: the same measurement for bench-api-client with COUNT 0, a process that
    links the same libsystemd, connects and sends one Ping to thpd. Target: at most 1.2 times
    the floor (issue 24). Where the rest goes, measured the same way: thpd-ctl --version (the
    process alone, no bus) and thpd-ctl show (the connection and GetAll, without the
    GetUnitUsage that status adds, and what thpd-ctl reads itself for a unit thpd cannot:
    here, with thpd on a scratch /proc, every unit).

2. GetAll throughput (--calls, default 10,000, from --clients, default 8)
    Each client is a bench-api-client process with its own connection; all connect first, then
    start together, each making calls/clients GetAll calls back to back. Throughput is the total
    number of calls over the time from the start signal until the last client finished. Target:
    over 5,000 calls/s. Floor: the same with Peer.Ping, which sd-bus answers inside thpd without
    thpd's code: what the bus and the connection cost, so the difference is thpd's own work.
    The median round trip per call of both is listed too.
"""

import argparse
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True

import thpdtest  # noqa: E402

SKIP = 77
UNIT = 'thpd-bench-api.service'
POLICY = f"""\
[Policy]
Description=thpd API benchmark
Units={UNIT}
[TransparentHugePages]
Enabled=never
Defrag=never
[HugeTLB]
Pages=16
"""
STATUS_TARGET_MS = 5.0
STATUS_TARGET_RATIO = 1.2
GETALL_TARGET_PER_SEC = 5000
WARMUP_RUNS = 10


def parse_args():
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description='thpd D-Bus API benchmark')
    parser.add_argument('--thpd', required=True, help='the thpd executable')
    parser.add_argument('--ctl', required=True, help='the thpd-ctl executable')
    parser.add_argument('--client', default=str(here.parent / 'build' / 'bench' / 'bench-api-client'),
                        help='the bench-api-client executable')
    parser.add_argument('--runs', type=int, default=100, help='thpd-ctl status runs (default 100)')
    parser.add_argument('--calls', type=int, default=10000, help='GetAll calls in all (default 10000)')
    parser.add_argument('--clients', type=int, default=8, help='concurrent clients (default 8)')
    return parser.parse_args()


def nearest_rank(values, fraction):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def wall_times(argvs, env, runs):
    """Seconds per run of each argv (stdout to a pipe, as a script would read it), one list per
    argv; asserts exit 0. The commands take turns, so that the load of a busy machine, which
    changes over seconds, weighs on all of them alike and their ratios hold."""
    times = [[] for _ in argvs]
    for i in range(WARMUP_RUNS + runs):
        for argv, samples in zip(argvs, times):
            start = time.perf_counter()
            proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
            elapsed = time.perf_counter() - start
            if proc.returncode != 0:
                raise RuntimeError(f'{" ".join(argv)} exited with {proc.returncode}: {proc.stderr.decode()}')
            if i >= WARMUP_RUNS:
                samples.append(elapsed)
    return times


def concurrent_calls(client, address, mode, calls, clients):
    """Runs clients bench-api-client processes together; returns (calls/s, round trips in s)."""
    per_client = [calls // clients + (1 if i < calls % clients else 0) for i in range(clients)]
    procs = [subprocess.Popen([client, address, mode, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n in per_client]
    try:
        for proc in procs:
            line = proc.stdout.readline()
            if line != 'ready\n':
                raise RuntimeError(f'bench-api-client did not start: {line}{proc.stderr.read()}')
        start = time.perf_counter()
        for proc in procs:
            proc.stdin.write('go\n')
            proc.stdin.flush()
        outputs = [proc.communicate() for proc in procs]
        elapsed = time.perf_counter() - start
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    samples = []
    for proc, (out, err) in zip(procs, outputs):
        if proc.returncode != 0:
            raise RuntimeError(f'bench-api-client failed: {err}')
        samples += [int(v) / 1e9 for v in out.split()]
    if len(samples) != calls:
        raise RuntimeError(f'{len(samples)} round trips measured, {calls} expected')
    return calls / elapsed, samples


def ms(seconds):
    return f'{seconds * 1000:.2f} ms'


def us(seconds):
    return f'{seconds * 1e6:.0f} µs'


def print_table(args, results):
    rows = [('', 'measured', 'target', 'floor (bare D-Bus round trip to thpd)')]
    status, floor = results['status'], results['status_floor']
    rows.append(('thpd-ctl status, wall time, median', ms(statistics.median(status)), f'< {STATUS_TARGET_MS:g} ms',
                 f'{ms(statistics.median(floor))} (a process that connects and pings)'))
    rows.append(('thpd-ctl status, wall time, p90', ms(nearest_rank(status, 0.9)), '',
                 ms(nearest_rank(floor, 0.9))))
    ratio = statistics.median(status) / statistics.median(floor)
    rows.append(('thpd-ctl status / floor, medians', f'{ratio:.2f}x', f'<= {STATUS_TARGET_RATIO:g}x', ''))
    rows.append(('thpd-ctl status, wall time, max', ms(max(status)), '', ms(max(floor))))
    rows.append(('thpd-ctl --version, wall time, median', ms(statistics.median(results['version'])), '',
                 '(the process alone)'))
    rows.append(('thpd-ctl show, wall time, median', ms(statistics.median(results['show'])), '',
                 '(connect and GetAll, no GetUnitUsage)'))
    rate, trips = results['getall']
    ping_rate, ping_trips = results['ping']
    rows.append((f'GetAll, {args.clients} clients, calls/s', f'{rate:,.0f}/s', f'> {GETALL_TARGET_PER_SEC:,}/s',
                 f'{ping_rate:,.0f}/s (Peer.Ping, same clients)'))
    rows.append(('GetAll round trip, median', us(statistics.median(trips)), '', us(statistics.median(ping_trips))))
    rows.append(('GetAll round trip, p99', us(nearest_rank(trips, 0.99)), '', us(nearest_rank(ping_trips, 0.99))))

    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    print(f'\nthpd D-Bus API benchmark — {platform.node()}, {platform.release()}, {os.cpu_count()} CPUs')
    print(f'{args.runs} status runs (after {WARMUP_RUNS} warm-up runs); {args.calls:,} calls from {args.clients} '
          f'concurrent clients\n')
    for i, row in enumerate(rows):
        print('  '.join(cell.ljust(widths[j]) for j, cell in enumerate(row)).rstrip())
        if i == 0:
            print('  '.join('-' * w for w in widths))
    verdicts = [
        ('status median under target', statistics.median(status) * 1000 < STATUS_TARGET_MS),
        ('status within target of the floor', ratio <= STATUS_TARGET_RATIO),
        ('GetAll rate over target', rate > GETALL_TARGET_PER_SEC),
    ]
    print('\n' + '; '.join(f'{name}: {"yes" if ok else "NO"}' for name, ok in verdicts))


def run(args):
    reason = thpdtest.stack_unavailable_reason()
    if reason:
        print(f'bench-api: skipped: {reason}', file=sys.stderr)
        return SKIP
    for path in (args.thpd, args.ctl, args.client):
        if not os.access(path, os.X_OK):
            print(f'bench-api: {path} is not an executable', file=sys.stderr)
            return 1

    tmp = Path(tempfile.mkdtemp(prefix='thpd-bench-api-'))
    results = {}
    with thpdtest.Stack() as stack:
        kernel = thpdtest.ScratchKernel(tmp / 'kernel')
        policy_dir = tmp / 'policy.d'
        policy_dir.mkdir(mode=0o755)
        (policy_dir / 'bench.conf').write_text(POLICY)
        (tmp / 'thpd.conf').write_text('[Daemon]\n')
        thpd = thpdtest.Thpd([args.thpd, '--user', f'--sysfs={kernel.sysfs}', f'--procfs={kernel.procfs}',
                              f'--runtime-dir={tmp / "run"}', f'--policy-dir={policy_dir}', f'--config={tmp / "thpd.conf"}'],
                             stack.env, tmp / 'thpd.log', tmp / 'notify')
        try:
            thpd.wait_ready()
            stack.start_unit(UNIT)
            thpdtest.wait_until(lambda: kernel.read_knob('enabled') == 'never', message='the policy applied')
            status_text = stack.run(args.ctl, '--user', 'status').stdout
            print(status_text, end='')

            (results['status'], results['status_floor'], results['version'],
             results['show']) = wall_times([[args.ctl, '--user', 'status'],
                                            [args.client, stack.bus_address, 'ping', '0'],
                                            [args.ctl, '--version'],
                                            [args.ctl, '--user', 'show']], stack.env, args.runs)
            results['getall'] = concurrent_calls(args.client, stack.bus_address, 'getall', args.calls, args.clients)
            results['ping'] = concurrent_calls(args.client, stack.bus_address, 'ping', args.calls, args.clients)
            if not thpd.running:
                raise RuntimeError(f'thpd exited during the benchmark:\n{thpd.log()}')
        finally:
            stack.stop_all_units()
            thpd.close()
    shutil.rmtree(tmp, ignore_errors=True)
    print_table(args, results)
    return 0


def main():
    try:
        return run(parse_args())
    except (RuntimeError, AssertionError, subprocess.SubprocessError) as e:
        print(f'bench-api: {e}', file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
