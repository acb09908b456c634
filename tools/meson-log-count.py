#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Counts the tests of one meson test run from its JSON log, one result a line.

    tools/meson-log-count.py LOG    prints "PASSED FAILED SKIPPED"

OK and EXPECTEDFAIL pass, SKIP skips, any other result (FAIL, TIMEOUT, UNEXPECTEDPASS, ERROR)
fails. tools/test.sh and tools/chroot-test.sh count their meson layers with it.
"""

import json
import sys

passed = failed = skipped = 0
with open(sys.argv[1]) as log:
    for line in log:
        result = json.loads(line)['result']
        if result in ('OK', 'EXPECTEDFAIL'):
            passed += 1
        elif result == 'SKIP':
            skipped += 1
        else:
            failed += 1
print(passed, failed, skipped)
