#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes cockpit/patternfly.css, the PatternFly 6 subset the Cockpit page ships, from the npm
package @patternfly/patternfly (MIT).

No Cockpit gives a page a shared stylesheet (base1/patternfly.css went in Cockpit 273), so the
page carries its own: the release's prebuilt patternfly-base.css (tokens, reset, dark theme)
followed by the prebuilt CSS of each component the page uses, as the release has them, with one
change: the @font-face rules are left out. They point at ./assets/fonts/, which the page does
not have; cockpit/thpd.css declares the same Red Hat fonts from cockpit-ws' static/fonts/.

    tools/update-patternfly.py [VERSION]           npm pack @patternfly/patternfly@VERSION
    tools/update-patternfly.py --tarball FILE      an already downloaded tarball

VERSION defaults to the one the file in the tree has. After an update, look at the page on
each Cockpit the system layer runs (tests/system/test_system.py test_9_cockpit) and keep
debian/copyright's entry in step.
"""

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[1]
OUTPUT = SOURCE_ROOT / 'cockpit' / 'patternfly.css'
PACKAGE = '@patternfly/patternfly'

# What cockpit/index.html and the elements thpd.js builds use, in the order the release's own
# patternfly.css has them.
FILES = [
    'patternfly-base.css',
    'components/Alert/alert.css',
    'components/Button/button.css',
    'components/Card/card.css',
    'components/Form/form.css',
    'components/FormControl/form-control.css',
    'components/Page/page.css',
    'components/Table/table.css',
    'components/Title/title.css',
]

# An @font-face block has no nested braces.
FONT_FACE = re.compile(r'@font-face\s*\{[^{}]*\}\n?')


def current_version():
    if not OUTPUT.exists():
        return None
    match = re.search(r'@patternfly/patternfly (\S+)', OUTPUT.read_text()[:2000])
    return match.group(1) if match else None


def npm_pack(version, directory):
    out = subprocess.run(['npm', 'pack', '--silent', f'{PACKAGE}@{version}'], cwd=directory,
                         capture_output=True, text=True, check=True).stdout
    return Path(directory) / out.strip().splitlines()[-1]


def build(tarball):
    with tarfile.open(tarball) as tar:
        def read(name):
            member = tar.extractfile(f'package/{name}')
            if member is None:
                raise SystemExit(f'{tarball} has no package/{name}')
            return member.read().decode()

        meta = json.loads(read('package.json'))
        if meta.get('name') != PACKAGE or meta.get('license') != 'MIT':
            raise SystemExit(f'{tarball} is {meta.get("name")} under {meta.get("license")}, not {PACKAGE} under MIT')
        version = meta['version']
        if not version.startswith('6.'):
            raise SystemExit(f'{tarball} is PatternFly {version}; the page is written for PatternFly 6 (pf-v6-*)')
        parts = []
        dropped = 0
        for name in FILES:
            text, n = FONT_FACE.subn('', read(name))
            dropped += n
            parts.append(f'/* {name} */\n{text.strip()}\n')
    header = (f'/* {PACKAGE} {version} (https://www.patternfly.org/), MIT licence:\n'
              f' * Copyright (c) Red Hat, Inc. and the PatternFly contributors; see debian/copyright.\n'
              f' * Made by tools/update-patternfly.py from the npm release: the files below as the\n'
              f' * release has them, without their {dropped} @font-face rules (cockpit/thpd.css\n'
              f' * declares the Red Hat fonts from Cockpit\'s static/fonts/). Do not edit: rerun it. */\n')
    return version, header + '\n'.join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('version', nargs='?', help='the release to take (default: the one in the tree)')
    parser.add_argument('--tarball', type=Path, help='use this npm tarball instead of running npm pack')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tarball = args.tarball
        if tarball is None:
            version = args.version or current_version()
            if version is None:
                raise SystemExit('name a version: cockpit/patternfly.css does not say which it has')
            tarball = npm_pack(version, tmp)
        version, text = build(tarball)
    OUTPUT.write_text(text)
    print(f'{OUTPUT.relative_to(SOURCE_ROOT)}: {PACKAGE} {version}, {len(text.encode())} bytes', file=sys.stderr)


if __name__ == '__main__':
    main()
