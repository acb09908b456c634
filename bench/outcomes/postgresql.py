#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Outcome 3: PostgreSQL 15 with and without the shipped policy's hugetlb pool grown by thpd.

    PYTHONPATH=tests python3 bench/outcomes/postgresql.py [--runs N] [--quick] [--plot-only]

(root; build thpd first; needs Debian's postgresql-15 (its binaries in
/usr/lib/postgresql/15/bin, pgbench among them; no cluster or service of its own is used)
and python3-matplotlib for the plot; takes the real-/sys lock for the measured runs only.
About 25 s per run, 5 minutes in all. A recording refuses to start above a 1-minute load
average of --max-load, 0.5, or while another run holds the lock; see outcomeslib.)

Before the lock: initdb of a private cluster (user postgres, trust over a private Unix socket,
no TCP) with the shipped policy's sizing: shared_buffers=128MB, for which PostgreSQL 15's
"postgres -C shared_memory_size_in_huge_pages" gives the 72 pages of policy/postgresql.conf
(the script checks that it still does); huge_pages=try; pgbench -i at --scale (the default,
6, about 95 MB, fits shared_buffers, so "pgbench -S" reads shared memory, not the page cache).

Under the lock, thpd on the real /sys with the shipped policies (and PoolGracePeriod=0, so one
run's pool is gone before the next), and runs that alternate:
  nopool: the server as unit pg-nopool.service, which no policy names: no pool, and
          huge_pages=try falls back to 4 KiB pages;
  thpd:   the server as unit postgresql@15-bench.service, which the shipped postgresql.conf
          names: thpd grows the 2 MiB pool to 72 pages on the start job (and sets THP never).
Both units run "thpd-ctl --user await %n" first, then postgres as user postgres (setpriv).
Per run: 5 s of "pgbench -S" to warm up, then "pgbench -S -c 8 -j 2 -T --seconds"; 5 s into
it the page-table memory is read: VmPTE summed over the unit's processes (the server and its
8 backends) and PageTables in /proc/meminfo. Also recorded: the pool and how much of it the
server reserved or uses (HugePages_Total/Free/Rsvd), and the 1-minute load average before and
after the run. Every knob and pool is restored at exit.

Written to docs/outcomes/postgresql.csv and postgresql.png; --quick (one short run of each)
writes to a scratch directory instead.
"""

import argparse
import csv
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import outcomeslib as lib

PGBIN = Path('/usr/lib/postgresql/15/bin')
UNITS = {'nopool': 'pg-nopool.service', 'thpd': 'postgresql@15-bench.service'}
POLICY_PAGES = 72
CONFIG = '[Daemon]\nPoolGracePeriod=0\n'


def as_postgres(*argv, **kwargs):
    return subprocess.run(['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--', *argv],
                          check=True, capture_output=True, text=True, **kwargs)


def prepare(args, top):
    """initdb and pgbench -i, without the lock; returns the data directory."""
    pw = pwd.getpwnam('postgres')
    os.chown(top, pw.pw_uid, pw.pw_gid)
    data, sock = top / 'data', top / 'sock'
    sock.mkdir()
    os.chown(sock, pw.pw_uid, pw.pw_gid)
    as_postgres(str(PGBIN / 'initdb'), '-D', str(data), '--auth=trust', '--no-sync', '-E', 'UTF8',
                '--locale=C.UTF-8')
    with open(data / 'postgresql.conf', 'a') as f:
        f.write(f"\n# thpd outcome benchmark\nlisten_addresses = ''\nunix_socket_directories = '{sock}'\n"
                f"shared_buffers = 128MB\nhuge_pages = try\nmax_connections = 100\n"
                f"fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
    pages = int(as_postgres(str(PGBIN / 'postgres'), '-D', str(data), '-C',
                            'shared_memory_size_in_huge_pages').stdout.strip())
    if pages > POLICY_PAGES:
        sys.exit(f'this cluster needs {pages} huge pages, more than the {POLICY_PAGES} of policy/postgresql.conf')
    as_postgres(str(PGBIN / 'pg_ctl'), '-D', str(data), '-l', str(top / 'init.log'), '-w', 'start')
    try:
        lib.log(f'pgbench -i -s {args.scale} (cluster needs {pages} huge pages)')
        subprocess.run([str(PGBIN / 'pgbench'), '-h', str(sock), '-U', 'postgres', '-i', '-q', '-s',
                        str(args.scale), 'postgres'], check=True, capture_output=True)
    finally:
        as_postgres(str(PGBIN / 'pg_ctl'), '-D', str(data), '-w', 'stop')
    return data, sock, pages


def pgbench(sock, seconds, clients=8, threads=2):
    proc = subprocess.run([str(PGBIN / 'pgbench'), '-h', str(sock), '-U', 'postgres', '-S', '-n',
                           '-c', str(clients), '-j', str(threads), '-T', str(seconds), 'postgres'],
                          check=True, capture_output=True, text=True)
    tps = float(re.search(r'tps = ([\d.]+) \(without initial connection time\)', proc.stdout).group(1))
    latency = float(re.search(r'latency average = ([\d.]+) ms', proc.stdout).group(1))
    return tps, latency


def one_run(args, session, mode, index, data, sock, pages):
    unit = UNITS[mode]
    load_before = lib.load1()
    if mode == 'nopool':
        lib.thpdtest.wait_until(lambda: lib.pool_pages() == 0, 30, 'the pool to be released')
    await_cmd = f'-{args.thpd_ctl} --user await --timeout=10s %n'
    session.start_unit(unit, 'setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--',
                       str(PGBIN / 'postgres'), '-D', str(data),
                       properties=(f'ExecStartPre={await_cmd}',))
    try:
        lib.thpdtest.wait_until(
            lambda: subprocess.run([str(PGBIN / 'pg_isready'), '-q', '-h', str(sock)]).returncode == 0,
            30, 'postgres to accept connections')
        pool = lib.pool_pages()
        enabled = lib.knob('enabled')
        mem = lib.meminfo()
        pgbench(sock, 5)
        sample = {}

        def read_tables():
            time.sleep(5)
            pids = session.unit_pids(unit)
            sample['procs'] = len(pids)
            sample['vmpte_kb'] = sum(lib.status_kb(p, 'VmPTE') for p in pids)
            m = lib.meminfo()
            sample['pagetables_kb'] = m['PageTables']
            sample['huge_used'] = m['HugePages_Total'] - m['HugePages_Free']
            sample['huge_rsvd'] = m['HugePages_Rsvd']
        reader = threading.Thread(target=read_tables)
        reader.start()
        tps, latency = pgbench(sock, args.seconds)
        reader.join()
        row = {
            'mode': mode, 'run': index, 'unit': unit, 'enabled': enabled, 'pool_pages': pool,
            'cluster_needs_pages': pages, 'pool_reserved_at_start': mem['HugePages_Rsvd'],
            'tps': tps, 'latency_ms': latency,
            'vmpte_kb': sample['vmpte_kb'], 'processes': sample['procs'],
            'meminfo_pagetables_kb': sample['pagetables_kb'],
            'hugepages_in_use': sample['huge_used'], 'hugepages_rsvd': sample['huge_rsvd'],
            'cpu_busy_percent_before': args.busy,
            'load1_before': load_before, 'load1_after': lib.load1(),
        }
        lib.log(f'  run {index} ({mode}, {unit}): pool {pool}, tps {tps:.0f}, latency {latency} ms, '
                f'VmPTE {sample["vmpte_kb"]} kB over {sample["procs"]} processes, huge pages in use '
                f'{sample["huge_used"]}')
        return row
    finally:
        session.stop_unit(unit)


def run(args, csv_path):
    lib.check_root()
    if not (PGBIN / 'postgres').is_file():
        sys.exit(f'{PGBIN}/postgres is missing: apt-get install postgresql-15')
    lib.refuse_if_loaded(args)
    top = Path(tempfile.mkdtemp(prefix='thpd-outcomes-pg-', dir='/var/tmp'))
    top.chmod(0o755)
    rows = []
    try:
        data, sock, pages = prepare(args, top)
        with lib.recording_lock(args):
            guard = lib.KnobGuard()
            try:
                args.busy = lib.busy_cpu_percent(1.0)
                with lib.Session(args.thpd, CONFIG) as session:
                    for index, mode in enumerate(['nopool', 'thpd'] * args.runs, 1):
                        rows.append(one_run(args, session, mode, index, data, sock, pages))
            finally:
                guard.restore()
    finally:
        shutil.rmtree(top, ignore_errors=True)
    lib.write_csv(csv_path, rows)


def plot(csv_path, png_path):
    plt = lib.pyplot()
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    labels = {'nopool': 'no pool\n(4 KiB pages)', 'thpd': 'pool grown by thpd\n(72 x 2 MiB)'}
    colors = {'nopool': '#7f8c8d', 'thpd': '#2471a3'}
    panels = [('tps', 'pgbench -S, transactions/s'), ('vmpte_kb', "page tables of the server's\nprocesses (VmPTE), kB")]
    fig, axes = plt.subplots(1, len(panels), figsize=(8, 3.4))
    for ax, (field, title) in zip(axes, panels):
        for x, mode in enumerate(('nopool', 'thpd')):
            values = [float(r[field]) for r in rows if r['mode'] == mode]
            if not values:
                continue
            med, lo, hi = lib.spread(values)
            ax.bar(x, med, color=colors[mode], yerr=[[med - lo], [hi - med]], capsize=3)
            ax.scatter([x] * len(values), values, color='black', s=6, zorder=3)
        ax.set_xticks([0, 1], [labels['nopool'], labels['thpd']], fontsize=8)
        ax.set_title(title, fontsize=9)
    lib.save_figure(fig, png_path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--thpd', help='the thpd executable (default: build/src/daemon/thpd)')
    parser.add_argument('--thpd-ctl', help='the thpd-ctl executable (default: build/src/ctl/thpd-ctl)')
    parser.add_argument('--runs', type=int, default=5, help='runs of each mode (default 5)')
    parser.add_argument('--seconds', type=int, default=20, help='measured pgbench time per run (default 20)')
    parser.add_argument('--scale', type=int, default=6, help='pgbench scale (default 6, about 95 MB)')
    parser.add_argument('--quick', action='store_true', help='one 8 s run of each, to a scratch dir')
    parser.add_argument('--plot-only', action='store_true', help='redraw the PNG from the CSV')
    lib.add_guard_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.seconds = 1, 8
    csv_path, png_path, _ = lib.out_paths('postgresql', args.quick)
    if not args.plot_only:
        args.thpd = lib.find_binary('thpd', args.thpd)
        args.thpd_ctl = lib.find_binary('thpd-ctl', args.thpd_ctl)
        run(args, csv_path)
    plot(csv_path, png_path)


if __name__ == '__main__':
    main()
