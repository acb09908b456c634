# SPDX-License-Identifier: LGPL-2.1-or-later
"""Maps SIZE MiB of anonymous memory, asks for huge pages (MADV_HUGEPAGE) unless --no-advise,
touches every page, writes "ready" to READY_FILE and sleeps until killed: a service that holds
THP. With --no-advise it gets huge pages only where THP "enabled" is always for it, as a program
that never heard of madvise (MongoDB 8's TCMalloc relies on that).

Usage: thp_hold.py [--no-advise] SIZE_MIB READY_FILE"""

import mmap
import sys
import time
from pathlib import Path

args = sys.argv[1:]
advise = args[0] != '--no-advise'
if not advise:
    args = args[1:]
size = int(args[0]) << 20
memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
if advise:
    memory.madvise(mmap.MADV_HUGEPAGE)
for offset in range(0, size, mmap.PAGESIZE):
    memory[offset] = 1
Path(args[1]).write_text('ready\n')
while True:
    time.sleep(3600)
