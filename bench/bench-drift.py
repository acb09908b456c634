#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Drift benchmark: how long a held knob stays wrong after a write from outside any unit, and
what thpd costs while idle with every watch armed. A benchmark, not a test: it prints a table
and exits 0 whatever the figures are; 1 when it could not run to the end, 77 where the stack
cannot run (not root, no systemd, no python3-gi).

    PYTHONPATH=tests /usr/bin/python3 -B bench/bench-drift.py --thpd build/src/daemon/thpd [--writes 20]

Set-up: a private systemd --user manager and bus (thpdtest.Stack), thpd --user on a scratch
sysfs tree at kernel defaults with one policy, Units=thpd-bench.service, Enabled=never, and that
unit running; the real /proc, so that the storm watcher sleeps on a PSI trigger as in production
(on a scratch procfs it polls every 10 s). The scratch knobs are tmpfs files: a write raises the
same inotify event that a sysfs store does.

Each round, this process writes "always" to the scratch "enabled" file (open, write, close, as
a shell's echo does) and stamps CLOCK_MONOTONIC just before the write; a non-blocking inotify
descriptor opened beforehand wakes this process at each IN_CLOSE_WRITE, and the file is read
until it says "never" again (thpd's restore). The interval is write -> restore seen,
from the writer's side; thpd's own figure (write seen -> restore written, "again, N ms after the
write" in its log) is printed beside it. Rounds are 200 ms apart and MaxRestores= is set above
the round count, so thpd restores every one.

Idle: after the rounds and 7 s of quiet, the context switches of every thpd thread in three
windows of --idle-seconds (default 10) each, with no bus monitor attached.
"""

import argparse
import os
import re
import select
import statistics
import sys
import tempfile
import time
from pathlib import Path

import benchlib
import thpdtest


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--thpd', required=True)
    ap.add_argument('--writes', type=int, default=20)
    ap.add_argument('--idle-seconds', type=float, default=10.0)
    args = ap.parse_args()
    reason = thpdtest.stack_unavailable_reason()
    if reason:
        print(f'SKIP: {reason}')
        return 77

    with tempfile.TemporaryDirectory(prefix='thpd-bench-drift-') as tmp, thpdtest.Stack() as stack:
        tmp = Path(tmp)
        stack.start()
        kernel = thpdtest.ScratchKernel(tmp / 'kernel')
        policies = tmp / 'policy.d'
        policies.mkdir()
        (policies / 'bench.conf').write_text('[Policy]\nUnits=thpd-bench.service\n[TransparentHugePages]\nEnabled=never\n')
        config = tmp / 'thpd.conf'
        config.write_text(f'[Daemon]\n[Drift]\nMaxRestores={args.writes + 10}\n')
        daemon = thpdtest.Thpd([os.path.abspath(args.thpd), '--user', f'--sysfs={kernel.sysfs}',
                                '--procfs=/proc', f'--runtime-dir={tmp / "run"}',
                                f'--policy-dir={policies}', f'--config={config}'],
                               stack.env, tmp / 'thpd.log', tmp / 'notify')
        try:
            daemon.wait_ready()
            stack.start_unit('thpd-bench.service', '/bin/sleep', 'infinity')
            knob = kernel.knob_path('enabled')
            thpdtest.wait_until(lambda: kernel.read_knob('enabled') == 'never', 10, 'enabled=never')
            time.sleep(1)

            ino = benchlib.Inotify()
            ino.add(knob, 'enabled', benchlib.IN_CLOSE_WRITE)
            seen = []
            for _ in range(args.writes):
                ino.read()
                start = time.monotonic()
                with open(knob, 'w') as f:
                    f.write('always\n')
                # The restore's IN_CLOSE_WRITE can merge with the write's own (inotify joins
                # identical events not yet read), so each event is answered by reading the file.
                while kernel.read_knob('enabled') != 'never':
                    ready, _, _ = select.select([ino.fd], [], [], 5.0)
                    if not ready:
                        raise RuntimeError('thpd did not restore the knob within 5 s')
                    ino.read()
                seen.append((time.monotonic() - start) * 1000)
                time.sleep(0.2)
            ino.close()
            own = [float(x) for x in re.findall(r'enabled: never again, ([0-9.]+) ms after the write', daemon.log())]

            time.sleep(7)
            idle = []
            for _ in range(3):
                before = benchlib.context_switches(daemon.pid)
                time.sleep(args.idle_seconds)
                idle.append(benchlib.switches_between(before, benchlib.context_switches(daemon.pid)))
            load = os.getloadavg()[0]
        finally:
            daemon.close()

    rows = [('figure', 'median', 'worst', 'n')]
    rows.append(('write -> restore seen by the writer (ms)', f'{statistics.median(seen):.2f}', f'{max(seen):.2f}',
                 str(len(seen))))
    if own:
        rows.append(("write seen -> restore written, thpd's log (ms)", f'{statistics.median(own):.2f}',
                     f'{max(own):.2f}', str(len(own))))
    rows.append((f'thpd context switches per {args.idle_seconds:g} s idle, every watch armed (3 windows)',
                 ' '.join(map(str, idle)), '', ''))
    print(benchlib.render(rows, right=(1, 2, 3)))
    print(f'load average (1 min) at the end: {load:.2f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
