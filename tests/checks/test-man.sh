#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Checks the built man pages: each renders without a single warning from man-db and from groff
# with every warning category on, has the sections a page needs, and still agrees with the
# programs and files it documents (every option of --help, every thpd-ctl verb, every D-Bus
# member, every thpd.conf key), and its examples are what thpd accepts: the shipped Redis
# policy appears verbatim, and each example policy passes "thpd-ctl verify".
#
# Usage: test-man.sh THPD THPD_CTL THPD_EXEC PAGE...   (THPD_SOURCE_ROOT must be set; meson test does)

set -u

thpd=$1
thpd_ctl=$2
thpd_exec=$3
shift 3
src=${THPD_SOURCE_ROOT:?}

for tool in man groff; do
        if ! command -v "$tool" >/dev/null; then
                echo "SKIP: $tool is not installed (Debian: man-db, groff-base)"
                exit 77
        fi
done

failed=0
fail() {
        echo "FAIL: $*"
        failed=1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Wide enough that no line of an example wraps, so examples can be compared line by line.
# man-db formats plain text when its output is not a terminal.
render() {
        LC_ALL=C.UTF-8 MANWIDTH=200 man --nh --nj -l "$1" 2>/dev/null
}

page_path() {
        local p
        for p in "${pages[@]}"; do
                [[ ${p##*/} == "$1" ]] && { echo "$p"; return; }
        done
        echo "missing-page-$1"
}

pages=("$@")
for page in thpd.8 thpd-ctl.1 thpd-generator.8 thpd.conf.5 thpd.policy.5; do
        [[ -f $(page_path "$page") ]] || fail "$page was not built"
done

# --- no warnings --------------------------------------------------------------------------------

for p in "${pages[@]}"; do
        name=${p##*/}
        out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
        [[ -z $out ]] || fail "$name: man --warnings:"$'\n'"$out"
        # -ww: every warning category, including lines that cannot be adjusted or broken.
        out=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
        [[ -z $out ]] || fail "$name: groff -ww:"$'\n'"$out"
        render "$p" >"$tmp/$name.txt"
        [[ -s $tmp/$name.txt ]] || fail "$name renders to nothing"
        if grep -n '@[A-Z_:]*@' "$tmp/$name.txt"; then
                fail "$name has an unreplaced @PLACEHOLDER@"
        fi
done

# --- sections -----------------------------------------------------------------------------------

need_sections() {
        local name=$1 s
        shift
        for s in NAME SYNOPSIS DESCRIPTION FILES EXAMPLES "SEE ALSO" "$@"; do
                grep -qx "$s" "$tmp/$name.txt" || fail "$name has no $s section"
        done
}
need_sections thpd.8 OPTIONS "EXIT STATUS"
need_sections thpd-ctl.1 COMMANDS OPTIONS "EXIT STATUS"
need_sections thpd-generator.8 OPTIONS ENVIRONMENT "EXIT STATUS"
need_sections thpd.conf.5
need_sections thpd.policy.5 FORMAT

# --- the pages agree with the programs ----------------------------------------------------------

# A word documented in a page: as a whole word, so that "--user" is not found inside "--users".
documented() {
        grep -qwF -- "$2" "$tmp/$1.txt"
}

# Every long option of thpd --help.
opts=$("$thpd" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u)
[[ -n $opts ]] || fail "thpd --help lists no options"
for o in $opts; do
        documented thpd.8 "$o" || fail "thpd.8 does not document $o (from thpd --help)"
done

# Every long option of thpd-exec --help, and the environment thpd-generator reads.
opts=$("$thpd_exec" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
[[ -n $opts ]] || fail "thpd-exec --help lists no options"
for o in $opts; do
        documented thpd-generator.8 "$o" || fail "thpd-generator.8 does not document $o (from thpd-exec --help)"
done
for v in $(grep -ohE 'getenv\("[A-Z_]+"\)' "$src/src/generator/thpd-generator.c" "$src/src/shared/unit-files.c" | grep -oE '[A-Z_]{4,}'); do
        documented thpd-generator.8 "$v" || fail "thpd-generator.8 does not document \$$v (read by thpd-generator)"
done

# Every verb and long option of thpd-ctl --help: verbs are the first word of the indented lines
# between "Commands:" and the next heading.
verbs=$("$thpd_ctl" --help | sed -n '/^Commands:/,/^[A-Z]/{/^  [a-z]/p}' | awk '{ print $1 }' | sort -u)
[[ -n $verbs ]] || fail "thpd-ctl --help lists no commands"
# A verb's entry starts at the body text's indentation, which groff chose (7 columns up to 1.22,
# 5 from 1.23 on): taken from the line under NAME.
body_indent=$(awk '/^NAME$/ { getline; match($0, /^ */); print RLENGTH; exit }' "$tmp/thpd-ctl.1.txt")
[[ ${body_indent:-0} -gt 0 ]] || fail "thpd-ctl.1: no indented line under NAME"
body_indent=$(printf '%*s' "${body_indent:-0}" '')
for v in $verbs; do
        grep -qE "^$body_indent$v( |$)" "$tmp/thpd-ctl.1.txt" || fail "thpd-ctl.1 has no entry for the command '$v'"
done
opts=$("$thpd_ctl" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u)
for o in $opts; do
        documented thpd-ctl.1 "$o" || fail "thpd-ctl.1 does not document $o (from thpd-ctl --help)"
done

# Every method, property and signal of the D-Bus interface.
iface=$src/data/org.thpd1.Manager.xml
members=$(grep -oE '<(method|property|signal) name="[A-Za-z]+"' "$iface" | sed 's/.*name="\(.*\)"/\1/')
[[ -n $members ]] || fail "no members found in $iface"
for m in $members; do
        documented thpd.8 "$m" || fail "thpd.8 does not mention the D-Bus member $m"
done

# Every section and key of the shipped thpd.conf (its settings are commented out as #Key=).
conf=$src/data/thpd.conf
keys=$(grep -oE '^#?[A-Z][A-Za-z0-9]*(\.[0-9A-Z]+)?=' "$conf" | sed 's/^#//; s/\.[0-9A-Z]*=/.SIZE=/' | sort -u)
sections=$(grep -oE '^\[[A-Za-z]+\]' "$conf" | sort -u)
[[ -n $keys && -n $sections ]] || fail "no settings found in $conf"
for k in $keys $sections; do
        grep -qF -- "$k" "$tmp/thpd.conf.5.txt" || fail "thpd.conf.5 does not document $k (from data/thpd.conf)"
done

# --- examples -----------------------------------------------------------------------------------

# The shipped Redis policy, line by line as the reader sees it (escaping must not change a
# character: "-" must stay an ASCII hyphen-minus so that the text can be copied).
# Blank lines and indentation aside, the file's lines must appear in the page as one block.
[[ -s $src/policy/redis.conf ]] || fail "policy/redis.conf is empty"
awk '
        { sub(/^[ \t]+/, "") }
        NR == FNR { if ($0 != "") want[++n] = $0; next }
        $0 != "" { got[++m] = $0 }
        END {
                for (i = 1; i + n - 1 <= m; i++) {
                        for (j = 1; j <= n && got[i + j - 1] == want[j]; j++)
                                ;
                        if (j > n)
                                exit 0
                }
                exit 1
        }
' "$src/policy/redis.conf" "$tmp/thpd.policy.5.txt" ||
        fail "thpd.policy.5 does not show policy/redis.conf verbatim"

# Example policies, marked in the source with an "example-policy" comment before .EX.
src_page=$(page_path thpd.policy.5)
awk -v dir="$tmp" '
        /^\.\\" example-policy/ { n++; want = 1; next }
        want && /^\.EX/ { copy = 1; want = 0; file = dir "/example-" n ".conf"; next }
        copy && /^\.EE/ { copy = 0; close(file); next }
        copy { print > file }
' "$src_page"
examples=("$tmp"/example-*.conf)
[[ -f ${examples[0]} ]] || fail "thpd.policy.5 has no example-policy to verify"
# verify also says when thpd would not trust a file where it is; without root the scratch files
# are ours, so trust our own uid.
[[ $(id -u) -eq 0 ]] || export THPD_TRUSTED_UID=$(id -u)
for f in "${examples[@]}"; do
        [[ -f $f ]] || continue
        # troff escapes back to text: \- is "-", \e is "\", \& is nothing.
        sed -i 's/\\-/-/g; s/\\e/\\/g; s/\\&//g' "$f"
        # The mode a package installs, whatever the umask: verify warns about a file others may write.
        chmod 0644 "$f"
        if ! out=$("$thpd_ctl" verify "$f" 2>&1) || [[ -n $out ]]; then
                fail "an example policy in thpd.policy.5 is not clean for thpd-ctl verify:"$'\n'"$out"$'\n'"$(cat "$f")"
        fi
done

[[ $failed -eq 0 ]] && echo "ok: ${#pages[@]} man pages render without warnings and match the programs"
exit $failed
