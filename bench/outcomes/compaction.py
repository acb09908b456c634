#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Outcome 1: THP faults on fragmented memory, defrag=madvise versus thpd's storm mitigation.

    PYTHONPATH=tests python3 bench/outcomes/compaction.py [--runs N] [--quick] [--plot-only]

(root; build thpd first; plots need python3-matplotlib; takes the real-/sys lock. About
45 s per run on the 2-vCPU, 24 GiB development VM (the first run 30 s more), most of it
fragmenting memory: 5 runs of each mode, about 8 minutes.)

Quietly: the first recording (load average 5-12) could not tell the modes' latency tails apart,
because waiting for a CPU dominated them. A recording therefore refuses to start (status 1,
saying why) while the 1-minute load average is above --max-load (0.5) or another run holds
/tmp/thpd-real-sys.lock, and checks the load again once it holds the lock (outcomeslib's quiet
guard); every run records the load average before and after it. --quick skips the load check.

Each run:
  1. fragments memory with tests/thpdtest/thp_fragment.py, the recipe of the real-kernel
     storm test: anonymous memory up to MemAvailable - 6 GiB, an 8 GiB file in page cache on
     top, every other 4 KiB page freed, and what is left mlocked with
     vm.compact_unevictable_allowed=0, so direct compaction cannot move it and fails (the
     memory an mlocked or pinned workload holds);
  2. starts thpd on the real /sys with the shipped policies and a thpd.conf (--config) whose
     baseline is enabled=madvise defrag=madvise, and whose [Storm] section is
       madvise runs: Action=log      (thpd watches, defrag stays madvise throughout)
       thpd runs:    Action=mitigate (thpd detects the storm and switches defrag to defer)
     with the thresholds of the real-kernel storm test (PressurePercent=0.2, Window=1s,
     StormAfter=1s: at the default PressurePercent=10 a storm whose PSI "some" stays at 1-2 %
     is never declared; issue 13 part 2 retunes the defaults from recorded traces);
  3. starts the workload, bench/outcomes/thp_faults.py, as the unit thp-faults.service: it maps
     32 MiB every 0.2 s with MADV_HUGEPAGE and times each 2 MiB fault, tagging it with the
     defrag value it ran under;
  4. stops thpd (which puts defrag back), frees the fragmenting memory.
The runs alternate madvise, thpd, madvise, ... (5 of each by default). Every knob, the pools and
vm.compact_unevictable_allowed are snapshotted first and restored at exit.

Figures per run and per defrag value (a thpd run has faults under madvise before the
detection and under defer after it): faults, p50/p99/max latency per 2 MiB fault, compaction
stalls (and per second), the share of faults that got a huge page, and for thpd runs the time
from the first fault to the switch. Written to docs/outcomes/compaction.csv (per run),
compaction-faults.csv (every fault) and compaction.png; --quick (one short run of each mode)
writes to a scratch directory instead.
"""

import argparse
import contextlib
import csv
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import outcomeslib as lib
import thpdtest.thp_fragment

FRAGMENTER = Path(thpdtest.thp_fragment.__file__).resolve()
FAULTER = lib.HERE / 'thp_faults.py'
COMPACT_UNEVICTABLE = Path('/proc/sys/vm/compact_unevictable_allowed')
UNIT = 'thp-faults.service'

STORM = {
    'Window': '1s',
    'StormAfter': '1s',
    'CoolAfter': '2s',
    # Longer than a run: once switched, defer stays for the rest of it.
    'HoldDown': '10min',
    'EscalateAfter': '1h',
    'SampleInterval': '250ms',
    'PressurePercent': '0.2',
}


def config(action):
    storm = ''.join(f'{k}={v}\n' for k, v in STORM.items())
    return (f'[BaselineTransparentHugePages]\nEnabled=madvise\nDefrag=madvise\n\n'
            f'[Storm]\nAction={action}\n{storm}')


def read_event(proc, name, timeout):
    result = {}

    def read():
        for line in proc.stdout:
            event = json.loads(line)
            if event['event'] == name:
                result.update(event)
                return
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if not result:
        raise RuntimeError(f'thp_fragment.py: no "{name}" within {timeout} s (status {proc.poll()})')
    return result


# Groups of runs whose per-run tails are compared: (key, label, mode, defrag or None for the
# whole run).
TAIL_GROUPS = (
    ('log', 'Action=log (defrag=madvise)', 'madvise', None),
    ('mitigate', 'Action=mitigate, whole run', 'thpd', None),
    ('defer', 'Action=mitigate, after the switch (defer)', 'thpd', 'defer'),
)


def run_tails(faults):
    """{group key: [(run, p99 us, max us), ...]} from the rows of compaction-faults.csv."""
    tails = {}
    for key, _, mode, defrag in TAIL_GROUPS:
        runs = sorted({int(r['run']) for r in faults if r['mode'] == mode})
        for run in runs:
            us = [int(r['fault_us']) for r in faults
                  if int(r['run']) == run and (defrag is None or r['defrag'] == defrag)]
            if us:
                tails.setdefault(key, []).append((run, lib.percentile(us, 99), max(us)))
    return tails


def one_run(args, mode, index, cache_file):
    """Returns (summary rows, fault rows) of one run."""
    load_before = lib.load1()
    lib.log(f'run {index} ({mode}): fragmenting memory (load average {load_before:.2f})')
    fragmenter = subprocess.Popen(
        [sys.executable, '-B', str(FRAGMENTER), 'fragment', '--drop-caches', '--lock', '--margin-mib', '6144',
         '--cache-file', str(cache_file), '--cache-mib', '8192', '--hold-seconds', '300'],
        stdout=subprocess.PIPE, text=True, preexec_fn=lib.kill_with_parent)
    try:
        fragmented = read_event(fragmenter, 'fragmented', timeout=240)
        lib.log(f'  fragmented: {fragmented["free_mib"]} MiB free, {fragmented["free_in_2m_blocks_mib"]} MiB of '
                f'it in 2 MiB blocks (fill {fragmented.get("fill_seconds")} s, cache {fragmented.get("cache_seconds")} s, '
                 f'punch {fragmented.get("punch_seconds")} s)')
        out = Path(tempfile.mkdtemp(prefix='thp-faults-')) / 'faults.jsonl'
        action = 'mitigate' if mode == 'thpd' else 'log'
        with lib.Session(args.thpd, config(action)) as session:
            lib.wait_knobs(enabled='madvise', defrag='madvise')
            busy = lib.busy_cpu_percent(1.0)
            session.start_unit(UNIT, '/usr/bin/python3', '-B', str(FAULTER), '--out', str(out),
                               '--seconds', str(args.seconds), '--max-mib', str(args.max_mib))
            thpdtest_wait(lambda: out.exists() and '"done"' in out.read_text(), args.seconds + 60)
            storm_log = [line for line in session.log().splitlines() if 'torm' in line]
        lib.wait_knobs(defrag='madvise')
        load_after = lib.load1()
    finally:
        fragmenter.kill()
        fragmenter.wait()
        fragmenter.stdout.close()

    records = [json.loads(line) for line in out.read_text().splitlines()]
    shutil.rmtree(out.parent, ignore_errors=True)
    done = records.pop()
    switched = next((r['t'] for r in records if r['defrag'] != 'madvise'), None)
    lib.log(f'  {done["chunks"]} chunks in {done["seconds"]} s ({done["done"]}); defrag switched at '
            f'{switched} s; thpd: {storm_log[-3:]}')
    faults = [{'mode': mode, 'run': index, 't': r['t'], 'defrag': r['defrag'], 'fault_us': us}
              for r in records for us in r['fault_us']]
    rows = []
    for defrag in sorted({r['defrag'] for r in records}, key=lambda d: d != 'madvise'):
        part = [r for r in records if r['defrag'] == defrag]
        us = [u for r in part for u in r['fault_us']]
        span = (part[-1]['t'] - part[0]['t']) + args.interval if part else 0
        stalls = sum(r['compact_stall'] for r in part)
        alloc = sum(r['thp_fault_alloc'] for r in part)
        fallback = sum(r['thp_fault_fallback'] for r in part)
        rows.append({
            'mode': mode, 'run': index, 'defrag': defrag, 'faults': len(us),
            'p50_us': lib.percentile(us, 50), 'p99_us': lib.percentile(us, 99), 'max_us': max(us),
            'mean_us': round(sum(us) / len(us), 1),
            'compact_stall': stalls, 'compact_stall_per_s': round(stalls / span, 1) if span else 0,
            'compact_fail': sum(r['compact_fail'] for r in part),
            'compact_success': sum(r['compact_success'] for r in part),
            'thp_percent': round(100 * alloc / (alloc + fallback), 1) if alloc + fallback else 0,
            'pgsteal_direct': sum(r['pgsteal_direct'] for r in part),
            'switch_s': switched if mode == 'thpd' else '',
            'free_mib': fragmented['free_mib'], 'free_2m_blocks_mib': fragmented['free_in_2m_blocks_mib'],
            'cpu_busy_percent_before': busy,
            'load1_before': load_before, 'load1_after': load_after,
        })
    return rows, faults


def thpdtest_wait(predicate, timeout):
    lib.thpdtest.wait_until(predicate, timeout, 'the faulting unit to finish')


def run(args, csv_path, faults_path):
    lib.check_root()
    cache_dir = Path(tempfile.mkdtemp(prefix='thpd-outcomes-cache-', dir='/var/tmp'))
    summary, faults = [], []
    try:
        with lib.recording_lock(args):
            guard = lib.KnobGuard(sysctls=[COMPACT_UNEVICTABLE])
            try:
                COMPACT_UNEVICTABLE.write_text('0')
                modes = ['madvise', 'thpd'] * args.runs
                for index, mode in enumerate(modes, 1):
                    rows, fault_rows = one_run(args, mode, index, cache_dir / 'cache.bin')
                    summary += rows
                    faults += fault_rows
            finally:
                guard.restore()
                with contextlib.suppress(OSError):
                    Path('/proc/sys/vm/drop_caches').write_text('1\n')
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    lib.write_csv(csv_path, summary)
    lib.write_csv(faults_path, faults)
    for key, label, _, _ in TAIL_GROUPS:
        values = run_tails([{k: str(v) for k, v in f.items()} for f in faults]).get(key, [])
        if values:
            p99 = lib.bootstrap_median([v[1] / 1000 for v in values])
            worst = lib.bootstrap_median([v[2] / 1000 for v in values])
            lib.log(f'{label}: {len(values)} runs, p99 median {p99[0]:.2f} ms [95 % {p99[1]:.2f}–{p99[2]:.2f}], '
                    f'max median {worst[0]:.2f} ms [95 % {worst[1]:.2f}–{worst[2]:.2f}]')


def plot(csv_path, faults_path, png_path):
    plt = lib.pyplot()
    with open(faults_path) as f:
        faults = list(csv.DictReader(f))
    with open(csv_path) as f:
        summary = list(csv.DictReader(f))
    fig, (left, right, tails_ax) = plt.subplots(1, 3, figsize=(16, 4), width_ratios=(3, 3, 2))
    colors = {'madvise': '#c0392b', 'defer': '#2471a3'}

    # Left: latency per fault over time, one run of each mode (the median-p99 run).
    for mode, marker in (('madvise', 'x'), ('thpd', '.')):
        runs = sorted({int(r['run']) for r in summary if r['mode'] == mode})
        if not runs:
            continue
        chosen = runs[len(runs) // 2]
        pts = [r for r in faults if int(r['run']) == chosen]
        for defrag in ('madvise', 'defer'):
            sel = [r for r in pts if r['defrag'] == defrag]
            if sel:
                label = (f'{"Action=log" if mode == "madvise" else "thpd Action=mitigate"}, '
                         f'defrag={defrag} (run {chosen})')
                left.scatter([float(r['t']) for r in sel], [int(r['fault_us']) / 1000 for r in sel], s=6,
                             marker=marker, color=colors[defrag], alpha=0.6 if mode == 'madvise' else 0.9,
                             label=label)
        switch = next((r['switch_s'] for r in summary if int(r['run']) == chosen and r['switch_s']), '')
        if switch:
            left.axvline(float(switch), color='grey', linestyle='--', linewidth=1)
            left.annotate('thpd switches\ndefrag to defer', (float(switch), left.get_ylim()[1] * 0.8),
                          xytext=(4, 0), textcoords='offset points', fontsize=8, color='grey')
    left.set_yscale('log')
    left.set_xlabel('seconds since the workload started')
    left.set_ylabel('2 MiB fault latency (ms, log)')
    left.set_title('Each 2 MiB fault on fragmented memory')
    left.legend(fontsize=7, loc='lower right')

    # Right: latency distribution over all runs, by defrag value.
    groups = {
        'defrag=madvise (Action=log runs)': [int(r['fault_us']) for r in faults if r['mode'] == 'madvise'],
        'defrag=defer (after thpd switched)': [int(r['fault_us']) for r in faults
                                               if r['mode'] == 'thpd' and r['defrag'] == 'defer'],
    }
    for (label, us), color in zip(groups.items(), (colors['madvise'], colors['defer'])):
        if not us:
            continue
        us.sort()
        n = len(us)
        right.plot([u / 1000 for u in us], [100 * (i + 1) / n for i in range(n)], color=color,
                   label=f'{label}: p99 {lib.percentile(us, 99) / 1000:.1f} ms, max {us[-1] / 1000:.1f} ms')
    right.set_xscale('log')
    right.set_xlabel('2 MiB fault latency (ms, log)')
    right.set_ylabel('% of faults at or below')
    right.set_ylim(0, 100.5)
    right.grid(True, alpha=0.3)
    right.set_title('All runs')
    right.legend(fontsize=7, loc='lower right')

    # Third: each run's p99 and max, the median over the runs and its 95 % bootstrap interval.
    tails = run_tails(faults)
    tail_colors = {'log': colors['madvise'], 'mitigate': '#7d3c98', 'defer': colors['defer']}
    ticks = []
    for x, (key, label, _, _) in enumerate(TAIL_GROUPS):
        values = tails.get(key, [])
        if not values:
            continue
        for offset, index, marker in ((-0.15, 1, 'o'), (0.15, 2, '^')):
            ms = [v[index] / 1000 for v in values]
            med, lo, hi = lib.bootstrap_median(ms)
            tails_ax.errorbar(x + offset, med, yerr=[[med - lo], [hi - med]], fmt=marker, color=tail_colors[key],
                              capsize=4, markersize=7, markerfacecolor='white' if index == 2 else tail_colors[key])
            tails_ax.scatter([x + offset] * len(ms), ms, color='black', s=5, zorder=3)
        ticks.append((x, label.replace(', ', ',\n').replace(' (', '\n(')))
    tails_ax.set_xticks([t for t, _ in ticks], [label for _, label in ticks], fontsize=7)
    tails_ax.set_yscale('log')
    tails_ax.yaxis.set_major_formatter(plt.matplotlib.ticker.FuncFormatter(lambda v, _: f'{v:g}'))
    tails_ax.set_ylabel('ms (log)')
    tails_ax.set_title('Per run: p99 (filled) and max (open);\nmedian over runs, 95 % bootstrap interval', fontsize=9)
    tails_ax.grid(True, axis='y', alpha=0.3)
    lib.save_figure(fig, png_path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--thpd', help='the thpd executable (default: build/src/daemon/thpd)')
    parser.add_argument('--runs', type=int, default=5, help='runs of each mode (default 5)')
    parser.add_argument('--seconds', type=float, default=12, help='faulting time per run (default 12)')
    parser.add_argument('--max-mib', type=int, default=3072)
    parser.add_argument('--quick', action='store_true', help='one 8 s run of each mode, output to a scratch dir')
    parser.add_argument('--plot-only', action='store_true', help='redraw the PNG from the CSVs')
    lib.add_guard_arguments(parser)
    args = parser.parse_args()
    args.interval = 0.2
    if args.quick:
        args.runs, args.seconds = 1, 8
    csv_path, png_path, _ = lib.out_paths('compaction', args.quick)
    faults_path = csv_path.with_name('compaction-faults.csv')
    if not args.plot_only:
        args.thpd = lib.find_binary('thpd', args.thpd)
        run(args, csv_path, faults_path)
    plot(csv_path, faults_path, png_path)


if __name__ == '__main__':
    main()
