# SPDX-License-Identifier: LGPL-2.1-or-later
"""A THP knob file in FUSE whose value another writer changes between a write and its read-back,
for the racing-writer tests.

Usage: racing_knob_fuse.py FILE WORDS... -- ARM_FILE
Mounted over the knob FILE itself; reads show WORDS with the current one in brackets, as the
kernel does, starting from the one FILE showed. A write of a word not in WORDS gets EINVAL.
While ARM_FILE exists and holds "WRITTEN RACER", the next write of WRITTEN removes it and starts
another process that writes RACER to FILE, through the file system like any writer (so that
inotify and fanotify report it, with that process as the writer), and the next read waits until
that write has landed: the read-back after WRITTEN sees RACER, every time. Runs in the
foreground until unmounted (umount --lazy FILE). Needs python3-fusepy.
"""

import errno
import os
import re
import stat
import subprocess
import sys
import threading
import time

from fusepy import FUSE, FuseOSError, Operations

RACER_TIMEOUT = 30.0


class RacingKnob(Operations):
    def __init__(self, path, words, current, arm_file):
        self.path = path
        self.words = words
        self.current = current
        self.arm_file = arm_file
        self.lock = threading.Lock()
        self.racer_word = None
        self.racer_landed = threading.Event()
        self.racer_landed.set()

    def getattr(self, path, fh=None):
        if path != '/':
            raise FuseOSError(errno.ENOENT)
        now = time.time()
        return dict(st_mode=stat.S_IFREG | 0o644, st_nlink=1, st_size=4096, st_ctime=now, st_mtime=now, st_atime=now)

    def open(self, path, flags):
        return 0

    def truncate(self, path, length, fh=None):
        return 0

    def read(self, path, size, offset, fh):
        self.racer_landed.wait(RACER_TIMEOUT)
        with self.lock:
            shown = ' '.join(f'[{w}]' if w == self.current else w for w in self.words) + '\n'
        return shown.encode()[offset:offset + size]

    def _arm(self):
        try:
            with open(self.arm_file) as f:
                written, racer = f.read().split()
        except FileNotFoundError:
            return None
        return written, racer

    def write(self, path, data, offset, fh):
        word = data.decode(errors='replace').strip()
        if word not in self.words:
            raise FuseOSError(errno.EINVAL)
        with self.lock:
            self.current = word
            armed = self._arm()
            racer = None
            if armed and armed[0] == word:
                os.unlink(self.arm_file)
                racer = self.racer_word = armed[1]
                self.racer_landed.clear()
            elif word == self.racer_word:
                self.racer_word = None
                self.racer_landed.set()
        if racer:
            # Not waited for: this write holds the file's lock until it returns.
            subprocess.Popen(['sh', '-c', 'printf %s "$1" > "$2"', 'racer', racer, self.path],
                             stdin=subprocess.DEVNULL)
        return len(data)


def main():
    path = sys.argv[1]
    dash = sys.argv.index('--')
    words = sys.argv[2:dash]
    arm_file = sys.argv[dash + 1]
    with open(path) as f:
        match = re.search(r'\[([^\]]+)\]', f.read())
    FUSE(RacingKnob(path, words, match.group(1), arm_file), path, foreground=True, nothreads=False,
         direct_io=True, nonempty=True)


if __name__ == '__main__':
    main()
