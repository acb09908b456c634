#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Outcome 2: Redis under THP "always" versus under thpd's shipped redis.conf.

    PYTHONPATH=tests python3 bench/outcomes/redis.py [--runs N] [--quick] [--plot-only]

(root; build thpd first; needs Debian's redis-server (apt-get install redis-server; its own
service need not run) and python3-matplotlib for the plot; takes the real-/sys lock. About
60 s per run, 6 minutes in all on the development VM. A recording refuses to start above a
1-minute load average of --max-load, 0.5, or while another run holds the lock; see
outcomeslib.)

thpd runs on the real /sys with the shipped policies and a thpd.conf whose baseline is
enabled=always defrag=madvise. Each run starts Debian's /usr/bin/redis-server with a config of
its own (port 16379 on 127.0.0.1, no persistence but the BGSAVEs below, "disable-thp no" so
that THP reaches it, the DEBUG command for filling) as a unit of the private manager:
  always:  unit redis-thp-always.service, which no policy names: THP stays "always";
  thpd:    unit redis-server.service, which the shipped redis.conf names: thpd sets
           enabled=never defrag=never on its start job.
Both units run "thpd-ctl --user await %n" first, as Debian's redis-server.service does with
thpd's drop-in, so Redis never starts before the policy is in force.

Then: DEBUG POPULATE fills --keys keys (key:N, 512-byte values); a small client (one
connection, one request in flight, Python) SETs random existing keys and times every request:
  nosave   3 s without a save;
  bgsave1  BGSAVE 1 s into the writes; the client writes until the fork child has exited;
  bgsave2  the same again (the first save's writes split a THP parent's huge pages).
Per save: latest_fork_usec (INFO stats), the client's p50/p99/max during the save, the child's
peak Private_Dirty (polled from /proc every 100 ms) and Redis' own "Fork CoW for RDB: current
N MB" log line, the parent's AnonHugePages before and after, the 1-minute load average before
and after the run. The runs alternate always, thpd,
always, ... Every knob and pool is restored at exit.

Written to docs/outcomes/redis.csv and redis.png; --quick (one short run of each, 1M keys)
writes to a scratch directory instead.
"""

import argparse
import csv
import random
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import outcomeslib as lib
from resp import Client

REDIS = '/usr/bin/redis-server'
PORT = 16379
UNITS = {'always': 'redis-thp-always.service', 'thpd': 'redis-server.service'}
CONFIG = """\
[BaselineTransparentHugePages]
Enabled=always
Defrag=madvise
"""


class Writer(threading.Thread):
    """SETs random existing keys, one request in flight, recording (send time, latency)."""

    def __init__(self, keys):
        super().__init__(daemon=True)
        self.keys = keys
        self.samples = []
        self.stop = threading.Event()

    def run(self):
        client = Client(PORT)
        value = b'x' * 512
        rng = random.Random(13)
        perf = time.perf_counter
        samples = self.samples
        while not self.stop.is_set():
            request = client.encode('SET', f'key:{rng.randrange(self.keys)}', value)
            t0 = perf()
            client.sock.sendall(request)
            client._reply()
            samples.append((t0, perf() - t0))
        client.close()

    def window(self, start, end):
        return [lat for t, lat in self.samples if start <= t < end]


def children(pid):
    try:
        return [int(p) for p in Path(f'/proc/{pid}/task/{pid}/children').read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []


def save(client, pid, keys, seconds_before=1.0):
    """One BGSAVE under writes; returns its figures."""
    writer = Writer(keys)
    writer.start()
    time.sleep(seconds_before)
    before = lib.smaps_rollup(pid)
    issued = time.perf_counter()
    reply = client.call('BGSAVE')
    assert reply.startswith(b'Background saving started'), reply
    child, peak_dirty = None, 0
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        kids = children(pid)
        if kids:
            child = kids[0]
            peak_dirty = max(peak_dirty, lib.smaps_rollup(child).get('Private_Dirty', 0))
        elif child is not None or time.perf_counter() - issued > 2:
            break
        time.sleep(0.1)
    ended = time.perf_counter()
    time.sleep(0.5)
    writer.stop.set()
    writer.join()
    stats, persistence = client.info('stats'), client.info('persistence')
    after = lib.smaps_rollup(pid)
    during = writer.window(issued, ended)
    assert persistence['rdb_last_bgsave_status'] == 'ok', persistence
    return {
        'fork_ms': int(stats['latest_fork_usec']) / 1000,
        'save_s': round(ended - issued, 2),
        'p50_ms': lib.percentile(during, 50) * 1000,
        'p99_ms': lib.percentile(during, 99) * 1000,
        'max_ms': max(during) * 1000,
        'requests': len(during),
        'child_private_dirty_mib': round(peak_dirty / 1024, 1),
        'rdb_last_cow_mib': round(int(persistence.get('rdb_last_cow_size', 0)) / 2**20, 1),
        'anon_huge_before_mib': before.get('AnonHugePages', 0) // 1024,
        'anon_huge_after_mib': after.get('AnonHugePages', 0) // 1024,
    }


def one_run(args, session, mode, index, workdir):
    unit = UNITS[mode]
    load_before = lib.load1()
    data = workdir / f'run{index}'
    data.mkdir()
    conf = data / 'redis.conf'
    conf.write_text(f'port {PORT}\nbind 127.0.0.1\nprotected-mode yes\ndaemonize no\nsupervised no\n'
                    f'save ""\nappendonly no\ndir {data}\ndbfilename dump.rdb\nlogfile {data}/redis.log\n'
                    f'disable-thp no\nenable-debug-command local\nrdbcompression no\n')
    await_cmd = f'-{args.thpd_ctl} --user await --timeout=10s %n'
    session.start_unit(unit, REDIS, str(conf), properties=(f'ExecStartPre={await_cmd}',))
    try:
        enabled, defrag = lib.knob('enabled'), lib.knob('defrag')
        client = lib.thpdtest.wait_until(lambda: _connect(), 20, 'redis to answer')
        pid = session.main_pid(unit)
        began = time.monotonic()
        client.call('DEBUG', 'POPULATE', args.keys, 'key', 512)
        fill_s = time.monotonic() - began
        memory = client.info('memory')
        rollup = lib.smaps_rollup(pid)
        writer = Writer(args.keys)
        writer.start()
        time.sleep(3)
        writer.stop.set()
        writer.join()
        nosave = [lat for _, lat in writer.samples]
        common = {
            'mode': mode, 'run': index, 'unit': unit, 'enabled': enabled, 'defrag': defrag,
            'keys': args.keys, 'used_memory_mib': round(int(memory['used_memory']) / 2**20),
            'rss_mib': rollup.get('Rss', 0) // 1024, 'fill_s': round(fill_s, 1),
            'nosave_p50_ms': lib.percentile(nosave, 50) * 1000, 'nosave_p99_ms': lib.percentile(nosave, 99) * 1000,
            'nosave_max_ms': max(nosave) * 1000, 'nosave_rps': round(len(nosave) / 3),
        }
        rows = []
        for n in (1, 2):
            figures = save(client, pid, args.keys)
            rows.append({**common, 'save': n, **figures})
            (data / 'dump.rdb').unlink(missing_ok=True)
        client.close()
        load_after = lib.load1()
        for row in rows:
            row.update(load1_before=load_before, load1_after=load_after)
        cow = re.findall(r'Fork CoW for RDB: current (\d+) MB', (data / 'redis.log').read_text())
        for row, mb in zip(rows, cow + [''] * 2):
            row['log_cow_current_mib'] = mb
        lib.log(f'  run {index} ({mode}, {unit}, enabled={enabled}): ' +
                '; '.join(f'fork {r["fork_ms"]:.1f} ms, p99 {r["p99_ms"]:.2f} ms, max {r["max_ms"]:.1f} ms, '
                          f'child dirty {r["child_private_dirty_mib"]} MiB, THP '
                          f'{r["anon_huge_before_mib"]}->{r["anon_huge_after_mib"]} MiB' for r in rows))
        return rows
    finally:
        session.stop_unit(unit)
        shutil.rmtree(data, ignore_errors=True)


def _connect():
    try:
        client = Client(PORT)
        if client.call('PING') == b'PONG':
            return client
    except (OSError, RuntimeError):
        pass
    return None


def run(args, csv_path):
    lib.check_root()
    if not Path(REDIS).is_file():
        sys.exit(f'{REDIS} is missing: apt-get install redis-server')
    workdir = Path(tempfile.mkdtemp(prefix='thpd-outcomes-redis-', dir='/var/tmp'))
    rows = []
    try:
        with lib.recording_lock(args):
            guard = lib.KnobGuard()
            try:
                with lib.Session(args.thpd, CONFIG) as session:
                    lib.wait_knobs(enabled='always', defrag='madvise')
                    for index, mode in enumerate(['always', 'thpd'] * args.runs, 1):
                        rows += one_run(args, session, mode, index, workdir)
                        lib.wait_knobs(enabled='always', defrag='madvise')
            finally:
                guard.restore()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    lib.write_csv(csv_path, rows)


def plot(csv_path, png_path):
    plt = lib.pyplot()
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    labels = {'always': 'THP always\n(no policy)', 'thpd': "thpd's redis.conf\n(never/never)"}
    colors = {'always': '#c0392b', 'thpd': '#2471a3'}
    panels = [('fork_ms', 'fork (latest_fork_usec), ms'), ('max_ms', 'client max latency\nduring BGSAVE, ms'),
              ('p99_ms', 'client p99 latency\nduring BGSAVE, ms'),
              ('child_private_dirty_mib', 'fork child peak\nPrivate_Dirty (COW), MiB')]
    fig, axes = plt.subplots(1, len(panels), figsize=(13, 3.6))
    for ax, (field, title) in zip(axes, panels):
        x = 0
        ticks = []
        for mode in ('always', 'thpd'):
            for n in ('1', '2'):
                values = [float(r[field]) for r in rows if r['mode'] == mode and r['save'] == n]
                if not values:
                    continue
                med, lo, hi = lib.spread(values)
                ax.bar(x, med, color=colors[mode], alpha=1.0 if n == '1' else 0.55,
                       yerr=[[med - lo], [hi - med]], capsize=3)
                ax.scatter([x] * len(values), values, color='black', s=6, zorder=3)
                ticks.append((x, f'save {n}'))
                x += 1
            x += 0.5
        ax.set_xticks([t for t, _ in ticks], [label for _, label in ticks], fontsize=7)
        ax.set_title(title, fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[m]) for m in ('always', 'thpd')]
    fig.legend(handles, [labels[m] for m in ('always', 'thpd')], loc='upper center', ncol=2,
               bbox_to_anchor=(0.5, 1.12), fontsize=8)
    lib.save_figure(fig, png_path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--thpd', help='the thpd executable (default: build/src/daemon/thpd)')
    parser.add_argument('--thpd-ctl', help='the thpd-ctl executable (default: build/src/ctl/thpd-ctl)')
    parser.add_argument('--runs', type=int, default=3, help='runs of each mode (default 3)')
    parser.add_argument('--keys', type=int, default=3_000_000, help='keys of 512 bytes (default 3M, about 2 GiB)')
    parser.add_argument('--quick', action='store_true', help='one run of each with 1M keys, to a scratch dir')
    parser.add_argument('--plot-only', action='store_true', help='redraw the PNG from the CSV')
    lib.add_guard_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.keys = 1, 1_000_000
    csv_path, png_path, _ = lib.out_paths('redis', args.quick)
    if not args.plot_only:
        args.thpd = lib.find_binary('thpd', args.thpd)
        args.thpd_ctl = lib.find_binary('thpd-ctl', args.thpd_ctl)
        run(args, csv_path)
    plot(csv_path, png_path)


if __name__ == '__main__':
    main()
