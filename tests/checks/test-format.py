#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The formatting rules of .editorconfig, checked on the tree as it is.

    test-format.py SOURCE_ROOT

Every C source and header under src/, tests/, fuzz/ and bench/ must have: no tab, no trailing
whitespace, a final newline, lines of at most MAX_LINE characters, and 8-space indentation by
block depth. Indentation is checked on the lines that start a statement, a declaration or an
initializer entry (at bracket depth 0, after a line that ended one): such a line must sit at 8
spaces per open block, a closing brace at its block's level and a case label at its switch's.
Continuation lines (inside parentheses, after an unfinished expression), unbraced if, else and
for bodies, comments and preprocessor lines are left alone: they are aligned by hand.

Prints FILE:LINE: what is wrong, for each problem; exits 1 if there is any. This is the only
formatting check: clang-format would rewrite the tree's hand-aligned tables and comments for the
worse, so there is no .clang-format (HACKING.md, "C style").
"""

import re
import sys
from pathlib import Path

MAX_LINE = 150
DIRS = ('src', 'tests', 'fuzz', 'bench')
LABEL = re.compile(r'^(case\b.*|default\s*):(\s|$)')
GOTO_LABEL = re.compile(r'^[A-Za-z_]\w*:;?$')


def strip_code(line, in_comment):
    """line without comments and the contents of string and character literals; whether a
    block comment is still open at its end."""
    out = []
    i, n = 0, len(line)
    while i < n:
        if in_comment:
            end = line.find('*/', i)
            if end < 0:
                return ''.join(out), True
            in_comment = False
            i = end + 2
            continue
        c = line[i]
        if line.startswith('/*', i):
            in_comment = True
            i += 2
        elif line.startswith('//', i):
            break
        elif c in '"\'':
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == '\\' else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out), in_comment


def check_file(path, name):
    problems = []
    text = path.read_text(encoding='utf-8')
    if text and not text.endswith('\n'):
        problems.append(f'{name}: no newline at the end of the file')
    stack = []              # per open bracket: (indentation of a block's lines, whether its
                            # lines are a list of entries), or None for ( [ and a "{" that does
                            # not end its line (an inline initializer or literal)
    in_comment = False
    in_macro = False
    starts = True           # the next line starts a statement
    for number, line in enumerate(text.split('\n'), 1):
        where = f'{name}:{number}'
        if '\t' in line:
            problems.append(f'{where}: tab')
        if line != line.rstrip():
            problems.append(f'{where}: trailing whitespace')
        if len(line) > MAX_LINE:
            problems.append(f'{where}: {len(line)} characters, more than {MAX_LINE}')
        if in_macro:
            in_macro = line.endswith('\\')
            continue
        was_comment = in_comment
        code, in_comment = strip_code(line, in_comment)
        code = code.strip()
        if not code:
            continue
        if not was_comment and line.lstrip().startswith('#'):
            in_macro = line.endswith('\\')
            continue
        indent = len(line) - len(line.lstrip(' '))
        aligned = None in stack
        blocks = [b[0] for b in stack if b is not None]
        # An "else" without braces belongs to an if this cannot see (one without braces, maybe
        # the body of another): left alone, like the unbraced bodies themselves.
        if starts and not aligned and not was_comment and not GOTO_LABEL.match(code) \
                and not re.match(r'else\b', code):
            closing = len(code) - len(code.lstrip('}'))
            if closing:
                want = blocks[-closing] - 8 if len(blocks) >= closing else 0
            else:
                want = blocks[-1] if blocks else 0
            if LABEL.match(code):
                want -= 8
            if indent != want:
                problems.append(f'{where}: indented by {indent}, not {want}')
        # A block's lines are 8 deeper than the line that opens it, unless that line continues
        # a bracket (the "{" of a function whose parameters wrap): then than where it started.
        if not aligned:
            base = indent
        for k, c in enumerate(code):
            if c in '([':
                stack.append(None)
            elif c == '{':
                ends_line = not code[k + 1:].strip()
                before = code[:k].strip()
                is_list = not before or before[-1] in '=,{' or re.search(r'\benum\b', before) is not None
                stack.append((base + 8, is_list) if ends_line and None not in stack else None)
            elif c in ')]}' and stack:
                stack.pop()
        # A "," ends an entry of an initializer or enum, but not a line of a declaration.
        in_list = bool(stack) and stack[-1] is not None and stack[-1][1]
        starts = None not in stack and (code[-1] in ';{}:' or (code[-1] == ',' and in_list))
    return problems


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else '.')
    files = sorted(p for d in DIRS for p in (root / d).rglob('*.[ch]') if p.is_file())
    if not files:
        sys.exit(f'test-format: no C sources under {root}')
    problems = []
    for path in files:
        problems += check_file(path, path.relative_to(root))
    for p in problems:
        print(p)
    print(f'test-format: {len(files)} files, {len(problems)} problem(s)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
