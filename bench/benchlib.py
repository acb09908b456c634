# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the benchmarks share: reading a process's CPU time and context switches, nearest-rank
percentiles, and the plain-text table they print."""

from pathlib import Path


def cpu_ticks(pid):
    """utime + stime of every thread of pid, in CLK_TCK ticks (fields 14 and 15 of stat)."""
    stat = Path(f'/proc/{pid}/stat').read_text()
    fields = stat[stat.rindex(')') + 2:].split()
    return int(fields[11]) + int(fields[12])


def context_switches(pid):
    """{tid: voluntary + nonvoluntary context switches} for every thread of pid."""
    counts = {}
    for task in Path(f'/proc/{pid}/task').iterdir():
        try:
            lines = (task / 'status').read_text().splitlines()
        except FileNotFoundError:
            continue
        counts[int(task.name)] = sum(int(line.split()[1]) for line in lines
                                     if line.startswith(('voluntary_ctxt_switches:',
                                                         'nonvoluntary_ctxt_switches:')))
    return counts


def switches_between(before, after):
    """Switches in the interval; a thread that appeared counts from zero."""
    return sum(n - before.get(tid, 0) for tid, n in after.items())


def percentile(samples, p):
    """Nearest-rank percentile, p in 0..100."""
    ordered = sorted(samples)
    return ordered[max(0, -(-len(ordered) * p // 100) - 1)]


def render(rows):
    """Rows of four columns as a table, the first row the header."""
    widths = [max(len(str(r[i])) for r in rows) for i in range(4)]
    lines = []
    for n, row in enumerate(rows):
        lines.append('  '.join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            lines.append('  '.join('-' * w for w in widths))
    return '\n'.join(lines)
