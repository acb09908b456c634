#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# thpd-ctl verify: exact FILE:LINE diagnostics, exit codes, and the precedence report.
# Usage: test-ctl-verify.sh THPD_CTL BAD_POLICY_DIR
set -u

ctl=$1
bad=$2
failures=0
scratch=$(mktemp -d /tmp/thpd-ctl-verify-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
umask 022
# Without root the scratch files are ours; trust our own uid instead of 0.
[ "$(id -u)" -eq 0 ] || export THPD_TRUSTED_UID="$(id -u)"
# verify warns about a policy file others may write, as thpd would not trust it: check copies
# with the mode a package installs, whatever umask the checkout was made with.
mkdir "$scratch/bad"
cp "$bad"/*.conf "$scratch/bad/"
chmod 0644 "$scratch/bad"/*.conf
bad=$scratch/bad

fail() {
        echo "FAIL: $*"
        failures=$((failures + 1))
}

expect_line() {
        grep -qxF -- "$1" "$2" || fail "missing line '$1' in $2: $(cat "$2")"
}

# A broken file: exit 1 and one FILE:LINE diagnostic per bad line.
"$ctl" verify "$bad/broken.conf" >"$scratch/out" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 1 ] || fail "broken.conf: exit $rc, expected 1"
[ -s "$scratch/out" ] && fail "broken.conf: unexpected stdout: $(cat "$scratch/out")"
expect_line "$bad/broken.conf:4: warning: Units= entry 'broken' has no unit type suffix (.service, .socket, .scope, .slice, ...); it never matches" "$scratch/err"
expect_line "$bad/broken.conf:5: error: duplicate key Units= (first set on line 4)" "$scratch/err"
expect_line "$bad/broken.conf:8: error: invalid value 'sometimes' for Enabled=; accepted: never, madvise, always" "$scratch/err"
expect_line "$bad/broken.conf:9: error: syntax error: expected Key=Value, [Section] or a comment" "$scratch/err"
expect_line "$bad/broken.conf:12: error: MaxPtesNone=512 is out of range; accepted: 0-511" "$scratch/err"
expect_line "$bad/broken.conf:14: error: unknown section [Bogus], its keys are ignored" "$scratch/err"
[ "$(wc -l <"$scratch/err")" -eq 6 ] || fail "broken.conf: expected 6 diagnostics: $(cat "$scratch/err")"

# Every file is checked even after a bad one; warnings alone do not fail.
printf '[Policy]\nUnits=ok.service odd\n[TransparentHugePages]\nEnabled=never\n' >"$scratch/warn.conf"
"$ctl" verify "$scratch/warn.conf" "$bad/size-and-pages.conf" "$scratch/warn.conf" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 1 ] || fail "two files: exit $rc, expected 1"
expect_line "$bad/size-and-pages.conf:7: error: Size= (line 6) and Pages= both set; use one of them" "$scratch/err"
[ "$(grep -c "^$scratch/warn.conf:2: warning:" "$scratch/err")" -eq 2 ] || fail "warn.conf not checked twice"
"$ctl" verify "$scratch/warn.conf" 2>/dev/null || fail "warnings only: exit $?, expected 0"

# Typos the daemon only warns about are errors here, with the name meant.
"$ctl" verify "$bad/typo-key.conf" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 1 ] || fail "typo-key.conf: exit $rc, expected 1"
expect_line "$bad/typo-key.conf:5: error: unknown key Enabeld= in [TransparentHugePages], ignored; did you mean Enabled=?" "$scratch/err"
"$ctl" verify "$bad/typo-section.conf" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 1 ] || fail "typo-section.conf: exit $rc, expected 1"
expect_line "$bad/typo-section.conf:4: error: unknown section [TransparentHugePage], its keys are ignored; did you mean [TransparentHugePages]?" "$scratch/err"

# A machine-wide key in a service-scoped policy: the daemon ignores it, verify fails.
"$ctl" verify "$bad/service-scope-defrag.conf" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 1 ] || fail "service-scope-defrag.conf: exit $rc, expected 1"
expect_line "$bad/service-scope-defrag.conf:9: error: [TransparentHugePages] Defrag= is machine-wide and cannot apply to one service (Scope=service, line 5), ignored; move it to a policy with Scope=global or Scope=auto" "$scratch/err"

# Always for one service is spelt Scope=service; Scope=auto with always fails.
"$ctl" verify "$bad/auto-scope-always.conf" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 1 ] || fail "auto-scope-always.conf: exit $rc, expected 1"
expect_line "$bad/auto-scope-always.conf:8: error: Enabled=always cannot be asked for one service (Scope=auto, line 5): a process can only opt out of THP; use Scope=service (always for its services, madvise for every other) or Scope=global" "$scratch/err"

# Where the manager has no MemoryTHP=, the same policy is a machine-wide always: a warning.
printf '[Policy]\nUnits=mongod.service\nScope=service\n[TransparentHugePages]\nEnabled=always\n' >"$scratch/always.conf"
THPD_MEMORY_THP=no "$ctl" verify "$scratch/always.conf" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 0 ] || fail "always.conf without MemoryTHP=: exit $rc, expected 0"
expect_line "$scratch/always.conf: warning: Scope=service with Enabled=always is a machine-wide always on this host, for every service: no blanket MemoryTHP=madvise for the others, as the service manager has no MemoryTHP= (systemd 260 and later)" "$scratch/err"

# Where it has both, verify says so on stdout: the blanket's path is no problem. Which side the
# kernel is on is asked as thpd-generator asks: a kernel before 6.18 gets the warning instead.
THPD_MEMORY_THP=yes "$ctl" verify "$scratch/always.conf" >"$scratch/out" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 0 ] || fail "always.conf with MemoryTHP=: exit $rc, expected 0"
if grep -q "no blanket MemoryTHP=madvise for the others, as the kernel has no PR_THP_DISABLE_EXCEPT_ADVISED" "$scratch/err"; then
        [ ! -s "$scratch/out" ] || fail "always.conf on a kernel without the flag: stdout not empty"
else
        expect_line "$scratch/always.conf: Scope=service with Enabled=always takes the blanket's path on this host: the service manager has MemoryTHP= and the kernel PR_THP_DISABLE_EXCEPT_ADVISED, so thpd-generator gives every other service MemoryTHP=madvise (service.d/10-thpd-madvise.conf); services started before the daemon-reload that loads it keep always until they restart (thpd-ctl status lists them)" "$scratch/out"
fi
THPD_MEMORY_THP=no "$ctl" --json verify "$scratch/always.conf" 2>/dev/null | grep -q '"always_path":{"path":"machine-wide","reason":"the service manager has no MemoryTHP= (systemd 260 and later)"}' ||
        fail "always.conf --json without MemoryTHP=: no always_path"

# What the daemon would not trust: a warning for a file in a build tree, an error in a policy
# directory (--policy-dir counts as one).
mkdir -m 0755 "$scratch/build" "$scratch/policy.d"
printf '[Policy]\nUnits=a.service\n[TransparentHugePages]\nEnabled=never\n' >"$scratch/build/loose.conf"
chmod 0666 "$scratch/build/loose.conf"
"$ctl" verify "$scratch/build/loose.conf" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 0 ] || fail "loose.conf in a build tree: exit $rc, expected 0"
expect_line "$scratch/build/loose.conf: warning: file is writable by group or others (mode 0666): thpd would not trust it there" "$scratch/err"
cp -p "$scratch/build/loose.conf" "$scratch/policy.d/loose.conf"
"$ctl" verify --policy-dir="$scratch/policy.d" "$scratch/policy.d/loose.conf" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 1 ] || fail "loose.conf in a policy directory: exit $rc, expected 1"
expect_line "$scratch/policy.d/loose.conf: error: file is writable by group or others (mode 0666): not trusted, ignored" "$scratch/err"
chmod 0644 "$scratch/build/loose.conf"
chmod 0777 "$scratch/build"
"$ctl" verify "$scratch/build/loose.conf" 2>"$scratch/err"
expect_line "$scratch/build/loose.conf: warning: directory $scratch/build is writable by group or others (mode 0777): thpd would not trust it there" "$scratch/err"
chmod 0755 "$scratch/build"
if [ "$(id -u)" -eq 0 ]; then
        chown 65534 "$scratch/build/loose.conf"
        "$ctl" verify "$scratch/build/loose.conf" 2>"$scratch/err"
        expect_line "$scratch/build/loose.conf: warning: file is owned by uid 65534, not 0: thpd would not trust it there" "$scratch/err"
        chown 0 "$scratch/build/loose.conf"
fi
"$ctl" verify "$scratch/build/loose.conf" 2>"$scratch/err" || fail "a clean file: exit $?"
[ -s "$scratch/err" ] && fail "a clean file: $(cat "$scratch/err")"

# --json: one object on stdout, nothing on stderr, the same exit status.
"$ctl" verify --json "$bad/typo-key.conf" "$scratch/build/loose.conf" >"$scratch/out" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 1 ] || fail "verify --json: exit $rc, expected 1"
[ -s "$scratch/err" ] && fail "verify --json wrote to stderr: $(cat "$scratch/err")"
python3 - "$scratch/out" "$bad/typo-key.conf" <<'END' || fail "verify --json: $(cat "$scratch/out")"
import json, sys
data = json.load(open(sys.argv[1]))
assert data['errors'] == 1 and data['warnings'] == 0, data
typo, clean = data['policies']
assert typo['state'] == 'invalid' and clean['state'] == 'valid', data
assert typo['diagnostics'] == [{'file': sys.argv[2], 'line': 5, 'severity': 'error',
                                'message': 'unknown key Enabeld= in [TransparentHugePages], ignored; did you mean Enabled=?'}], typo
assert clean['diagnostics'] == [] and clean['masked_by'] is None, clean
END

# Binary garbage: one error at the line of the first bad byte.
printf '[Policy]\nUnits=a.service\n\001\002\000garbage\n' >"$scratch/binary.conf"
"$ctl" verify "$scratch/binary.conf" 2>"$scratch/err"
[ $? -eq 1 ] || fail "binary.conf: expected exit 1"
grep -q "^$scratch/binary.conf:3: error: binary data" "$scratch/err" || fail "binary.conf: $(cat "$scratch/err")"

# Usage errors exit 2.
"$ctl" frobnicate 2>/dev/null; rc=$?
[ "$rc" -eq 2 ] || fail "unknown verb: exit $rc, expected 2"
"$ctl" verify --no-such-option 2>/dev/null; rc=$?
[ "$rc" -eq 2 ] || fail "unknown option: exit $rc, expected 2"
"$ctl" 2>/dev/null; rc=$?
[ "$rc" -eq 2 ] || fail "no verb: exit $rc, expected 2"
"$ctl" --version | grep -q '^thpd-ctl [0-9]' || fail "--version"
"$ctl" --help | grep -q '^  verify' || fail "--help does not list verify"

# Directories: which file wins, what it overrides, what is masked.
etc=$scratch/etc; usr=$scratch/usr
mkdir -p "$etc" "$usr"
good='[Policy]\nUnits=x.service\n[TransparentHugePages]\nEnabled=never\n'
printf "$good" >"$usr/a.conf"
printf "$good" >"$etc/a.conf"
printf "$good" >"$usr/b.conf"
ln -s /dev/null "$etc/b.conf"
printf "$good" >"$usr/c.conf"
"$ctl" verify --policy-dir="$etc" --policy-dir="$usr" >"$scratch/out" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 0 ] || fail "dirs: exit $rc, expected 0: $(cat "$scratch/err")"
cat >"$scratch/expected" <<END
a.conf: $etc/a.conf
        overrides $usr/a.conf
b.conf: masked by $etc/b.conf
        masks $usr/b.conf
c.conf: $usr/c.conf
END
diff -u "$scratch/expected" "$scratch/out" || fail "dirs: unexpected report"

# A bad effective file fails verify; the others are still listed.
cp "$bad/broken.conf" "$etc/c.conf"
"$ctl" verify --policy-dir="$etc" --policy-dir="$usr" >"$scratch/out" 2>"$scratch/err"
rc=$?
[ "$rc" -eq 1 ] || fail "dirs with a bad file: exit $rc, expected 1"
expect_line "$etc/c.conf:8: error: invalid value 'sometimes' for Enabled=; accepted: never, madvise, always" "$scratch/err"
expect_line "a.conf: $etc/a.conf" "$scratch/out"

[ "$failures" -eq 0 ] || exit 1
echo "all thpd-ctl verify checks passed"
