#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The workloads recorded into tests/data/storm/ with tools/record-storm-trace.py.

    record-storm-trace.py record --output OUT -- storm-trace-workloads.py KIND [--seconds N]

KIND is one of:
  churn    page cache over all of memory: reads a sparse file of 1.25 x MemTotal again and
           again (each read evicts the last), while a writer rewrites a 2 GiB file with fsync
  compile  page cache filled first (a sparse file of MemAvailable read once), then clean
           builds of thpd itself (meson, ninja -j2) one after the other
  heap     page cache filled first, then a JVM (OpenJDK, G1, -XX:+UseTransparentHugePages so
           the heap is madvised) whose live set grows by about 128 MiB/s to 6 GiB at most,
           with as much short-lived garbage beside it, and drops half of it every 30 s; the
           heap shrinks after GCs (-XX:G1PeriodicGCInterval, MaxHeapFreeRatio) and grows
           again, faulting huge pages
  storm    the storm of tests/real-kernel/test_storm_real_kernel.py, without thpd: memory
           fragmented and mlocked by thp_fragment.py with vm.compact_unevictable_allowed=0
           (restored at the end), then a 2 s burst of MADV_HUGEPAGE faults, then 40 s of them
           (the test's pace: 32 MiB every 0.2 s, at most 4 GiB), then calm

Needs root for storm (drop_caches, the sysctl, mlock). Every process started here is killed by
PID at the end, and the files are removed. When run under record-storm-trace.py, the times of
the phases are printed to stderr relative to its first sample (THPD_TRACE_START).
"""

import argparse
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
FRAGMENT = TOP / 'tests' / 'thpdtest' / 'thp_fragment.py'
COMPACT_UNEVICTABLE = Path('/proc/sys/vm/compact_unevictable_allowed')
# On a disk file system: page cache on tmpfs would be shmem, which without swap cannot be
# reclaimed.
WORK_DIR = Path('/var/tmp')
MIB = 1024 * 1024
START = float(os.environ.get('THPD_TRACE_START', time.monotonic()))

HEAP_JAVA = r'''
import java.util.ArrayList;
import java.util.Random;

public class HeapChurn {
    public static void main(String[] args) throws Exception {
        long seconds = Long.parseLong(args[0]);
        long liveMax = 6L << 30, live = 0;
        ArrayList<byte[]> kept = new ArrayList<>();
        Random rng = new Random(1);
        long end = System.nanoTime() + seconds * 1_000_000_000L, nextDrop = System.nanoTime() + 30_000_000_000L;
        long sink = 0;
        while (System.nanoTime() < end) {
            // About 128 MiB/s kept until the live set is full, as much garbage beside it.
            for (int i = 0; i < 16; i++) {
                byte[] b = new byte[1 << 20];
                b[rng.nextInt(b.length)] = 1;
                if (i % 2 == 0 && live < liveMax) { kept.add(b); live += b.length; }
                sink += b[0];
            }
            if (System.nanoTime() > nextDrop) {
                int n = kept.size() / 2;
                kept.subList(0, n).clear();
                live -= (long) n << 20;
                nextDrop = System.nanoTime() + 30_000_000_000L;
                System.err.println("dropped half of the live set, " + (live >> 20) + " MiB live");
            }
            Thread.sleep(60);
        }
        System.err.println("done " + sink);
    }
}
'''


def mark(text):
    print(f'mark t={time.monotonic() - START:.1f} s: {text}', file=sys.stderr, flush=True)


def meminfo(name):
    for line in Path('/proc/meminfo').read_text().splitlines():
        if line.startswith(name + ':'):
            return int(line.split()[1]) * 1024
    return 0


def kill_with_parent():
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Workload:

    def __init__(self, seconds):
        self.seconds = seconds
        self.dir = Path(tempfile.mkdtemp(prefix='thpd-trace-', dir=WORK_DIR))
        self.procs = []
        self.stop = threading.Event()

    def close(self):
        self.stop.set()
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def spawn(self, argv, **kwargs):
        p = subprocess.Popen(argv, preexec_fn=kill_with_parent, **kwargs)
        self.procs.append(p)
        return p

    def read_sparse(self, size):
        """Reads a sparse file of size bytes: its zero pages fill the page cache."""
        path = self.dir / f'sparse-{size // MIB}.bin'
        with open(path, 'wb') as f:
            f.truncate(size)
        buf = bytearray(4 * MIB)
        with open(path, 'rb', buffering=0) as f:
            while not self.stop.is_set() and f.readinto(buf):
                pass

    def fill_cache(self):
        mark('filling the page cache')
        self.read_sparse(meminfo('MemAvailable'))
        mark('page cache filled')

    def churn(self):
        def writer():
            block = os.urandom(MIB)
            while not self.stop.is_set():
                with open(self.dir / 'written.bin', 'wb') as f:
                    for _ in range(2048):
                        if self.stop.is_set():
                            break
                        f.write(block)
                    os.fsync(f.fileno())
                (self.dir / 'written.bin').unlink()
        t = threading.Thread(target=writer, daemon=True)
        t.start()
        mark('churn: reading a sparse file of 1.25 x MemTotal in a loop, rewriting 2 GiB with fsync')
        end = time.monotonic() + self.seconds
        size = meminfo('MemTotal') * 5 // 4
        while time.monotonic() < end:
            reader = threading.Thread(target=self.read_sparse, args=(size,), daemon=True)
            reader.start()
            reader.join(max(0.0, end - time.monotonic()))
            if reader.is_alive():
                break
            mark('one pass read')
        self.stop.set()
        t.join()

    def compile(self):
        self.fill_cache()
        build = self.dir / 'build'
        subprocess.run(['meson', 'setup', str(build), str(TOP)], check=True, stdout=subprocess.DEVNULL)
        mark('compile: clean builds of thpd with ninja -j2')
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            subprocess.run(['ninja', '-C', str(build), '-t', 'clean'], check=True, stdout=subprocess.DEVNULL)
            p = self.spawn(['ninja', '-C', str(build), '-j2'], stdout=subprocess.DEVNULL)
            try:
                p.wait(max(1.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                break
            mark('one build done')

    def heap(self):
        self.fill_cache()
        source = self.dir / 'HeapChurn.java'
        source.write_text(HEAP_JAVA)
        mark('heap: JVM starts')
        p = self.spawn(['java', '-XX:+UseG1GC', '-XX:+UseTransparentHugePages', '-Xms256m', '-Xmx8g',
                        '-XX:G1PeriodicGCInterval=5000', '-XX:MinHeapFreeRatio=10', '-XX:MaxHeapFreeRatio=30',
                        str(source), str(int(self.seconds))])
        p.wait()
        mark('heap: JVM exited')

    def storm(self):
        unevictable = COMPACT_UNEVICTABLE.read_text()
        try:
            COMPACT_UNEVICTABLE.write_text('0')
            self._storm()
        finally:
            COMPACT_UNEVICTABLE.write_text(unevictable)

    def _storm(self):
        def helper(*args):
            return self.spawn([sys.executable, '-B', str(FRAGMENT), *args], stdout=subprocess.PIPE, text=True)

        mark('fragmenting')
        fragmenter = helper('fragment', '--drop-caches', '--lock', '--margin-mib', '6144', '--cache-file',
                            str(self.dir / 'cache.bin'), '--cache-mib', '8192', '--hold-seconds', '900')
        for line in fragmenter.stdout:
            if json.loads(line)['event'] == 'fragmented':
                mark(f'fragmented: {line.strip()}')
                break
        time.sleep(20)
        mark('spike: MADV_HUGEPAGE faults for 2 s')
        helper('fault', '--chunk-mib', '32', '--interval', '0.2', '--seconds', '2', '--max-mib', '4096')
        time.sleep(25)
        mark('storm: MADV_HUGEPAGE faults for 40 s')
        faulter = helper('fault', '--chunk-mib', '32', '--interval', '0.2', '--seconds', '40', '--reserve-mib',
                         '4096', '--max-mib', '4096')
        for line in faulter.stdout:
            event = json.loads(line)
            if event['event'] == 'done':
                mark(f'faulting done: {line.strip()}')
                break
        time.sleep(75)
        mark('end')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('kind', choices=('churn', 'compile', 'heap', 'storm'))
    parser.add_argument('--seconds', type=float, default=180, help='length of the workload proper (default 180)')
    args = parser.parse_args()
    w = Workload(args.seconds)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        getattr(w, args.kind)()
    finally:
        w.close()


if __name__ == '__main__':
    main()
