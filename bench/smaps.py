# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a process's memory is made of: /proc/PID/smaps summed per mapped object and ELF segment.

Each file mapping is named after its object and the part of the ELF file it holds, from the file's
program headers: "text" (executable code), "rodata" (read-only data and headers), "relro" (the
part of the writable segment that the dynamic loader relocates at start and then write-protects:
GOT, .data.rel.ro, .dynamic), "data" (.data and the lazy GOT) and "bss" (the anonymous mapping
that continues the writable segment). Other mappings keep the kernel's name ([heap], [stack]) or
are summed as [anon]. The daemon's own executable is named "(executable)", so that two daemons'
tables line up row by row.

Private_Dirty is what a process costs the machine on its own: pages only it maps that cannot be
dropped (heap, stack, relocated and written data). Pss shares every page among the processes that
map it, so it also depends on what else runs."""

import os
import struct
from pathlib import Path

FIELDS = ('Rss', 'Pss', 'Private_Dirty')
PAGE = os.sysconf('SC_PAGE_SIZE')
PT_LOAD = 1
PT_GNU_RELRO = 0x6474e552


def _page_down(n):
    return n & ~(PAGE - 1)


def _page_up(n):
    return _page_down(n + PAGE - 1)


def elf_layout(path):
    """(first PT_LOAD vaddr, [(vaddr, memsz, flags)] of PT_LOAD, (vaddr, memsz) of PT_GNU_RELRO or None)
    of a 64-bit little-endian ELF file, or None if it is not one."""
    try:
        with open(path, 'rb') as f:
            header = f.read(64)
            if len(header) < 64 or header[:4] != b'\x7fELF' or header[4] != 2 or header[5] != 1:
                return None
            phoff, = struct.unpack_from('<Q', header, 32)
            phentsize, phnum = struct.unpack_from('<HH', header, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return None
    loads, relro = [], None
    for i in range(phnum):
        p_type, p_flags, _, p_vaddr, _, _, p_memsz, _ = struct.unpack_from('<IIQQQQQQ', table, i * phentsize)
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_memsz, p_flags))
        elif p_type == PT_GNU_RELRO:
            relro = (p_vaddr, p_memsz)
    if not loads:
        return None
    return _page_down(min(v for v, _, _ in loads)), loads, relro


def read_smaps(pid):
    """[{start, end, perms, offset, path, Rss, Pss, Private_Dirty, ...}] in address order."""
    maps = []
    for line in Path(f'/proc/{pid}/smaps').read_text().splitlines():
        fields = line.split()
        if not fields:
            continue
        if not fields[0].endswith(':'):
            start, end = (int(x, 16) for x in fields[0].split('-'))
            maps.append({'start': start, 'end': end, 'perms': fields[1], 'offset': int(fields[2], 16),
                         'path': line.split(None, 5)[5] if len(fields) > 5 else ''})
        elif len(fields) >= 2 and fields[1].isdigit():
            maps[-1][fields[0][:-1]] = int(fields[1])
    return maps


def _exe_path(pid):
    try:
        return os.readlink(f'/proc/{pid}/exe')
    except OSError:
        return None


def by_mapping(pid):
    """{name: {Rss, Pss, Private_Dirty}} in kB, one entry per object and segment (see the module
    docstring)."""
    maps = read_smaps(pid)
    exe = _exe_path(pid)
    layouts = {}
    bases = {}
    for m in maps:
        path = m['path']
        if path.startswith('/') and path not in layouts:
            layouts[path] = elf_layout(path)
        if path.startswith('/') and m['offset'] == 0 and path not in bases and layouts[path]:
            bases[path] = m['start'] - layouts[path][0]

    totals = {}
    previous = None
    for m in maps:
        path = m['path']
        name = path
        if path.startswith('/'):
            obj = '(executable)' if path == exe else os.path.basename(path)
            name = f'{obj} {_segment(m, layouts.get(path), bases.get(path))}'
        elif path == '':
            name = '[anon]'
            # The anonymous tail of a writable PT_LOAD (memsz beyond filesz) is that object's .bss.
            if previous and previous['path'].startswith('/') and previous['end'] == m['start']:
                layout, base = layouts.get(previous['path']), bases.get(previous['path'])
                if layout and base is not None:
                    bss_end = max(_page_up(base + v + s) for v, s, flags in layout[1] if flags & 2)
                    if m['start'] < bss_end:
                        obj = '(executable)' if previous['path'] == exe else os.path.basename(previous['path'])
                        name = f'{obj} bss'
        row = totals.setdefault(name, dict.fromkeys(FIELDS, 0))
        for field in FIELDS:
            row[field] += m.get(field, 0)
        previous = m
    return totals


def _segment(m, layout, base):
    perms = m['perms']
    if 'x' in perms:
        return 'text'
    if 'w' in perms:
        return 'data'
    if layout and base is not None:
        relro = layout[2]
        if relro and _page_down(base + relro[0]) <= m['start'] < _page_up(base + relro[0] + relro[1]):
            return 'relro'
    return 'rodata'


def rollup(pid):
    """{field: kB} from /proc/PID/smaps_rollup."""
    fields = {}
    for line in Path(f'/proc/{pid}/smaps_rollup').read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].endswith(':') and parts[1].isdigit():
            fields[parts[0][:-1]] = int(parts[1])
    return fields


def threads(pid):
    return len(os.listdir(f'/proc/{pid}/task'))
