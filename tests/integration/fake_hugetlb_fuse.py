# SPDX-License-Identifier: LGPL-2.1-or-later
"""A stingy hugetlb pool directory (hugepages-<N>kB/) in FUSE, for the pool-shortfall test.

Usage: fake_hugetlb_fuse.py MOUNTPOINT CAP_FILE WRITE_LOG [FAIL_FILE]
Like the kernel, a write to nr_hugepages succeeds but allocates at most the number of pages
CAP_FILE holds (read at each write, so a test can "free memory" by raising it); nr_hugepages and
free_hugepages then read what was allocated. A value that is not a number gets EINVAL. While
FAIL_FILE exists, every write to nr_hugepages fails with the errno it names (EIO, EBUSY) and
changes nothing. Every write to nr_hugepages is appended to WRITE_LOG, one line each. Runs in the
foreground until unmounted (umount --lazy MOUNTPOINT). Needs python3-fusepy.
"""

import errno
import stat
import sys
import threading
import time

from fusepy import FUSE, FuseOSError, Operations

FILES = ('nr_hugepages', 'free_hugepages', 'surplus_hugepages', 'resv_hugepages', 'nr_overcommit_hugepages')


class StingyPool(Operations):
    def __init__(self, cap_file, write_log, fail_file=None):
        self.cap_file = cap_file
        self.write_log = write_log
        self.fail_file = fail_file
        self.pages = 0
        self.lock = threading.Lock()

    def _content(self, name):
        if name in ('nr_hugepages', 'free_hugepages'):
            return f'{self.pages}\n'.encode()
        return b'0\n'

    def getattr(self, path, fh=None):
        now = time.time()
        if path == '/':
            return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2, st_ctime=now, st_mtime=now, st_atime=now)
        name = path.lstrip('/')
        if name not in FILES:
            raise FuseOSError(errno.ENOENT)
        mode = 0o644 if name in ('nr_hugepages', 'nr_overcommit_hugepages') else 0o444
        return dict(st_mode=stat.S_IFREG | mode, st_nlink=1, st_size=4096, st_ctime=now, st_mtime=now, st_atime=now)

    def readdir(self, path, fh):
        return ['.', '..', *FILES]

    def open(self, path, flags):
        if path.lstrip('/') not in FILES:
            raise FuseOSError(errno.ENOENT)
        return 0

    def read(self, path, size, offset, fh):
        with self.lock:
            return self._content(path.lstrip('/'))[offset:offset + size]

    def truncate(self, path, length, fh=None):
        return 0

    def write(self, path, data, offset, fh):
        name = path.lstrip('/')
        if name != 'nr_hugepages':
            raise FuseOSError(errno.EACCES)
        try:
            wanted = int(data.decode().strip())
        except ValueError:
            raise FuseOSError(errno.EINVAL)
        with open(self.write_log, 'a') as f:
            f.write(f'{wanted}\n')
        if self.fail_file:
            try:
                with open(self.fail_file) as f:
                    raise FuseOSError(getattr(errno, f.read().strip()))
            except FileNotFoundError:
                pass
        with open(self.cap_file) as f:
            cap = int(f.read())
        with self.lock:
            self.pages = min(wanted, cap) if wanted > self.pages else wanted
        return len(data)


def main():
    mountpoint, cap_file, write_log = sys.argv[1:4]
    fail_file = sys.argv[4] if len(sys.argv) > 4 else None
    FUSE(StingyPool(cap_file, write_log, fail_file), mountpoint, foreground=True, nothreads=True, direct_io=True, nonempty=True)


if __name__ == '__main__':
    main()
