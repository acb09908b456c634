# SPDX-License-Identifier: LGPL-2.1-or-later
"""Maps SIZE MiB of anonymous memory, asks for huge pages (MADV_HUGEPAGE), touches every page,
writes "ready" to READY_FILE and sleeps until killed: a service that holds THP.

Usage: thp_hold.py SIZE_MIB READY_FILE"""

import mmap
import sys
import time
from pathlib import Path

size = int(sys.argv[1]) << 20
memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
memory.madvise(mmap.MADV_HUGEPAGE)
for offset in range(0, size, mmap.PAGESIZE):
    memory[offset] = 1
Path(sys.argv[2]).write_text('ready\n')
while True:
    time.sleep(3600)
