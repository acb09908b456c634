#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Outcome 5: memory bloat under THP "always", and what thpd's policies leave of it.

    PYTHONPATH=tests python3 bench/outcomes/bloat.py [--runs N] [--quick] [--plot-only]

(root; build thpd first; needs Debian's redis-server (its own service need not run) and
python3-matplotlib for the plot; takes the real-/sys lock. About 4 minutes with the defaults.
A recording refuses to start above a 1-minute load average of --max-load, 0.5, or while another
run holds the lock; see outcomeslib.)

thpd runs on the real /sys with the shipped policies, one test-only policy of this script (in
its own policy directory, never installed: bloat-test.conf, Units=sparse-touch-never.service,
[TransparentHugePages] Enabled=never) and a thpd.conf whose baseline is enabled=always
defrag=madvise, the setting whose harm is measured. Two workloads, each as a unit of the
private manager in two modes; the runs alternate always, thpd, always, ...

Redis (the fill-then-delete pattern of a cache):
  always:  unit redis-thp-always.service, which no policy names: THP stays "always";
  thpd:    unit redis-server.service, which the shipped redis.conf names: thpd sets
           enabled=never defrag=never on its start job.
  Both run "thpd-ctl --user await %n" first; Debian's /usr/bin/redis-server with a config of its
  own (port 16379 on 127.0.0.1, no persistence, "disable-thp no" so that THP reaches it, the
  DEBUG command for filling). Per run and deletion pattern (a fresh server for each): DEBUG
  POPULATE --keys keys of 512 bytes (key:0 ... key:N-1, allocated in that order), then half of
  them deleted (DEL, server-side in a Lua loop):
    scattered  every other key (key:0, key:2, ...): no allocator page is left empty;
    runs       alternating runs of --run-keys consecutive keys (1024, about 0.7 MiB): whole
               4 KiB pages empty, whole 2 MiB ones rarely;
  then MEMORY PURGE (jemalloc returns its empty pages to the kernel) and 2 s to settle. Read
  after the fill and after the purge: used_memory and used_memory_rss (INFO memory), the
  process's Rss and AnonHugePages (smaps_rollup), and the machine's count of partially mapped
  anonymous THPs (hugepages-2048kB/stats/nr_anon_partially_mapped, whole machine, when the
  kernel has it: a huge page split by a partial free is only freed when the deferred-split
  shrinker runs, so Rss can fall while the memory stays allocated).

Synthetic (the textbook THP bloat): bench/outcomes/sparse_touch.py maps --sparse-mib (4 GiB)
and writes one byte every 2 MiB of it, then holds the mapping:
  always:  unit sparse-touch.service, which no policy names: each touch faults a 2 MiB page;
  thpd:    unit sparse-touch-never.service, which the test-only policy names (enabled=never):
           each touch faults a 4 KiB page.
  Read: Rss and AnonHugePages of the process, and how long the touching took.
  The comparison is "always" against a policy that says never; under the kernel's default
  "madvise" this service (which does not madvise) would get 4 KiB pages too.

Every run records the 1-minute load average before and after it. Every knob and pool is
restored at exit. Written to docs/outcomes/bloat.csv (Redis, per run and pattern),
bloat-sparse.csv (per run) and bloat.png; --quick (one run of each, 500k keys, 512 MiB sparse)
writes to a scratch directory instead.
"""

import argparse
import csv
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import outcomeslib as lib
from resp import Client

REDIS = '/usr/bin/redis-server'
PORT = 16379
SPARSE = lib.HERE / 'sparse_touch.py'
REDIS_UNITS = {'always': 'redis-thp-always.service', 'thpd': 'redis-server.service'}
SPARSE_UNITS = {'always': 'sparse-touch.service', 'thpd': 'sparse-touch-never.service'}
PATTERNS = ('scattered', 'runs')
PARTIAL = lib.THP / 'hugepages-2048kB' / 'stats' / 'nr_anon_partially_mapped'
CONFIG = """\
[BaselineTransparentHugePages]
Enabled=always
Defrag=madvise
"""
TEST_POLICY = """\
# bench/outcomes/bloat.py only (never installed): a service whose policy says THP never.
[Policy]
Description=bloat.py's sparse-touching service under a policy that turns THP off
Units=sparse-touch-never.service

[TransparentHugePages]
Enabled=never
"""
DELETE = {
    'scattered': "local n = tonumber(ARGV[1]) for i = 0, n - 1, 2 do redis.call('DEL', 'key:' .. i) end return n",
    'runs': ("local n, r = tonumber(ARGV[1]), tonumber(ARGV[2]) local d = 0 for i = 0, n - 1 do "
             "if math.floor(i / r) % 2 == 0 then redis.call('DEL', 'key:' .. i) d = d + 1 end end return d"),
}


def _connect():
    try:
        client = Client(PORT, timeout=300)
        if client.call('PING') == b'PONG':
            return client
    except (OSError, RuntimeError):
        pass
    return None


def partially_mapped():
    try:
        return int(PARTIAL.read_text())
    except (OSError, ValueError):
        return ''


def redis_figures(client, pid, prefix):
    memory = client.info('memory')
    rollup = lib.smaps_rollup(pid)
    return {
        f'{prefix}_used_memory_mib': round(int(memory['used_memory']) / 2**20),
        f'{prefix}_used_memory_rss_mib': round(int(memory['used_memory_rss']) / 2**20),
        f'{prefix}_allocator_resident_mib': round(int(memory.get('allocator_resident', 0)) / 2**20),
        f'{prefix}_rss_mib': rollup.get('Rss', 0) // 1024,
        f'{prefix}_anon_huge_mib': rollup.get('AnonHugePages', 0) // 1024,
        f'{prefix}_partially_mapped_thps': partially_mapped(),
    }


def redis_run(args, session, mode, index, pattern, workdir):
    unit = REDIS_UNITS[mode]
    load_before = lib.load1()
    data = workdir / f'redis{index}-{pattern}'
    data.mkdir()
    conf = data / 'redis.conf'
    conf.write_text(f'port {PORT}\nbind 127.0.0.1\nprotected-mode yes\ndaemonize no\nsupervised no\n'
                    f'save ""\nappendonly no\ndir {data}\nlogfile {data}/redis.log\n'
                    f'disable-thp no\nenable-debug-command local\n')
    await_cmd = f'-{args.thpd_ctl} --user await --timeout=10s %n'
    session.start_unit(unit, REDIS, str(conf), properties=(f'ExecStartPre={await_cmd}',))
    try:
        enabled, defrag = lib.knob('enabled'), lib.knob('defrag')
        client = lib.thpdtest.wait_until(_connect, 20, 'redis to answer')
        pid = session.main_pid(unit)
        client.call('DEBUG', 'POPULATE', args.keys, 'key', 512)
        full = redis_figures(client, pid, 'full')
        began = time.monotonic()
        deleted = int(client.call('EVAL', DELETE[pattern], 0, args.keys, args.run_keys))
        delete_s = time.monotonic() - began
        purge = client.call('MEMORY', 'PURGE')
        time.sleep(2)
        after = redis_figures(client, pid, 'after')
        ratio = client.info('memory').get('mem_fragmentation_ratio', '').strip()
        client.close()
        row = {
            'mode': mode, 'run': index, 'pattern': pattern, 'unit': unit, 'enabled': enabled, 'defrag': defrag,
            'keys': args.keys, 'deleted': deleted, 'run_keys': args.run_keys if pattern == 'runs' else '',
            'delete_s': round(delete_s, 1), 'purge': purge.decode() if isinstance(purge, bytes) else purge,
            **full, **after, 'after_fragmentation_ratio': ratio,
            'load1_before': load_before, 'load1_after': lib.load1(),
        }
        lib.log(f'  redis run {index} ({mode}, {pattern}, enabled={enabled}): used_memory '
                f'{full["full_used_memory_mib"]} -> {after["after_used_memory_mib"]} MiB, rss '
                f'{full["full_used_memory_rss_mib"]} -> {after["after_used_memory_rss_mib"]} MiB, AnonHugePages '
                f'{full["full_anon_huge_mib"]} -> {after["after_anon_huge_mib"]} MiB, partially mapped THPs '
                f'{full["full_partially_mapped_thps"]} -> {after["after_partially_mapped_thps"]}')
        return row
    finally:
        session.stop_unit(unit)
        shutil.rmtree(data, ignore_errors=True)


def sparse_run(args, session, mode, index, workdir):
    unit = SPARSE_UNITS[mode]
    load_before = lib.load1()
    out = workdir / f'sparse{index}.json'
    session.start_unit(unit, '/usr/bin/python3', '-B', str(SPARSE), '--out', str(out), '--mib', str(args.sparse_mib),
                       '--stride-kib', '2048')
    try:
        enabled = lib.knob('enabled')
        lib.thpdtest.wait_until(lambda: out.exists() and out.read_text().endswith('\n'), 120,
                                'the sparse-touching unit to report')
        report = json.loads(out.read_text())
        rollup = lib.smaps_rollup(session.main_pid(unit))
        row = {
            'mode': mode, 'run': index, 'unit': unit, 'enabled': enabled, 'mapped_mib': args.sparse_mib,
            'touched_bytes': report['touched'], 'touch_ms': report['touch_ms'],
            'rss_mib': round(rollup.get('Rss', 0) / 1024, 1),
            'anon_huge_mib': rollup.get('AnonHugePages', 0) // 1024,
            'private_dirty_mib': round(rollup.get('Private_Dirty', 0) / 1024, 1),
            'load1_before': load_before, 'load1_after': lib.load1(),
        }
        lib.log(f'  sparse run {index} ({mode}, enabled={enabled}): {report["touched"]} bytes touched in '
                f'{report["touch_ms"]} ms, Rss {row["rss_mib"]} MiB, AnonHugePages {row["anon_huge_mib"]} MiB')
        return row
    finally:
        session.stop_unit(unit)


def run(args, csv_path, sparse_path):
    lib.check_root()
    if not Path(REDIS).is_file():
        sys.exit(f'{REDIS} is missing: apt-get install redis-server')
    workdir = Path(tempfile.mkdtemp(prefix='thpd-outcomes-bloat-', dir='/var/tmp'))
    test_policy = workdir / 'bloat-test.conf'
    test_policy.write_text(TEST_POLICY)
    policies = sorted((lib.TOP / 'policy').glob('*.conf')) + [test_policy]
    redis_rows, sparse_rows = [], []
    try:
        with lib.recording_lock(args):
            guard = lib.KnobGuard()
            try:
                with lib.Session(args.thpd, CONFIG, policies) as session:
                    lib.wait_knobs(enabled='always', defrag='madvise')
                    index = 0
                    for mode in ['always', 'thpd'] * args.runs:
                        index += 1
                        for pattern in PATTERNS:
                            redis_rows.append(redis_run(args, session, mode, index, pattern, workdir))
                            lib.wait_knobs(enabled='always', defrag='madvise')
                        sparse_rows.append(sparse_run(args, session, mode, index, workdir))
                        lib.wait_knobs(enabled='always', defrag='madvise')
            finally:
                guard.restore()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    lib.write_csv(csv_path, redis_rows)
    lib.write_csv(sparse_path, sparse_rows)


def plot(csv_path, sparse_path, png_path):
    plt = lib.pyplot()
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    with open(sparse_path) as f:
        sparse = list(csv.DictReader(f))
    colors = {'always': '#c0392b', 'thpd': '#2471a3'}
    labels = {'always': 'THP always (a unit no policy names)', 'thpd': "thpd's policy: never"}
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), width_ratios=(3, 1.6, 2))

    def bars(ax, groups, fields, ylabel, log=False):
        """groups: [(tick label, mode, rows)]; fields: [(field, alpha, legend label, scale)]."""
        width = 0.8 / len(fields)
        for x, (_, mode, sel) in enumerate(groups):
            for i, (field, alpha, _, scale) in enumerate(fields):
                values = [float(r[field]) * scale for r in sel if r[field] != '']
                if not values:
                    continue
                med, lo, hi = lib.spread(values)
                pos = x - 0.4 + width * (i + 0.5)
                ax.bar(pos, med, width, color=colors[mode], alpha=alpha, yerr=[[med - lo], [hi - med]], capsize=2)
                ax.scatter([pos] * len(values), values, color='black', s=5, zorder=3)
                ax.annotate(f'{med:.0f}', (pos, med), xytext=(0, 2), textcoords='offset points', ha='center',
                            fontsize=6)
        ax.set_xticks(range(len(groups)), [g[0] for g in groups], fontsize=7)
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale('symlog', linthresh=1)
        if len(fields) > 1:
            ax.legend([plt.Rectangle((0, 0), 1, 1, color='#555555', alpha=a) for _, a, _, _ in fields],
                      [label for _, _, label, _ in fields], fontsize=7, loc='upper right')

    groups = [(f'{pattern}\n{mode}', mode, [r for r in rows if r['mode'] == mode and r['pattern'] == pattern])
              for pattern in PATTERNS for mode in ('always', 'thpd')]
    bars(axes[0], groups, [('after_used_memory_mib', 1.0, 'used_memory', 1),
                           ('after_used_memory_rss_mib', 0.6, 'used_memory_rss', 1),
                           ('after_anon_huge_mib', 0.3, 'AnonHugePages', 1)], 'MiB')
    axes[0].set_title('Redis after deleting half its keys and MEMORY PURGE\n(deletion pattern, THP mode)', fontsize=9)
    bars(axes[1], groups, [('after_partially_mapped_thps', 0.8, 'partially mapped THPs x 2 MiB', 2)], 'MiB')
    axes[1].set_title('2 MiB pages left partially mapped\nafter the delete (whole machine)', fontsize=9)
    mib = sparse[0]['mapped_mib'] if sparse else '?'
    sgroups = [(mode, mode, [r for r in sparse if r['mode'] == mode]) for mode in ('always', 'thpd')]
    bars(axes[2], sgroups, [('rss_mib', 1.0, 'Rss', 1), ('anon_huge_mib', 0.5, 'AnonHugePages', 1)], 'MiB (symlog)',
         log=True)
    axes[2].set_title(f'Synthetic: 1 byte written per 2 MiB\nof a {mib} MiB mapping', fontsize=9)
    fig.legend([plt.Rectangle((0, 0), 1, 1, color=colors[m]) for m in ('always', 'thpd')],
               [labels[m] for m in ('always', 'thpd')], loc='upper center', ncol=2, bbox_to_anchor=(0.5, 1.08),
               fontsize=8)
    lib.save_figure(fig, png_path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--thpd', help='the thpd executable (default: build/src/daemon/thpd)')
    parser.add_argument('--thpd-ctl', help='the thpd-ctl executable (default: build/src/ctl/thpd-ctl)')
    parser.add_argument('--runs', type=int, default=3, help='runs of each mode (default 3)')
    parser.add_argument('--keys', type=int, default=3_000_000, help='Redis keys of 512 bytes (default 3M, about 2 GiB)')
    parser.add_argument('--run-keys', type=int, default=1024,
                        help='keys per deleted (and per kept) run of the "runs" pattern (default 1024)')
    parser.add_argument('--sparse-mib', type=int, default=4096, help='the synthetic mapping (default 4096)')
    parser.add_argument('--quick', action='store_true',
                        help='one run of each, 500k keys, a 512 MiB mapping, to a scratch dir')
    parser.add_argument('--plot-only', action='store_true', help='redraw the PNG from the CSVs')
    lib.add_guard_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.keys, args.sparse_mib = 1, 500_000, 512
    csv_path, png_path, _ = lib.out_paths('bloat', args.quick)
    sparse_path = csv_path.with_name('bloat-sparse.csv')
    if not args.plot_only:
        args.thpd = lib.find_binary('thpd', args.thpd)
        args.thpd_ctl = lib.find_binary('thpd-ctl', args.thpd_ctl)
        run(args, csv_path, sparse_path)
    plot(csv_path, sparse_path, png_path)


if __name__ == '__main__':
    main()
