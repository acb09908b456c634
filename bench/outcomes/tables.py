#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Prints the Markdown tables of docs/outcomes.md from docs/outcomes/*.csv (or --dir):
medians with [min–max] over the runs; for the compaction tail, medians with a 95 % bootstrap
interval over the runs; for every CSV that has them, the 1-minute load average the runs began
and ended at.

    PYTHONPATH=tests python3 bench/outcomes/tables.py [--dir DIR]
"""

import argparse
import csv
from pathlib import Path

import outcomeslib as lib
from compaction import TAIL_GROUPS, run_tails


def load(path):
    if not path.exists():
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def col(rows, field, cast=float):
    return [cast(r[field]) for r in rows if r[field] != '']


def compaction(rows):
    if not rows:
        return
    print('| runs | defrag at fault time | faults per run | p50 | p99 | max | compaction stalls (per s) '
          '| failed / succeeded | THP % | thpd switched after |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    groups = [('madvise', 'madvise', 'Action=log'), ('thpd', 'madvise', 'Action=mitigate, before the switch'),
              ('thpd', 'defer', 'Action=mitigate, after the switch')]
    for mode, defrag, label in groups:
        sel = [r for r in rows if r['mode'] == mode and r['defrag'] == defrag]
        if not sel:
            continue
        ms = lambda f: lib.cell([v / 1000 for v in col(sel, f)], '{:.2f}')  # noqa: E731
        switch = lib.cell(col(sel, 'switch_s'), '{:.1f}') + ' s' if mode == 'thpd' else '—'
        print(f'| {label} ({len(sel)}) | {defrag} | {lib.cell(col(sel, "faults"), "{:.0f}")} | {ms("p50_us")} ms '
              f'| {ms("p99_us")} ms | {ms("max_us")} ms | {lib.cell(col(sel, "compact_stall"), "{:.0f}")} '
              f'({lib.cell(col(sel, "compact_stall_per_s"), "{:.0f}")}) '
              f'| {sum(col(sel, "compact_fail", int))} / {sum(col(sel, "compact_success", int))} '
              f'| {lib.cell(col(sel, "thp_percent"), "{:.0f}")} | {switch} |')


def compaction_tails(faults):
    """Each run's p99 and maximum, their median over the runs and a 95 % bootstrap interval."""
    tails = run_tails(faults)
    if not tails:
        return
    print('\nPer run, then over the runs: median [95 % bootstrap interval of the median] '
          '(10,000 resamples, fixed seed)\n')
    print('| runs | faults in | p99 per run | max per run |')
    print('|---|---|---|---|')

    def ci(values):
        med, lo, hi = lib.bootstrap_median(values)
        return f'{med:.2f} ms [{lo:.2f}–{hi:.2f}]'
    for key, label, _, _ in TAIL_GROUPS:
        values = tails.get(key, [])
        if values:
            print(f'| {label} ({len(values)}) | {"after the switch" if key == "defer" else "the whole run"} '
                  f'| {ci([v[1] / 1000 for v in values])} | {ci([v[2] / 1000 for v in values])} |')


def load_line(rows):
    """The 1-minute load averages the runs began and ended at, when the CSV has them."""
    if not rows or 'load1_before' not in rows[0]:
        return
    before, after = col(rows, 'load1_before'), col(rows, 'load1_after')
    print(f'\n1-minute load average: {min(before):.2f}–{max(before):.2f} before the runs, '
          f'{min(after):.2f}–{max(after):.2f} after them.')


def redis(rows):
    if not rows:
        return
    modes = [('always', 'THP always (unit with no policy)'), ('thpd', "thpd's redis.conf (never/never)")]
    print('| | ' + ' | '.join(label for _, label in modes) + ' |')
    print('|---|' + '---|' * len(modes))

    def line(label, field, save=None, fmt='{:.1f}', scale=1.0):
        cells = []
        for mode, _ in modes:
            sel = [r for r in rows if r['mode'] == mode and (save is None or r['save'] == save)]
            if save is None:
                sel = [r for r in sel if r['save'] == '1']
            cells.append(lib.cell([v * scale for v in col(sel, field)], fmt))
        print(f'| {label} | ' + ' | '.join(cells) + ' |')

    print('| runs | ' + ' | '.join(str(len({r['run'] for r in rows if r['mode'] == m})) for m, _ in modes) + ' |')
    print('| THP enabled / defrag while Redis ran | ' + ' | '.join(
        '/'.join(sorted({r['enabled'] for r in rows if r['mode'] == m})) + ' / ' +
        '/'.join(sorted({r['defrag'] for r in rows if r['mode'] == m})) for m, _ in modes) + ' |')
    line('used_memory after DEBUG POPULATE, MiB', 'used_memory_mib', fmt='{:.0f}')
    line('parent AnonHugePages before save 1, MiB', 'anon_huge_before_mib', '1', '{:.0f}')
    line('fork (latest_fork_usec), save 1, ms', 'fork_ms', '1', '{:.1f}')
    line('parent AnonHugePages after save 1, MiB', 'anon_huge_after_mib', '1', '{:.0f}')
    line('fork, save 2, ms', 'fork_ms', '2', '{:.1f}')
    line('BGSAVE duration, save 1, s', 'save_s', '1', '{:.1f}')
    line('SET p99 without a save, ms', 'nosave_p99_ms', None, '{:.2f}')
    line('SET max without a save, ms', 'nosave_max_ms', None, '{:.1f}')
    for n in ('1', '2'):
        line(f'SET p50 during save {n}, ms', 'p50_ms', n, '{:.3f}')
        line(f'SET p99 during save {n}, ms', 'p99_ms', n, '{:.2f}')
        line(f'SET max during save {n}, ms', 'max_ms', n, '{:.1f}')
    for n in ('1', '2'):
        line(f'child peak Private_Dirty, save {n}, MiB', 'child_private_dirty_mib', n, '{:.0f}')
        line(f'Redis "Fork CoW for RDB: current", save {n}, MB', 'log_cow_current_mib', n, '{:.0f}')
    line('SET requests during save 1', 'requests', '1', '{:.0f}')


def postgresql(rows):
    if not rows:
        return
    modes = [('nopool', 'no pool (unit with no policy)'), ('thpd', "pool grown by thpd (postgresql.conf)")]
    print('| | ' + ' | '.join(label for _, label in modes) + ' |')
    print('|---|' + '---|' * len(modes))
    fields = [('runs', None, None), ('2 MiB pool when the server started', 'pool_pages', '{:.0f}'),
              ('huge pages the server mapped (Total − Free)', 'hugepages_in_use', '{:.0f}'),
              ('THP enabled', None, None),
              ('pgbench -S tps', 'tps', '{:,.0f}'), ('average latency, ms', 'latency_ms', '{:.3f}'),
              ("page tables of the server's processes (VmPTE sum), kB", 'vmpte_kb', '{:,.0f}'),
              ('processes summed', 'processes', '{:.0f}'),
              ('PageTables in /proc/meminfo (whole machine), kB', 'meminfo_pagetables_kb', '{:,.0f}')]
    for label, field, fmt in fields:
        cells = []
        for mode, _ in modes:
            sel = [r for r in rows if r['mode'] == mode]
            if label == 'runs':
                cells.append(str(len(sel)))
            elif label == 'THP enabled':
                cells.append('/'.join(sorted({r['enabled'] for r in sel})))
            else:
                cells.append(lib.cell(col(sel, field), fmt))
        print(f'| {label} | ' + ' | '.join(cells) + ' |')


def postgresql_scale(rows):
    if not rows:
        return
    modes = [('nopool', 'no pool (unit with no policy)'), ('thpd', 'pool grown by thpd (policy override)')]
    print('| | ' + ' | '.join(label for _, label in modes) + ' |')
    print('|---|' + '---|' * len(modes))
    mib = 1 / 1024
    fields = [('runs', None, None, 1),
              ('shared_buffers / database on disk, MiB / clients', None, None, 1),
              ('2 MiB pool when the server started', 'pool_pages', '{:.0f}', 1),
              ('huge pages the server mapped (Total − Free)', 'hugepages_in_use', '{:.0f}', 1),
              ('THP enabled', None, None, 1),
              ('shared buffer hits during the run, %', 'hit_percent', '{:.2f}', 1),
              ('pgbench -S -M prepared tps', 'tps', '{:,.0f}', 1),
              ('average latency, ms', 'latency_avg_ms', '{:.3f}', 1),
              ('p50 latency (per-transaction log), ms', 'p50_ms', '{:.3f}', 1),
              ('p99 latency (per-transaction log), ms', 'p99_ms', '{:.2f}', 1),
              ('max latency, ms', 'max_ms', '{:.1f}', 1),
              ("page tables of the server's processes (VmPTE sum), MiB", 'vmpte_sum_kb', '{:,.1f}', mib),
              ('VmPTE of one client backend (median over backends), kB', 'vmpte_backend_median_kb', '{:,.0f}', 1),
              ('client backends summed', 'backends', '{:.0f}', 1),
              ('PageTables in /proc/meminfo during the run (whole machine), MiB', 'pagetables_kb', '{:,.1f}', mib),
              ('PageTables before the server started (whole machine), MiB', 'pagetables_before_kb', '{:,.1f}', mib)]
    for label, field, fmt, scale in fields:
        cells = []
        for mode, _ in modes:
            sel = [r for r in rows if r['mode'] == mode]
            if label == 'runs':
                cells.append(str(len(sel)))
            elif label == 'THP enabled':
                cells.append('/'.join(sorted({r['enabled'] for r in sel})))
            elif field is None:
                cells.append('/'.join(sorted({f'{r["shared_buffers"]} / {r["db_mib"]} / {r["clients"]}' for r in sel})))
            else:
                cells.append(lib.cell([v * scale for v in col(sel, field)], fmt))
        print(f'| {label} | ' + ' | '.join(cells) + ' |')


def bloat(rows):
    if not rows:
        return
    groups = [(pattern, mode) for pattern in ('scattered', 'runs') for mode in ('always', 'thpd')]
    names = {'always': 'THP always', 'thpd': "thpd's redis.conf"}
    print('| | ' + ' | '.join(f'{p}, {names[m]}' for p, m in groups) + ' |')
    print('|---|' + '---|' * len(groups))
    fields = [('runs', None, None), ('THP enabled', None, None),
              ('used_memory when full, MiB', 'full_used_memory_mib', '{:.0f}'),
              ('used_memory_rss when full, MiB', 'full_used_memory_rss_mib', '{:.0f}'),
              ('AnonHugePages when full, MiB', 'full_anon_huge_mib', '{:.0f}'),
              ('**used_memory after deleting half, MiB**', 'after_used_memory_mib', '{:.0f}'),
              ('**used_memory_rss after deleting half, MiB**', 'after_used_memory_rss_mib', '{:.0f}'),
              ('mem_fragmentation_ratio after', 'after_fragmentation_ratio', '{:.2f}'),
              ('AnonHugePages after, MiB', 'after_anon_huge_mib', '{:.0f}'),
              ('partially mapped 2 MiB pages after (whole machine)', 'after_partially_mapped_thps', '{:.0f}')]
    for label, field, fmt in fields:
        cells = []
        for pattern, mode in groups:
            sel = [r for r in rows if r['mode'] == mode and r['pattern'] == pattern]
            if label == 'runs':
                cells.append(str(len(sel)))
            elif field is None:
                cells.append('/'.join(sorted({r['enabled'] for r in sel})))
            else:
                cells.append(lib.cell(col(sel, field), fmt))
        print(f'| {label} | ' + ' | '.join(cells) + ' |')


def bloat_sparse(rows):
    if not rows:
        return
    modes = [('always', 'THP always (unit with no policy)'), ('thpd', 'test-only policy: enabled=never')]
    print('| | ' + ' | '.join(label for _, label in modes) + ' |')
    print('|---|' + '---|' * len(modes))
    fields = [('runs', None, None), ('THP enabled', None, None),
              ('mapping, MiB / bytes written', None, None),
              ('time to write them, ms', 'touch_ms', '{:.1f}'),
              ('**Rss, MiB**', 'rss_mib', '{:,.1f}'), ('AnonHugePages, MiB', 'anon_huge_mib', '{:,.0f}')]
    for label, field, fmt in fields:
        cells = []
        for mode, _ in modes:
            sel = [r for r in rows if r['mode'] == mode]
            if label == 'runs':
                cells.append(str(len(sel)))
            elif label == 'THP enabled':
                cells.append('/'.join(sorted({r['enabled'] for r in sel})))
            elif field is None:
                cells.append('/'.join(sorted({f'{r["mapped_mib"]} / {r["touched_bytes"]}' for r in sel})))
            else:
                cells.append(lib.cell(col(sel, field), fmt))
        print(f'| {label} | ' + ' | '.join(cells) + ' |')


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--dir', type=Path, default=lib.DATA)
    args = parser.parse_args()
    for name, fn in (('compaction', compaction), ('redis', redis), ('postgresql', postgresql),
                     ('postgresql-scale', postgresql_scale), ('bloat', bloat), ('bloat-sparse', bloat_sparse)):
        rows = load(args.dir / f'{name}.csv')
        if rows:
            print(f'\n### {name}\n')
            fn(rows)
            if name == 'compaction':
                compaction_tails(load(args.dir / 'compaction-faults.csv'))
            load_line(rows)


if __name__ == '__main__':
    main()
