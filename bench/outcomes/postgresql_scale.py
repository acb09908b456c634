#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Outcome 4: PostgreSQL 15 at scale (shared_buffers=4GB, 64 clients) with and without the pool
thpd grows from a policy sized for it.

    PYTHONPATH=tests python3 bench/outcomes/postgresql_scale.py [--runs N] [--quick] [--plot-only]

(root; build thpd first; needs Debian's postgresql-15 (its binaries in
/usr/lib/postgresql/15/bin, pgbench and the pg_prewarm extension among them; no cluster or
service of its own is used) and python3-matplotlib for the plot; takes the real-/sys lock for
the measured runs only. About 45 s per run, 5 runs of each mode, 8 minutes in all; the first
invocation at a --scale also builds the cached cluster, see below: under a minute more (8 s
at scale 50 on the development VM). A recording refuses to start above a 1-minute load average of --max-load, 0.5, or while
another run holds the lock; see outcomeslib.)

Why: outcome 3 (postgresql.py) measured the shipped 72-page policy at shared_buffers=128MB and
8 clients, where the pool halves 3.5 MB of page tables and moves no throughput. The effect the
pool is for grows with both the shared memory and the number of backends mapping it: each
backend needs 8 bytes of page table per 4 KiB page of shared memory it touches (a 4 KiB page of
page table per 2 MiB, allocated whole as soon as anything in those 2 MiB is touched), 8 MiB per
backend for 4 GiB, about 512 MiB for 64 backends; with 2 MiB pages a backend needs 8 bytes per
2 MiB, 16 KiB for the same 4 GiB.

The cluster, cached between invocations (building it is most of a cold run's time): initdb of a
private cluster in --cache-dir (default /var/tmp/thpd-outcomes-pgscale/s<scale>, user postgres,
trust over a private Unix socket, no TCP, fsync off; huge_pages=try, max_connections=100),
pgbench -i -I dtGvp (server-side generation) at --scale (default 230, about 3.4 GiB, which fits
in shared_buffers=4GB, so "pgbench -S" reads shared buffers, not the page cache; the script
refuses a database larger than 95 % of shared_buffers), CREATE EXTENSION pg_prewarm. A file
"ready" marks a complete cache; --rebuild discards it. Remove it with rm -rf when done (it takes
the database's size on disk).

Sizing: "postgres -C shared_memory_size_in_huge_pages -c shared_buffers=4GB" (with the server
stopped) gives the pool; the script writes a drop-in override of the shipped
policy/postgresql.conf into its own policy directory (the same file name replaces the shipped
file, as /etc/thpd/policy.d/postgresql.conf would), differing only in Pages=. Before the lock
it checks that the pool, the 64 backends' page tables and a margin fit in MemAvailable.

Under the lock, thpd on the real /sys with the shipped policies (but that override) and
PoolGracePeriod=0 (so one run's pool is gone before the next), and runs that alternate:
  nopool: the server as unit pg-nopool.service, which no policy names: no pool, huge_pages=try
          falls back to 4 KiB pages (shmem_enabled stays as it was, never by default);
  thpd:   the server as unit postgresql@15-scale.service, which the policy names: thpd grows the
          2 MiB pool to the override's Pages= on the start job (and sets THP never).
Both units run "thpd-ctl --user await %n" first, then postgres -c shared_buffers=... as user
postgres (setpriv). Per run:
  1. warm the whole buffer: pg_prewarm of every table and index of the database (into shared
     buffers; from the page cache after the first run);
  2. 5 s of the measured command to warm the backends' caches, not logged;
  3. "pgbench -S -M prepared -c --clients -j 2 -T --seconds --log": tps from pgbench's summary,
     latency p50/p99/max from the per-transaction logs (every transaction; nearest rank), the
     shared buffer hit ratio over the run from pg_stat_database;
  4. 2 s before the end: VmPTE of every process of the unit (the sum, and the median and
     maximum over the client backends) and PageTables in /proc/meminfo (whole machine; also
     read before the server started, and the difference recorded), HugePages_Total - Free.
Also recorded: the pool when the server started, the 1-minute load average before and after
the run. Every knob and pool is restored at exit.

Written to docs/outcomes/postgresql-scale.csv and postgresql-scale.png; --quick (one short
run of each, shared_buffers=256MB, scale 12, 16 clients) writes to a scratch directory instead
and also prints the full-size arithmetic (the pool postgres -C gives for 4GB, and whether it
and 64 backends would fit).
"""

import argparse
import csv
import os
import pwd
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import outcomeslib as lib

PGBIN = Path('/usr/lib/postgresql/15/bin')
UNITS = {'nopool': 'pg-nopool.service', 'thpd': 'postgresql@15-scale.service'}
CONFIG = '[Daemon]\nPoolGracePeriod=0\n'
SHIPPED_POLICY = lib.TOP / 'policy' / 'postgresql.conf'
FULL = {'shared_buffers': '4GB', 'clients': 64}
MIB = 1 << 20
# Private memory of one backend beyond its page tables (catalog caches, work memory of -S).
BACKEND_PRIVATE_MIB = 16
MARGIN_MIB = 2048


def as_postgres(*argv, **kwargs):
    return subprocess.run(['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--', *argv],
                          check=True, capture_output=True, text=True, **kwargs)


def psql(sock, sql):
    return subprocess.run([str(PGBIN / 'psql'), '-h', str(sock), '-U', 'postgres', '-d', 'postgres', '-XAtq', '-v', 'ON_ERROR_STOP=1',
                           '-c', sql], check=True, capture_output=True, text=True).stdout.strip()


def size_bytes(setting):
    """'4GB' -> bytes (PostgreSQL's units: kB, MB, GB, TB)."""
    match = re.fullmatch(r'(\d+)\s*(kB|MB|GB|TB)', setting)
    if not match:
        sys.exit(f'--shared-buffers {setting!r}: give a size such as 4GB or 3500MB')
    return int(match.group(1)) * 1024 ** ('kB', 'MB', 'GB', 'TB').index(match.group(2)) * 1024


def huge_pages_needed(data, shared_buffers):
    return int(as_postgres(str(PGBIN / 'postgres'), '-D', str(data), '-c', f'shared_buffers={shared_buffers}',
                           '-C', 'shared_memory_size_in_huge_pages').stdout.strip())


def prepare(args):
    """The cached cluster (built if missing): returns (data directory, socket directory)."""
    pw = pwd.getpwnam('postgres')
    top = Path(args.cache_dir) / f's{args.scale}'
    data, sock = top / 'data', top / 'sock'
    if args.rebuild or not (top / 'ready').exists():
        shutil.rmtree(top, ignore_errors=True)
        top.mkdir(parents=True, mode=0o755)
        top.parent.chmod(0o755)
        os.chown(top, pw.pw_uid, pw.pw_gid)
        sock.mkdir()
        os.chown(sock, pw.pw_uid, pw.pw_gid)
        began = time.monotonic()
        lib.log(f'building the cached cluster in {top} (initdb, pgbench -i -s {args.scale})')
        as_postgres(str(PGBIN / 'initdb'), '-D', str(data), '--auth=trust', '--no-sync', '-E', 'UTF8',
                    '--locale=C.UTF-8')
        with open(data / 'postgresql.conf', 'a') as f:
            f.write(f"\n# thpd outcome benchmark (postgresql_scale.py); shared_buffers on the command line\n"
                    f"listen_addresses = ''\nunix_socket_directories = '{sock}'\nhuge_pages = try\n"
                    f"max_connections = 100\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                    f"max_wal_size = 1GB\nautovacuum = off\n")
        as_postgres(str(PGBIN / 'pg_ctl'), '-D', str(data), '-l', str(top / 'init.log'), '-w',
                    '-o', '-c shared_buffers=1GB', 'start')
        try:
            subprocess.run([str(PGBIN / 'pgbench'), '-h', str(sock), '-U', 'postgres', '-i', '-q', '-I', 'dtGvp',
                            '-s', str(args.scale), 'postgres'], check=True, capture_output=True)
            psql(sock, 'CREATE EXTENSION IF NOT EXISTS pg_prewarm; CHECKPOINT')
        finally:
            as_postgres(str(PGBIN / 'pg_ctl'), '-D', str(data), '-w', 'stop')
        (top / 'ready').write_text(f'scale {args.scale}\n')
        lib.log(f'cached cluster built in {time.monotonic() - began:.0f} s')
    else:
        lib.log(f'reusing the cached cluster in {top} (--rebuild to build it again)')
    return data, sock


def check_memory(pages, shared_buffers, clients, label):
    """Exits unless the pool, the backends' page tables and a margin fit in MemAvailable."""
    pool_mib = pages * 2
    tables_mib = clients * (size_bytes(shared_buffers) // 4096 * 8) // MIB
    huge_tables_kib = clients * (size_bytes(shared_buffers) // (2 * MIB) * 8) // 1024
    need_mib = pool_mib + clients * BACKEND_PRIVATE_MIB + tables_mib + MARGIN_MIB
    available_mib = lib.meminfo()['MemAvailable'] // 1024
    lib.log(f'{label}: shared_buffers={shared_buffers} needs {pages} huge pages ({pool_mib} MiB); '
            f'{clients} backends at 4 KiB pages would need up to {tables_mib} MiB of page tables '
            f'(8 bytes per 4 KiB mapped), {huge_tables_kib} KiB at 2 MiB pages; '
            f'with {clients} x {BACKEND_PRIVATE_MIB} MiB private and a {MARGIN_MIB} MiB margin: {need_mib} MiB '
            f'of {available_mib} MiB available')
    return need_mib <= available_mib, need_mib, available_mib


def write_policy(top, pages):
    """A drop-in override of the shipped postgresql.conf with Pages=pages; returns the policy
    files the Session gets (the shipped ones, that one replaced)."""
    text = SHIPPED_POLICY.read_text()
    if not re.search(r'^Pages=\d+$', text, re.M):
        sys.exit(f'{SHIPPED_POLICY} has no Pages= line to override')
    override = top / 'postgresql.conf'
    override.write_text(f'# postgresql_scale.py: the shipped policy with the Pages= that\n'
                        f'# "postgres -C shared_memory_size_in_huge_pages" printed for this cluster.\n'
                        + re.sub(r'^Pages=\d+$', f'Pages={pages}', text, flags=re.M))
    shipped = [p for p in sorted((lib.TOP / 'policy').glob('*.conf')) if p.name != 'postgresql.conf']
    return shipped + [override]


def pgbench(args, sock, seconds, log_prefix=None):
    argv = [str(PGBIN / 'pgbench'), '-h', str(sock), '-U', 'postgres', '-S', '-M', 'prepared', '-n',
            '-c', str(args.clients), '-j', str(args.threads), '-T', str(seconds)]
    if log_prefix:
        argv += ['--log', f'--log-prefix={log_prefix}']
    proc = subprocess.run([*argv, 'postgres'], check=True, capture_output=True, text=True)
    tps = float(re.search(r'tps = ([\d.]+) \(without initial connection time\)', proc.stdout).group(1))
    latency = float(re.search(r'latency average = ([\d.]+) ms', proc.stdout).group(1))
    return tps, latency


def transaction_latencies(prefix):
    """Every transaction's latency in ms from pgbench's per-transaction logs (PREFIX.PID and
    PREFIX.PID.N, one per thread: client_id transaction_no time_us script_no epoch epoch_us)."""
    latencies = []
    for path in sorted(prefix.parent.glob(prefix.name + '.*')):
        with open(path) as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 3 and fields[2].isdigit():
                    latencies.append(int(fields[2]) / 1000)
        path.unlink()
    return latencies


def backend(pid):
    """Whether pid is a client backend ("postgres: postgres postgres [local] ...")."""
    try:
        return b'[local]' in Path(f'/proc/{pid}/cmdline').read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return False


def blocks(sock):
    hit, read = psql(sock, "SELECT blks_hit, blks_read FROM pg_stat_database WHERE datname = 'postgres'").split('|')
    return int(hit), int(read)


def one_run(args, session, mode, index, data, sock, pages, workdir):
    unit = UNITS[mode]
    load_before = lib.load1()
    if mode == 'nopool':
        lib.thpdtest.wait_until(lambda: lib.pool_pages() == 0, 60, 'the pool to be released')
    tables_before = lib.meminfo()['PageTables']
    await_cmd = f'-{args.thpd_ctl} --user await --timeout=60s %n'
    session.start_unit(unit, 'setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--',
                       str(PGBIN / 'postgres'), '-D', str(data), '-c', f'shared_buffers={args.shared_buffers}',
                       properties=(f'ExecStartPre={await_cmd}',))
    try:
        lib.thpdtest.wait_until(
            lambda: subprocess.run([str(PGBIN / 'pg_isready'), '-q', '-h', str(sock)]).returncode == 0,
            120, 'postgres to accept connections')
        pool = lib.pool_pages()
        enabled = lib.knob('enabled')
        began = time.monotonic()
        prewarmed = int(psql(sock, "SELECT sum(pg_prewarm(c.oid)) FROM pg_class c JOIN pg_namespace n "
                                   "ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')"))
        prewarm_s = time.monotonic() - began
        pgbench(args, sock, 5)
        hit0, read0 = blocks(sock)
        sample = {}

        def read_tables():
            time.sleep(max(1, args.seconds - 2))
            pids = session.unit_pids(unit)
            ptes = {p: lib.status_kb(p, 'VmPTE') for p in pids}
            clients = [ptes[p] for p in pids if backend(p)]
            m = lib.meminfo()
            sample.update(procs=len(pids), backends=len(clients), vmpte=sum(ptes.values()),
                          backend_median=statistics.median(clients) if clients else 0,
                          backend_max=max(clients, default=0), tables=m['PageTables'],
                          huge_used=m['HugePages_Total'] - m['HugePages_Free'])
        reader = threading.Thread(target=read_tables)
        reader.start()
        prefix = workdir / f'tx{index}'
        tps, latency = pgbench(args, sock, args.seconds, prefix)
        reader.join()
        hit1, read1 = blocks(sock)
        lat = transaction_latencies(prefix)
        hits, reads = hit1 - hit0, read1 - read0
        row = {
            'mode': mode, 'run': index, 'unit': unit, 'enabled': enabled,
            'shared_buffers': args.shared_buffers, 'scale': args.scale, 'db_mib': args.db_mib,
            'clients': args.clients, 'seconds': args.seconds,
            'pool_pages': pool, 'cluster_needs_pages': pages, 'hugepages_in_use': sample['huge_used'],
            'prewarm_blocks': prewarmed, 'prewarm_s': round(prewarm_s, 1),
            'tps': tps, 'latency_avg_ms': latency,
            'p50_ms': lib.percentile(lat, 50), 'p99_ms': lib.percentile(lat, 99), 'max_ms': max(lat, default=0),
            'transactions_logged': len(lat),
            'hit_percent': round(100 * hits / (hits + reads), 3) if hits + reads else '',
            'blocks_read': reads,
            'processes': sample['procs'], 'backends': sample['backends'],
            'vmpte_sum_kb': sample['vmpte'], 'vmpte_backend_median_kb': sample['backend_median'],
            'vmpte_backend_max_kb': sample['backend_max'],
            'pagetables_before_kb': tables_before, 'pagetables_kb': sample['tables'],
            'pagetables_delta_kb': sample['tables'] - tables_before,
            'cpu_busy_percent_before': args.busy,
            'load1_before': load_before, 'load1_after': lib.load1(),
        }
        lib.log(f'  run {index} ({mode}, {unit}): pool {pool}, huge pages in use {sample["huge_used"]}, '
                f'prewarm {prewarmed} blocks in {prewarm_s:.1f} s, tps {tps:.0f}, p99 {row["p99_ms"]:.2f} ms, '
                f'hit {row["hit_percent"]} %, VmPTE {sample["vmpte"]} kB over {sample["procs"]} processes '
                f'(backend median {sample["backend_median"]} kB), PageTables {tables_before} -> '
                f'{sample["tables"]} kB')
        if mode == 'thpd' and (pool < pages or sample['huge_used'] == 0):
            lib.log(f'  WARNING: pool {pool} of {pages} pages, {sample["huge_used"]} in use: with a short pool '
                    f'huge_pages=try falls back to 4 KiB pages, and this run measured no pool')
            for line in session.log().splitlines()[-40:]:
                if 'hugetlb' in line or 'pool' in line or unit in line:
                    lib.log(f'    thpd: {line}')
        return row
    finally:
        session.stop_unit(unit)


def run(args, csv_path):
    lib.check_root()
    if not (PGBIN / 'postgres').is_file():
        sys.exit(f'{PGBIN}/postgres is missing: apt-get install postgresql-15')
    lib.refuse_if_loaded(args)
    data, sock = prepare(args)
    lib.settle_after_own_work(args, 'building the cluster')
    args.db_mib = size_bytes_of(data) // MIB
    if args.db_mib * MIB > 0.95 * size_bytes(args.shared_buffers):
        sys.exit(f'the database ({args.db_mib} MiB on disk) does not fit in shared_buffers={args.shared_buffers}: '
                 f'lower --scale')
    pages = huge_pages_needed(data, args.shared_buffers)
    if args.quick:
        full_pages = huge_pages_needed(data, FULL['shared_buffers'])
        fits, _, _ = check_memory(full_pages, FULL['shared_buffers'], FULL['clients'], 'full size (not run)')
        lib.log(f'full size would {"fit" if fits else "NOT fit"} in the memory available now')
    fits, need, available = check_memory(pages, args.shared_buffers, args.clients, 'this run')
    if not fits:
        sys.exit(f'not enough memory: {need} MiB needed, {available} MiB available')
    workdir = Path(tempfile.mkdtemp(prefix='thpd-outcomes-pgscale-'))
    rows = []
    try:
        policies = write_policy(workdir, pages)
        with lib.recording_lock(args):
            guard = lib.KnobGuard()
            try:
                args.busy = lib.busy_cpu_percent(1.0)
                with lib.Session(args.thpd, CONFIG, policies) as session:
                    for index, mode in enumerate(['nopool', 'thpd'] * args.runs, 1):
                        rows.append(one_run(args, session, mode, index, data, sock, pages, workdir))
            finally:
                guard.restore()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    lib.write_csv(csv_path, rows)


def size_bytes_of(data):
    """The database's files on disk (base/), which pg_prewarm reads into shared buffers."""
    return sum(p.stat().st_size for p in (data / 'base').rglob('*') if p.is_file())


def plot(csv_path, png_path):
    plt = lib.pyplot()
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    sb = rows[0]['shared_buffers'] if rows else '?'
    clients = rows[0]['clients'] if rows else '?'
    pages = rows[0]['cluster_needs_pages'] if rows else '?'
    labels = {'nopool': 'no pool\n(4 KiB pages)', 'thpd': f'pool grown by thpd\n({pages} x 2 MiB)'}
    colors = {'nopool': '#7f8c8d', 'thpd': '#2471a3'}
    panels = [('tps', 'pgbench -S, transactions/s', 1),
              ('p99_ms', 'p99 latency per transaction, ms', 1),
              ('vmpte_sum_kb', "page tables of the server's\nprocesses (VmPTE sum), MiB", 1024),
              ('pagetables_kb', 'PageTables in /proc/meminfo\n(whole machine, other work included), MiB', 1024)]
    fig, axes = plt.subplots(1, len(panels), figsize=(14, 3.6))
    for ax, (field, title, scale) in zip(axes, panels):
        for x, mode in enumerate(('nopool', 'thpd')):
            values = [float(r[field]) / scale for r in rows if r['mode'] == mode and r[field] != '']
            if not values:
                continue
            med, lo, hi = lib.spread(values)
            ax.bar(x, med, color=colors[mode], yerr=[[med - lo], [hi - med]], capsize=3)
            ax.scatter([x] * len(values), values, color='black', s=6, zorder=3)
        ax.set_xticks([0, 1], [labels['nopool'], labels['thpd']], fontsize=8)
        ax.set_title(title, fontsize=9)
    fig.suptitle(f'PostgreSQL 15, shared_buffers={sb}, pgbench -S -M prepared, {clients} clients', fontsize=10,
                 y=1.04)
    lib.save_figure(fig, png_path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--thpd', help='the thpd executable (default: build/src/daemon/thpd)')
    parser.add_argument('--thpd-ctl', help='the thpd-ctl executable (default: build/src/ctl/thpd-ctl)')
    parser.add_argument('--runs', type=int, default=5, help='runs of each mode (default 5)')
    parser.add_argument('--seconds', type=int, default=20, help='measured pgbench time per run (default 20)')
    parser.add_argument('--shared-buffers', default=FULL['shared_buffers'],
                        help=f'shared_buffers (default {FULL["shared_buffers"]})')
    parser.add_argument('--scale', type=int, default=230, help='pgbench scale (default 230, about 3.4 GiB on disk)')
    parser.add_argument('--clients', type=int, default=FULL['clients'],
                        help=f'pgbench clients (default {FULL["clients"]})')
    parser.add_argument('--threads', type=int, default=2, help='pgbench threads (default 2)')
    parser.add_argument('--cache-dir', default='/var/tmp/thpd-outcomes-pgscale',
                        help='where the cluster is cached between invocations (default /var/tmp/thpd-outcomes-pgscale)')
    parser.add_argument('--rebuild', action='store_true', help='build the cached cluster again')
    parser.add_argument('--quick', action='store_true',
                        help='one 8 s run of each at shared_buffers=256MB, scale 12, 16 clients, to a scratch dir')
    parser.add_argument('--plot-only', action='store_true', help='redraw the PNG from the CSV')
    lib.add_guard_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.seconds, args.shared_buffers, args.scale, args.clients = 1, 8, '256MB', 12, 16
    csv_path, png_path, _ = lib.out_paths('postgresql-scale', args.quick)
    if not args.plot_only:
        args.thpd = lib.find_binary('thpd', args.thpd)
        args.thpd_ctl = lib.find_binary('thpd-ctl', args.thpd_ctl)
        run(args, csv_path)
    plot(csv_path, png_path)


if __name__ == '__main__':
    main()
