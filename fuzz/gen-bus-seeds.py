#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes the seed corpus of fuzz-bus (fuzz/fuzz-bus/): one well-formed call of every
method, in the input layout fuzz/fuzz-bus.c describes. Run from the source root."""

import struct
from pathlib import Path

METHODS = ['ListPolicies', 'Explain', 'Reload', 'SetOverride', 'ClearOverride', 'Await', 'Get', 'GetAll',
           'Set', 'Introspect', 'NoSuchMethod', 'Explain@/org/thpd1/x', 'GetManagedObjects', 'Await(no interface)']


class Body:
    def __init__(self):
        self.b = bytearray()

    def pad(self, n):
        while len(self.b) % n:
            self.b.append(0)

    def s(self, text, sig=False):
        data = text.encode()
        if sig:
            self.b += bytes([len(data)]) + data + b'\0'
        else:
            self.pad(4)
            self.b += struct.pack('<I', len(data)) + data + b'\0'
        return self

    def t(self, value):
        self.pad(8)
        self.b += struct.pack('<Q', value)
        return self

    def dict_ss(self, pairs):
        self.pad(4)
        at = len(self.b)
        self.b += b'\0\0\0\0'
        self.pad(8)
        start = len(self.b)
        for key, value in pairs:
            self.pad(8)
            self.s(key).s(value)
        struct.pack_into('<I', self.b, at, len(self.b) - start)
        return self


def seed(name, method, signature='', body=b'', uid=0, leave=False, sender=0, flags=0):
    data = bytes([METHODS.index(method), flags, uid, (sender << 1) | int(leave), len(signature)])
    data += signature.encode() + bytes(body)
    Path('fuzz/fuzz-bus', name).write_bytes(data)


Path('fuzz/fuzz-bus').mkdir(parents=True, exist_ok=True)
seed('list-policies', 'ListPolicies')
seed('explain-all', 'Explain', 's', Body().s('').b)
seed('explain-enabled', 'Explain', 's', Body().s('enabled').b)
seed('explain-mthp', 'Explain', 's', Body().s('hugepages-64kB/enabled').b)
seed('explain-unknown', 'Explain', 's', Body().s('no-such-knob').b)
seed('reload-root', 'Reload')
seed('reload-nobody', 'Reload', uid=2)
seed('set-override', 'SetOverride', 'a{ss}t', Body().dict_ss([('enabled', 'never')]).t(0).b)
seed('set-override-timed', 'SetOverride', 'a{ss}t',
     Body().dict_ss([('defrag', 'defer'), ('khugepaged/defrag', '0')]).t(3600 * 10**6).b)
seed('set-override-bad', 'SetOverride', 'a{ss}t',
     Body().dict_ss([('khugepaged/max_ptes_none', '512'), ('enabled', 'sometimes')]).t(0).b)
seed('set-override-nobody', 'SetOverride', 'a{ss}t', Body().dict_ss([('enabled', 'always')]).t(0).b, uid=2)
seed('clear-override', 'ClearOverride')
seed('await-pending', 'Await', 's', Body().s('fuzz-a.service').b, sender=3)
seed('await-leaves', 'Await', 's', Body().s('tmpl@1.service').b, leave=True, sender=4)
seed('await-no-policy', 'Await', 's', Body().s('redis.service').b)
seed('await-not-a-unit', 'Await', 's', Body().s('../x').b)
seed('get-knobs', 'Get', 'ss', Body().s('org.thpd1.Manager').s('Knobs').b)
seed('get-all', 'GetAll', 's', Body().s('org.thpd1.Manager').b)
seed('set-status', 'Set', 'ssv', Body().s('org.thpd1.Manager').s('Status').s('s', sig=True).s('x').b)
seed('introspect', 'Introspect')
seed('no-such-method', 'NoSuchMethod', 's', Body().s('x').b)
seed('other-path', 'Explain@/org/thpd1/x', 's', Body().s('enabled').b)
seed('managed-objects', 'GetManagedObjects')
seed('await-no-interface', 'Await(no interface)', 's', Body().s('fuzz-b.service').b, flags=1)
