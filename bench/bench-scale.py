#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scale: what one unit start costs thpd as policies and running units grow (issue 26).

A benchmark, not a test: it prints one table and exits 0 when every row ran, whatever the
figures; 1 when a row could not run to the end; 77 ("skipped") where the stack cannot run.

    meson test --benchmark -C build --verbose scale
    PYTHONPATH=tests /usr/bin/python3 -B bench/bench-scale.py --thpd build/src/daemon/thpd --rows 100x200,1000x50

Each row (POLICIES x UNITS) gets a fresh private systemd --user manager and bus
(thpdtest.Stack, tests/thpdtest/) and thpd --user on a scratch sysfs tree at kernel defaults,
reading the real /proc as in production (--procfs=scratch: a scratch procfs instead).

Policies
    POLICIES drop-ins: most name three units each (scale-NNNN.service, scale-NNNN-1.service,
    scale-NNNN-2.service), one in ten a template (scale-tmpl-NNNN@.service) and one in fifty a
    glob (scale-glob-NNNN-*.service), as hosts with a postgresql@ instance per database or
    policies for container scopes have. Each asks
    for Defrag=madvise, the kernel default, so every one of them votes and becomes active
    without moving a knob: the cost measured is thpd's bookkeeping, not sysfs writes.

CPU per start
    UNITS transient units, each matching one of those policies (unit n matches policy n modulo
    POLICIES), are started one after another with systemd-run --user.
    thpd's CPU time (/proc/PID/schedstat, in nanoseconds) from before the first start to once
    it has settled after the last, divided by UNITS.

Start to knob written
    Then, with all of them running, a probe unit whose policy asks for Enabled=never is started
    and stopped PROBES times: the time from just before "systemctl --user start --no-block" to
    the scratch enabled file reading never (polled every 0.2 ms); its median and p99.

System calls per start
    Then strace -c follows thpd while --syscall-starts (default 50) more matching units start:
    the calls it counted, divided by those starts (--syscall-detail: by name). strace slows
    thpd, so this phase is kept out of the CPU figure.
RSS: thpd's VmRSS after the probes.

Instructions per start
    With --callgrind DIR, thpd runs under valgrind's callgrind with instrumentation off, turned
    on (callgrind_control) only from before the first start until thpd has settled after the
    last: the user-space instructions it ran for those starts, libraries included, divided by
    UNITS, and the profile in DIR for callgrind_annotate. A count, not a time: it holds still
    while other work shares the machine, where the CPU time swings. It still moves by some
    tens of thousands between runs: PropertiesChanged goes out at most every 100 ms, so how many
    starts share one depends on their pace. Under valgrind thpd runs many times slower, so the
    CPU and latency columns are not comparable with a plain run.

Runs
    With --runs N each row runs N times, each on a fresh stack, and the table gives the median
    CPU per start with the range of the runs: on a shared VM the same row swings by a fifth
    from one minute to the next. Latencies are over the probes of all runs; RSS is the largest.
"""

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import thpdtest
from benchlib import percentile

SKIP = 77
DEFAULT_ROWS = '100x200,1000x50,1000x200,3000x200'
PROBES = 50
PROBE = 'scale-probe.service'
SETTLE_SECONDS = 0.5
DEADLINE = 60.0


class ScaleError(Exception):
    """A row could not run to the end."""


def cpu_ns(pid):
    """CPU time the process has used so far, in nanoseconds (all threads: schedstat of the
    thread group leader counts only itself, so sum the tasks)."""
    total = 0
    for task in Path(f'/proc/{pid}/task').iterdir():
        total += int((task / 'schedstat').read_text().split()[0])
    return total


def rss_kb(pid):
    status = Path(f'/proc/{pid}/status').read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith('VmRSS:'))


def policy_units(i):
    """The Units= of policy i."""
    if i % 50 == 49:
        return f'scale-glob-{i:04d}-*.service'
    if i % 10 == 9:
        return f'scale-tmpl-{i:04d}@.service'
    return ' '.join(f'scale-{i:04d}{variant}.service' for variant in ('', '-1', '-2'))


def unit_of(i, k):
    """The k-th unit that policy i matches (k < 3 for the ones that name their units)."""
    if i % 50 == 49:
        return f'scale-glob-{i:04d}-{k}.service'
    if i % 10 == 9:
        return f'scale-tmpl-{i:04d}@{k}.service'
    return f'scale-{i:04d}{"-" + str(k) if k else ""}.service'


def write_policy(directory, name, units, body):
    path = directory / name
    path.write_text(f'[Policy]\nUnits={units}\n{body}')
    path.chmod(0o644)


def wait_settled(pid):
    """Until thpd's CPU time stops growing for SETTLE_SECONDS; returns that CPU time."""
    deadline = time.monotonic() + DEADLINE
    last = cpu_ns(pid)
    while time.monotonic() < deadline:
        time.sleep(SETTLE_SECONDS)
        now = cpu_ns(pid)
        if now == last:
            return now
        last = now
    raise ScaleError(f'thpd did not settle within {DEADLINE:g} s')


def callgrind_control(pid, *args):
    if subprocess.run(['callgrind_control', *args, str(pid)], stdout=subprocess.DEVNULL).returncode != 0:
        raise ScaleError(f'callgrind_control {" ".join(args)} failed')


def callgrind_instructions(path):
    """The instructions (Ir) of a callgrind dump: its "totals:" line."""
    for line in path.read_text().splitlines():
        if line.startswith('totals:'):
            return int(line.split()[1])
    raise ScaleError(f'no totals in {path}')


def wait_knob(kernel, value):
    deadline = time.monotonic() + DEADLINE
    while kernel.read_knob('enabled') != value:
        if time.monotonic() >= deadline:
            raise ScaleError(f'enabled never read {value} (reads {kernel.read_knob("enabled")})')
        time.sleep(0.0002)
    return time.monotonic()


def count_syscalls(args, stack, thpd, policies, units):
    """System calls per matching start: strace -c follows thpd (every thread) while
    --syscall-starts more units start, each matching a policy, one after another; thpd settles
    before strace stops. Returns (calls per start, {name: calls per start})."""
    out = Path(tempfile.mkdtemp(prefix='thpd-scale-strace-')) / 'summary'
    tracer = subprocess.Popen(['strace', '-f', '-c', '-qq', '-U', 'name,calls', '-o', str(out), '-p', str(thpd.pid)],
                              stderr=subprocess.DEVNULL)
    try:
        # strace has attached once thpd reports a tracer.
        deadline = time.monotonic() + DEADLINE
        while 'TracerPid:\t0' in Path(f'/proc/{thpd.pid}/status').read_text():
            if time.monotonic() >= deadline:
                raise ScaleError('strace did not attach')
            time.sleep(0.01)
        wait_settled(thpd.pid)
        for n in range(units, units + args.syscall_starts):
            stack.start_unit(unit_of(n % policies, n // policies))
        wait_settled(thpd.pid)
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait()
    calls = {}
    for line in out.read_text().splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit() and fields[0] != 'total':
            calls[fields[0]] = int(fields[1]) / args.syscall_starts
    subprocess.run(['rm', '-rf', str(out.parent)], check=False)
    return sum(calls.values()), calls


def run_row(args, policies, units):
    tmp = Path(tempfile.mkdtemp(prefix='thpd-scale-'))
    # thpd's records live in /run/thpd, a tmpfs, where a rewrite costs no disk flush: so here.
    runtime = Path(tempfile.mkdtemp(prefix='thpd-scale-run-', dir='/dev/shm'))
    stack = thpdtest.Stack()
    thpd = None
    try:
        stack.start()
        unit_dir = stack.dir / 'config' / 'systemd' / 'user'
        (unit_dir / PROBE).write_text('[Service]\nExecStart=/bin/sleep infinity\n')
        stack.run('systemctl', '--user', 'daemon-reload')

        kernel = thpdtest.ScratchKernel(tmp / 'kernel')
        policy_dir = tmp / 'policy.d'
        policy_dir.mkdir(mode=0o755)
        if units > 3 * policies:
            raise ScaleError('at most three running units per policy')
        for i in range(policies):
            write_policy(policy_dir, f'scale-{i:04d}.conf', policy_units(i), '[TransparentHugePages]\nDefrag=madvise\n')
        write_policy(policy_dir, 'scale-probe.conf', PROBE, '[TransparentHugePages]\nEnabled=never\n')
        config = tmp / 'thpd.conf'
        config.write_text('' if args.storm_watch else '[Storm]\nWatch=no\n')
        procfs = '/proc' if args.procfs == 'real' else kernel.procfs
        argv = [str(args.thpd), '--user', f'--sysfs={kernel.sysfs}', f'--procfs={procfs}',
                f'--runtime-dir={runtime}', f'--policy-dir={policy_dir}', f'--config={config}']
        if args.callgrind:
            argv = ['valgrind', '--tool=callgrind', '--instr-atstart=no',
                    f'--callgrind-out-file={args.callgrind.resolve()}/callgrind.out.%p'] + argv
        thpd = thpdtest.Thpd(argv, stack.env, tmp / 'thpd.log', tmp / 'notify')
        thpd.wait_ready(timeout=DEADLINE * (10 if args.callgrind else 1))
        baseline = kernel.read_knob('enabled')
        if baseline == 'never':
            raise ScaleError('the scratch kernel starts at enabled=never: the probe could not be seen')

        before = wait_settled(thpd.pid)
        if args.callgrind:
            callgrind_control(thpd.pid, '--instr=on')
        started = time.monotonic()
        for n in range(units):
            stack.start_unit(unit_of(n % policies, n // policies))
        wall = time.monotonic() - started
        after = wait_settled(thpd.pid)
        per_start_ms = (after - before) / units / 1e6
        instructions = None
        if args.callgrind:
            callgrind_control(thpd.pid, '--dump=starts')
            callgrind_control(thpd.pid, '--instr=off')
            dumps = sorted(args.callgrind.glob(f'callgrind.out.{thpd.pid}.*'), key=lambda p: p.stat().st_mtime)
            if not dumps:
                raise ScaleError(f'callgrind wrote no profile in {args.callgrind}')
            instructions = callgrind_instructions(dumps[-1]) / units

        syscalls = count_syscalls(args, stack, thpd, policies, units) if args.syscall_starts else None

        latencies = []
        for _ in range(args.probes):
            t0 = time.monotonic()
            stack.run('systemctl', '--user', 'start', '--no-block', PROBE)
            latencies.append((wait_knob(kernel, 'never') - t0) * 1000)
            stack.run('systemctl', '--user', 'stop', PROBE)
            wait_knob(kernel, baseline)
        rss = rss_kb(thpd.pid)
        return {
            'policies': policies, 'units': units, 'cpu_ms': per_start_ms, 'systemd_s': wall,
            'latencies': latencies, 'rss_kb': rss, 'syscalls': syscalls, 'instructions': instructions,
        }
    finally:
        if thpd is not None:
            if thpd.running:
                thpd.stop()
            thpd.close()
        stack.close()
        subprocess.run(['rm', '-rf', str(tmp), str(runtime)], check=False)


def combine(runs):
    """One row from its runs: the median CPU per start (and the range), latencies over every
    probe, the largest RSS."""
    latencies = [x for r in runs for x in r['latencies']]
    cpu = sorted(r['cpu_ms'] for r in runs)
    return {
        'policies': runs[0]['policies'], 'units': runs[0]['units'],
        'cpu_ms': statistics.median(cpu), 'cpu_min_ms': cpu[0], 'cpu_max_ms': cpu[-1], 'runs': len(runs),
        'systemd_s': statistics.median(r['systemd_s'] for r in runs),
        'median_ms': statistics.median(latencies), 'p99_ms': percentile(latencies, 99),
        'rss_kb': max(r['rss_kb'] for r in runs),
        'syscalls': runs[-1]['syscalls'],
        'instructions': [r['instructions'] for r in runs if r['instructions'] is not None],
    }


def format_cpu(r):
    if r['runs'] == 1:
        return f'{r["cpu_ms"]:.3f} ms'
    return f'{r["cpu_ms"]:.3f} ms [{r["cpu_min_ms"]:.3f}-{r["cpu_max_ms"]:.3f}]'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--thpd', required=True, type=Path)
    parser.add_argument('--rows', default=DEFAULT_ROWS,
                        help=f'POLICIESxUNITS,... (default {DEFAULT_ROWS}); every unit matches one policy, '
                             'at most three per policy; policies beyond the units match none that runs')
    parser.add_argument('--probes', type=int, default=PROBES)
    parser.add_argument('--runs', type=int, default=1, help='runs per row, each on a fresh stack (default 1)')
    parser.add_argument('--procfs', choices=('real', 'scratch'), default='real',
                        help='what thpd reads as /proc: the real one, as in production (default), or a scratch tree')
    parser.add_argument('--syscall-starts', type=int, default=50,
                        help='matching starts counted under strace -c after the CPU phase (0: none; default 50)')
    parser.add_argument('--syscall-detail', action='store_true', help='print the system calls per start by name')
    parser.add_argument('--callgrind', type=Path, metavar='DIR',
                        help='run thpd under callgrind and count its instructions per start; profiles go in DIR')
    parser.add_argument('--storm-watch', action='store_true',
                        help='keep the storm watcher on, as thpd.conf ships it (default: [Storm] Watch=no)')
    args = parser.parse_args()

    if args.callgrind:
        args.callgrind.mkdir(parents=True, exist_ok=True)
    reason = thpdtest.stack_unavailable_reason()
    if reason:
        print(f'SKIP: {reason}')
        return SKIP
    rows = [tuple(int(x) for x in row.split('x')) for row in args.rows.split(',')]
    load_before = Path('/proc/loadavg').read_text().split()[:3]
    results = []
    for policies, units in rows:
        runs = []
        for _ in range(max(args.runs, 1)):
            try:
                runs.append(run_row(args, policies, units))
            except ScaleError as error:
                print(f'{policies} x {units}: {error}', file=sys.stderr)
                return 1
            print(f'{policies} policies x {units} units: {runs[-1]["cpu_ms"]:.3f} ms CPU per start', file=sys.stderr)
        results.append(combine(runs))
    load_after = Path('/proc/loadavg').read_text().split()[:3]

    header = ('policies', 'running matched units', 'thpd CPU per start', 'system calls per start', 'systemd-run wall',
              'start -> knob written (median / p99)', 'thpd RSS after')
    table = [header] + [
        (f'{r["policies"]:,}', f'{r["units"]:,}', format_cpu(r),
         f'{r["syscalls"][0]:.1f}' if r['syscalls'] else '-',
         f'{r["systemd_s"]:.2f} s', f'{r["median_ms"]:.1f} / {r["p99_ms"]:.1f} ms', f'{r["rss_kb"] / 1024:.1f} MiB')
        for r in results]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    print()
    for n, row in enumerate(table):
        print('| ' + ' | '.join(c.ljust(w) for c, w in zip(row, widths)) + ' |')
        if n == 0:
            print('|' + '|'.join('-' * (w + 2) for w in widths) + '|')
    print(f'\nthpd read {"the real /proc" if args.procfs == "real" else "a scratch procfs"}; '
          f'load average before {" ".join(load_before)}, after {" ".join(load_after)}; '
          f'{args.probes} probe starts per run, {max(args.runs, 1)} run(s) per row')
    if args.syscall_detail:
        for r in results:
            if r['syscalls']:
                detail = ', '.join(f'{name} {n:.1f}' for name, n in sorted(r['syscalls'][1].items(), key=lambda x: -x[1]))
                print(f'{r["policies"]:,} x {r["units"]:,}: {detail}')
    for r in results:
        if r['instructions']:
            each = ', '.join(f'{n / 1e3:.0f} k' for n in r['instructions'])
            print(f'{r["policies"]:,} x {r["units"]:,}: thpd user instructions per start (callgrind): '
                  f'median {statistics.median(r["instructions"]) / 1e3:.0f} k; runs: {each}')
    if len(results) > 1:
        print(f'CPU per start, last row / first row: {results[-1]["cpu_ms"] / results[0]["cpu_ms"]:.2f}x')
    return 0


if __name__ == '__main__':
    sys.exit(main())
