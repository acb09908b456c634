# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the outcome benchmarks share (bench/outcomes/*.py; see README.md there).

Each scenario runs thpd on this machine's real /sys with the shipped policies (copied from
policy/ into a private, root-owned policy directory) and a thpd.conf of its own, follows a
private systemd --user manager (the integration harness' Stack: systemd is not PID 1 on the
development machines) and starts its workload as a unit of that manager with systemd-run, so
thpd applies the policies on the unit's start job as it does in production.

Safety, in this order:
  * the quiet guard (recording_lock, refuse_if_loaded): a recording (a run without --quick)
    refuses, with a message and a non-zero exit, while the 1-minute load average is above
    --max-load (default 0.5) or while another run holds the lock (it does not wait), and checks
    the load again once it holds the lock; --quick skips the load check and waits for the lock;
  * RealSysLock: every scenario holds /tmp/thpd-real-sys.lock (flock(2), the same lock as
    `flock /tmp/thpd-real-sys.lock CMD`) while it touches /sys or fills memory, and releases it
    between scenarios;
  * KnobGuard: before anything is written, every writable file below
    /sys/kernel/mm/transparent_hugepage, every hugetlb pool's nr_hugepages and the vm sysctls a
    scenario names are snapshotted; they are restored on exit (atexit, and SIGTERM/SIGINT/
    SIGHUP are turned into SystemExit so that the finally blocks and atexit run) and compared
    with the snapshot, a difference printed loudly.
Helper processes get PR_SET_PDEATHSIG=SIGKILL, so memory they hold is freed if we die.
"""

import atexit
import contextlib
import csv
import ctypes
import fcntl
import json
import os
import platform
import random
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

# Debian's python3 (its python3-matplotlib, python3-gi): a python3 earlier on PATH (pyenv) has
# neither. The same interpreter the project's tools use.
SYSTEM_PYTHON = '/usr/bin/python3'
if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.access(SYSTEM_PYTHON, os.X_OK) \
        and not os.environ.get('THPD_OUTCOMES_ANY_PYTHON'):
    os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, '-B', *sys.argv])

HERE = Path(__file__).resolve().parent
TOP = HERE.parents[1]
import thpdtest  # noqa: E402
from thpdtest.thp_fragment import meminfo  # noqa: E402,F401  (lib.meminfo for the scenarios)

THP = Path('/sys/kernel/mm/transparent_hugepage')
HUGEPAGES = Path('/sys/kernel/mm/hugepages')
LOCK_PATH = '/tmp/thpd-real-sys.lock'
# A recording refuses to start above this 1-minute load average (issue 25: the first figures
# were taken at load 5-12, and CPU contention, not THP, decided their latency tails).
LOAD_LIMIT = 0.5
DOCS = TOP / 'docs'
DATA = DOCS / 'outcomes'


# ---------------------------------------------------------------------------------------------
# The lock and the knobs

class RealSysLock:
    """flock(2) on /tmp/thpd-real-sys.lock; waits (saying so) while someone else holds it, or
    with wait=False exits (status 1, saying who holds it) instead."""

    def __init__(self, path=LOCK_PATH, wait=True):
        self.path = path
        self.wait = wait
        self.fd = None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder()
            if holder in _ancestors():
                # `flock /tmp/thpd-real-sys.lock python3 bench/outcomes/NAME.py`: our caller
                # holds it for us (a second flock here would wait for ever).
                log(f'{self.path} is held by our caller (PID {holder})')
                os.close(self.fd)
                self.fd = None
                return self
            if not self.wait:
                os.close(self.fd)
                self.fd = None
                sys.exit(f'outcomes: refusing to record: {self.path} is held by PID {holder} (another '
                         f'real-/sys run or benchmark); run again when it is done')
            log(f'waiting for {self.path} (another real-/sys run holds it)')
            began = time.monotonic()
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            log(f'got {self.path} after {time.monotonic() - began:.0f} s')
        return self

    def _holder(self):
        """The PID holding the flock on our file (from /proc/locks), or None."""
        inode = os.fstat(self.fd).st_ino
        for line in Path('/proc/locks').read_text().splitlines():
            fields = line.split()
            # Waiters are listed as "N: -> FLOCK ...".
            if len(fields) > 5 and fields[1] == 'FLOCK' and fields[5].rsplit(':', 1)[-1] == str(inode):
                return int(fields[4])
        return None

    def __exit__(self, *exc):
        if self.fd is None:
            return
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = None


def load1():
    """The 1-minute load average."""
    return float(Path('/proc/loadavg').read_text().split()[0])


def add_guard_arguments(parser):
    """--max-load, the quiet guard's threshold (every recording script has it)."""
    parser.add_argument('--max-load', type=float, default=LOAD_LIMIT,
                        help=f'refuse to record above this 1-minute load average (default {LOAD_LIMIT}; '
                             f'--quick does not check)')


def refuse_if_loaded(args, when='before starting'):
    """Exits (status 1) when this is a recording and the 1-minute load average is above
    args.max_load; a --quick run only logs the load."""
    load = load1()
    if getattr(args, 'quick', False):
        log(f'--quick: load average {load:.2f} {when}, not checked (a smoke run records nothing)')
        return
    if load > args.max_load:
        sys.exit(f'outcomes: refusing to record: the 1-minute load average is {load:.2f} {when}, above '
                 f'{args.max_load} (other work would decide the figures). Wait for a quiet machine, '
                 f'or smoke-test with --quick')
    log(f'load average {load:.2f} {when} (limit {args.max_load})')


def settle_after_own_work(args, what, timeout=300):
    """A recording's own preparation (building a cluster) raises the load it then checks: wait,
    saying so, up to timeout seconds for the load to fall back under the limit; the checks of
    recording_lock() decide after that."""
    if getattr(args, 'quick', False) or load1() <= args.max_load:
        return
    log(f'load average {load1():.2f} after {what}: waiting up to {timeout} s for it to fall under {args.max_load}')
    deadline = time.monotonic() + timeout
    while load1() > args.max_load and time.monotonic() < deadline:
        time.sleep(5)


@contextlib.contextmanager
def recording_lock(args):
    """The real-/sys lock for a run: a recording checks the load, refuses if someone holds the
    lock, and checks the load again once it has it; --quick waits for the lock, unchecked."""
    quick = getattr(args, 'quick', False)
    refuse_if_loaded(args, 'before taking the lock')
    with RealSysLock(wait=quick):
        if not quick:
            refuse_if_loaded(args, 'with the lock held')
        yield


def _ancestors():
    pids = set()
    pid = os.getppid()
    while pid > 1:
        pids.add(pid)
        try:
            stat = Path(f'/proc/{pid}/stat').read_text()
        except OSError:
            break
        pid = int(stat[stat.rindex(')') + 2:].split()[1])
    return pids


def current_word(path):
    content = Path(path).read_text()
    match = re.search(r'\[([^\]]+)\]', content)
    return match.group(1) if match else content.strip()


def knob(name):
    return current_word(THP / name)


def pool_files():
    return sorted(HUGEPAGES.glob('hugepages-*/nr_hugepages'))


def snapshot(sysctls=()):
    """{path: value} of every writable THP knob, every pool size and the named sysctl files."""
    state = {}
    for path in sorted(THP.rglob('*')):
        # Mode bits, not access(): root may "write" the read-only counters.
        if path.is_file() and 'stats' not in path.parts and path.stat().st_mode & 0o200:
            state[str(path)] = current_word(path)
    for path in pool_files():
        state[str(path)] = path.read_text().strip()
    for path in sysctls:
        state[str(path)] = Path(path).read_text().strip()
    return state


def restore(state):
    """Writes back what differs; shmem_enabled before per-size knobs (the kernel interlocks
    force and inherit). Returns the paths that still differ afterwards."""
    order = sorted(state, key=lambda p: (not p.endswith('/shmem_enabled') or 'hugepages-' in p, p))
    for path in order:
        try:
            if current_word(path) != state[path]:
                Path(path).write_text(state[path])
        except OSError as e:
            print(f'outcomes: could not restore {path}: {e}', file=sys.stderr)
    return [p for p in order if current_word(p) != state[p]]


class KnobGuard:
    """Snapshot now; restore at exit (see the module docstring)."""

    def __init__(self, sysctls=()):
        self.state = snapshot(sysctls)
        self.done = False
        atexit.register(self.restore)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, _exit_on_signal)

    def restore(self):
        if self.done:
            return
        self.done = True
        left = restore(self.state)
        if left:
            print(f'outcomes: WARNING: these knobs differ from the snapshot after restoring: {left}',
                  file=sys.stderr)
        else:
            log('every THP knob, pool and sysctl is back to its snapshot')


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)


def check_root():
    """Exits unless this can run; from here on SIGTERM/SIGINT/SIGHUP raise SystemExit, so the
    finally blocks clean up even while waiting for the lock."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    if os.geteuid() != 0:
        sys.exit('outcome benchmarks write /sys: run them as root')
    reason = thpdtest.stack_unavailable_reason()
    if reason:
        sys.exit(f'cannot start a private systemd manager: {reason}')
    if not os.access(THP / 'enabled', os.W_OK):
        sys.exit(f'{THP} is read-only here')


# ---------------------------------------------------------------------------------------------
# thpd and its manager

def find_binary(name, explicit=None):
    folders = {'thpd': 'daemon', 'thpd-ctl': 'ctl'}
    candidates = [explicit] if explicit else [TOP / 'build' / 'src' / folders[name] / name]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    sys.exit(f'no {name} executable: build first (meson setup build && meson compile -C build) '
             f'or pass --{name}')


class Session:
    """A private systemd --user manager and thpd on the real /sys with the shipped policies.

    config: the text of the thpd.conf passed with --config."""

    def __init__(self, thpd, config='', policies=None):
        self.tmp = Path(tempfile.mkdtemp(prefix='thpd-outcomes-'))
        self.policy_dir = self.tmp / 'policy.d'
        self.policy_dir.mkdir(mode=0o755)
        for conf in (policies or sorted((TOP / 'policy').glob('*.conf'))):
            shutil.copy(conf, self.policy_dir / Path(conf).name)
            (self.policy_dir / Path(conf).name).chmod(0o644)
        self.config = self.tmp / 'thpd.conf'
        self.config.write_text(config)
        self.thpd_bin = thpd
        self.stack = thpdtest.Stack()
        self.daemon = None

    def __enter__(self):
        self.stack.start()
        argv = [self.thpd_bin, '--user', f'--runtime-dir={self.tmp / "run"}',
                f'--policy-dir={self.policy_dir}', f'--config={self.config}', '--log-level=info']
        self.daemon = thpdtest.Thpd(argv, self.stack.env, self.tmp / 'thpd.log', self.tmp / 'notify')
        self.daemon.wait_ready()
        return self

    def __exit__(self, *exc):
        try:
            if self.daemon is not None:
                with contextlib.suppress(Exception):
                    self.stack.stop_all_units()
                if self.daemon.running:
                    with contextlib.suppress(AssertionError):
                        self.daemon.stop()
                self.daemon.close()
        finally:
            self.stack.close()
            shutil.rmtree(self.tmp, ignore_errors=True)

    def log(self):
        return self.daemon.log()

    def start_unit(self, name, *cmd, properties=()):
        self.stack.start_unit(name, *cmd, properties=properties)

    def stop_unit(self, name):
        self.stack.stop_unit(name)

    def main_pid(self, name):
        out = self.stack.run('systemctl', '--user', 'show', '--property=MainPID', '--value', name).stdout
        return int(out.strip() or 0)

    def unit_pids(self, name):
        """Every process in the unit's control group."""
        cgroup = self.stack.run('systemctl', '--user', 'show', '--property=ControlGroup', '--value',
                                name).stdout.strip()
        pids = set()
        for hierarchy in thpdtest.cgroup_hierarchies():
            procs = Path(f'{hierarchy}{cgroup}/cgroup.procs')
            with contextlib.suppress(FileNotFoundError):
                pids.update(int(p) for p in procs.read_text().split())
        return sorted(pids)


def wait_knobs(timeout=10, **expected):
    expected = {k.replace('__', '/'): v for k, v in expected.items()}
    thpdtest.wait_until(lambda: all(knob(k) == v for k, v in expected.items()), timeout,
                        lambda: f'knobs {expected}, have { {k: knob(k) for k in expected} }')


def pool_pages(size_kb=2048, field='nr_hugepages'):
    return int((HUGEPAGES / f'hugepages-{size_kb}kB' / field).read_text())


# ---------------------------------------------------------------------------------------------
# /proc

def vmstat():
    return {k: int(v) for k, v in (line.split() for line in Path('/proc/vmstat').read_text().splitlines())}


def smaps_rollup(pid):
    """{field: kB} of /proc/PID/smaps_rollup, {} if the process is gone."""
    try:
        text = Path(f'/proc/{pid}/smaps_rollup').read_text()
    except (FileNotFoundError, ProcessLookupError):
        return {}
    values = {}
    for line in text.splitlines()[1:]:
        name, rest = line.split(':', 1)
        values[name] = int(rest.split()[0])
    return values


def status_kb(pid, field):
    try:
        for line in Path(f'/proc/{pid}/status').read_text().splitlines():
            if line.startswith(field + ':'):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def kill_with_parent():
    """preexec_fn: the child gets SIGKILL when this process dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def busy_cpu_percent(seconds=1.0):
    """How busy both CPUs were (all of /proc/stat but idle and iowait) over a short interval."""
    def read():
        fields = [int(x) for x in Path('/proc/stat').read_text().split('\n', 1)[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]
    total0, idle0 = read()
    time.sleep(seconds)
    total1, idle1 = read()
    return round(100 * (1 - (idle1 - idle0) / max(1, total1 - total0)), 1)


def machine():
    """What docs/outcomes.md says about the machine, as a dict (also stored in the CSVs' JSON)."""
    model = ''
    with contextlib.suppress(OSError):
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    return {
        'kernel': platform.release(),
        'cpus': os.cpu_count(),
        'cpu_model': model,
        'mem_total_gib': round(meminfo()['MemTotal'] / 1024 / 1024, 1),
        'loadavg': Path('/proc/loadavg').read_text().split()[:3],
        'date': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()),
    }


# ---------------------------------------------------------------------------------------------
# Figures and output

def log(message):
    print(f'[{time.strftime("%H:%M:%S")}] {message}', file=sys.stderr, flush=True)


def percentile(samples, p):
    """Nearest-rank percentile, p in 0..100 (the benchmarks' usual definition)."""
    ordered = sorted(samples)
    if not ordered:
        return float('nan')
    return ordered[max(0, -(-len(ordered) * p // 100) - 1)]


def bootstrap_median(values, resamples=10_000, seed=25, confidence=0.95):
    """(median, low, high): the median of values and a percentile-bootstrap interval for it
    (resampling the values with replacement, a fixed seed so the interval is reproducible).
    With 5 values the interval can only take a few distinct values: read it as coarse."""
    values = [v for v in values if v == v]
    if not values:
        return (float('nan'),) * 3
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1 - confidence) / 2
    low = medians[int(tail * resamples)]
    high = medians[min(resamples - 1, int((1 - tail) * resamples))]
    return statistics.median(values), low, high


def spread(values):
    """(median, min, max) of the runs' figures."""
    values = [v for v in values if v == v]
    if not values:
        return (float('nan'),) * 3
    return statistics.median(values), min(values), max(values)


def cell(values, fmt='{:.1f}'):
    """"median [min–max]", the cell format of outcomes-measured.md."""
    med, lo, hi = spread(values)
    if med != med:
        return '—'
    if len([v for v in values if v == v]) == 1:
        return fmt.format(med)
    return f'{fmt.format(med)} [{fmt.format(lo)}–{fmt.format(hi)}]'


def shown(path):
    """path relative to the source tree when inside it (docs/outcomes/...), else absolute."""
    path = Path(path).resolve()
    return path.relative_to(TOP) if path.is_relative_to(TOP) else path


def write_csv(path, rows):
    """rows: list of dicts with the same keys."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'w', newline='') as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    log(f'wrote {shown(path)}')


def write_json(path, value):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(value, indent=1, sort_keys=True) + '\n')


def pyplot():
    """matplotlib's pyplot without a display (Debian: apt-get install python3-matplotlib)."""
    try:
        import matplotlib
    except ImportError:
        sys.exit('plots need matplotlib: apt-get install python3-matplotlib')
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    plt.rcParams.update({'figure.dpi': 100, 'savefig.dpi': 100, 'font.size': 9,
                         'svg.hashsalt': 'thpd', 'pdf.fonttype': 42})
    return plt


def save_figure(fig, path):
    """PNG without a timestamp in its metadata, so an unchanged plot stays byte-identical."""
    fig.savefig(path, metadata={'Software': None}, bbox_inches='tight')
    log(f'wrote {shown(path)}')


def out_paths(name, quick):
    """(csv path, png path, json path): docs/outcomes/NAME.csv etc., or in a scratch directory
    for --quick (a smoke run must not replace the committed figures)."""
    base = Path(tempfile.mkdtemp(prefix=f'outcomes-{name}-')) if quick else DATA
    return base / f'{name}.csv', base / f'{name}.png', base / f'{name}.json'
