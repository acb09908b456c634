#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Turns a man page template (man/*.in, plain troff) into the page meson installs.

In the template:
  @NAME@             the value given with --set NAME=VALUE
  @VERBATIM:NAME@    (alone on a line) the text of the file given with --verbatim NAME=FILE,
                     escaped so that troff prints it character for character; put it between
                     .EX and .EE. This is how a page quotes a shipped file without a copy that
                     could drift from it.
  @INCLUDE:NAME@     (alone on a line) the plain text file given with --include NAME=FILE,
                     turned into man markup (see plain_to_troff); for text that another
                     engineer keeps without having to write troff.

Any @WORD@ left without a value is an error, so a typo cannot reach an installed page.
"""

import argparse
import re
import sys

PLACEHOLDER = re.compile(r"@([A-Z][A-Z0-9_]*)@")
LINE_DIRECTIVE = re.compile(r"^@(VERBATIM|INCLUDE):([A-Z][A-Z0-9_]*)@$")
PLAIN_KEY = re.compile(r"^([A-Z][A-Za-z0-9.]*=)(\S*)$")
PLAIN_ITEM = re.compile(r"^([0-9]+\.|-)\s+(.*)$")


def escape_text(line):
    """Escapes a line of text so troff prints it as it is."""
    line = line.replace("\\", "\\e").replace("-", "\\-")
    # A leading dot or apostrophe would start a request; \& is a zero-width guard.
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


def verbatim(text):
    out = []
    for line in text.splitlines():
        out.append(escape_text(line) if line.strip() else "")
    return out


def indent_of(line):
    return len(line) - len(line.lstrip(" "))


def dedent(lines):
    n = min(indent_of(line) for line in lines)
    return [line[n:] for line in lines]


def body_to_troff(lines):
    """Text lines, filled; a line starting with "1." or "-" opens a list item whose
    continuation lines are indented deeper."""
    out = []
    in_list = False
    i = 0
    while i < len(lines):
        line = lines[i]
        m = PLAIN_ITEM.match(line.strip())
        if m:
            if not in_list:
                out.append(".RS")
                in_list = True
            out.append(f".IP {escape_text(m.group(1))} 4")
            out.append(escape_text(m.group(2)))
            i += 1
            while i < len(lines) and indent_of(lines[i]) > indent_of(line) and not PLAIN_ITEM.match(lines[i].strip()):
                out.append(escape_text(lines[i].strip()))
                i += 1
            continue
        if in_list:
            # Back to the enclosing paragraph's indentation.
            out.extend([".RE", ".IP"])
            in_list = False
        out.append(escape_text(line.strip()))
        i += 1
    if in_list:
        out.append(".RE")
    return out


def plain_to_troff(text):
    """Plain text in the shape of man/thpd.conf-storm.txt, in blocks separated by blank lines:
    a first block of one upper-case line is a title, dropped (the page has its heading); a
    block whose first line is "Key=" (or "Key=values") at the margin documents that key, with
    its text indented below it, and further indented blocks continue that text; an indented
    term with its text indented deeper is a tagged paragraph too; a block of lines all indented
    alike is an example; anything else is a paragraph. Within text, "1." or "-" opens a list item."""
    blocks = [b.splitlines() for b in re.split(r"\n[ \t]*\n", text.expandtabs(8).strip("\n"))]
    out = []
    if len(blocks[0]) == 1 and re.sub(r"\[[^]]*\]", "", blocks[0][0]).isupper():
        blocks = blocks[1:]
    body_indent = None  # the indentation of the current key's text, for continuing blocks
    for block in blocks:
        first = block[0]
        key = PLAIN_KEY.match(first)
        if key and len(block) > 1 and all(indent_of(line) > 0 for line in block[1:]):
            out.append(".TP")
            tag = "\\fB" + escape_text(key.group(1)) + "\\fR"
            if key.group(2):
                tag += "\\fI" + escape_text(key.group(2)) + "\\fR"
            out.append(tag)
            body_indent = indent_of(block[1])
            out.extend(body_to_troff(dedent(block[1:])))
        elif body_indent is not None and indent_of(first) == body_indent:
            out.append(".IP")
            out.extend(body_to_troff(dedent(block)))
        elif indent_of(first) > 0 and len(block) > 1 and all(indent_of(line) > indent_of(first) for line in block[1:]):
            out.append(".TP")
            out.append("\\fB" + escape_text(first.strip()) + "\\fR")
            out.extend(body_to_troff(dedent(block[1:])))
            body_indent = None
        elif indent_of(first) > 0 and all(indent_of(line) == indent_of(first) for line in block):
            out.extend([".IP", ".EX"] + [escape_text(line.strip()) for line in block] + [".EE"])
            body_indent = None
        else:
            out.append(".PP")
            out.extend(body_to_troff(dedent(block)))
            body_indent = None
    return out


def pairs(values, what):
    result = {}
    for v in values or []:
        name, sep, value = v.partition("=")
        if not sep or not name:
            sys.exit(f"mangen: bad --{what} argument '{v}', expected NAME=VALUE")
        result[name] = value
    return result


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("template")
    parser.add_argument("output")
    parser.add_argument("--set", action="append", metavar="NAME=VALUE")
    parser.add_argument("--verbatim", action="append", metavar="NAME=FILE")
    parser.add_argument("--include", action="append", metavar="NAME=FILE")
    args = parser.parse_args()

    values = pairs(args.set, "set")
    files = {"VERBATIM": pairs(args.verbatim, "verbatim"), "INCLUDE": pairs(args.include, "include")}
    out = []
    errors = []

    for n, line in enumerate(read(args.template).splitlines(), 1):
        m = LINE_DIRECTIVE.match(line)
        if m:
            kind, name = m.groups()
            path = files[kind].get(name)
            if path is None:
                errors.append(f"{args.template}:{n}: no --{kind.lower()} {name}=FILE given")
                continue
            text = read(path)
            out.extend(verbatim(text) if kind == "VERBATIM" else plain_to_troff(text))
            continue

        def substitute(m):
            name = m.group(1)
            if name not in values:
                errors.append(f"{args.template}:{n}: no --set {name}=VALUE given")
                return m.group(0)
            return values[name]

        out.append(PLACEHOLDER.sub(substitute, line))

    if errors:
        sys.exit("\n".join(errors))

    with open(args.output, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
