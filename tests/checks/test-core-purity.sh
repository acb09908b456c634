#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The pure core (src/core) does no I/O and uses no sd-bus: it decides, and the adapters of
# src/shared read, write and log. Holds every object of libthpd-core.a to that by the symbols it
# leaves undefined, and src/core/meson.build to not listing libsystemd or the adapters.
# Usage: test-core-purity.sh LIBTHPD_CORE LIBTHPD_SHARED CORE_MESON_BUILD  (NM overrides nm)
set -u

core=$1
shared=$2
core_meson=$3
nm=${NM:-nm}
failures=0
scratch=$(mktemp -d /tmp/thpd-core-purity-XXXXXX)
trap 'rm -rf "$scratch"' EXIT

fail() {
        echo "FAIL: $*"
        failures=$((failures + 1))
}

# Files, directories, sockets and streams. Memory streams (fmemopen, open_memstream) and
# snprintf stay allowed: they format and parse, they do not reach the system.
io="open openat open64 openat64 creat creat64 fopen fopen64 fdopen freopen freopen64
    read pread pread64 write pwrite pwrite64 readv writev
    opendir fdopendir readdir readdir64 scandir scandir64
    stat stat64 fstat fstat64 lstat lstat64 statx fstatat fstatat64 __xstat __fxstat __lxstat __fxstatat
    access faccessat unlink unlinkat rename renameat mkdir mkdirat socket connect ioctl
    fgets fgetc getc getc_unlocked getline getdelim fread fwrite fputs fputc putc
    fprintf vfprintf printf vprintf dprintf puts
    g_file_get_contents g_file_set_contents g_file_test g_open g_fopen g_freopen g_creat g_dir_open
    g_stat g_lstat g_access g_unlink g_remove g_rename g_mkdir g_mkdir_with_parents
    g_print g_printerr g_fprintf g_printf"
# The core reports through return values and Diagnostics; its callers log.
logging="log_internal diagnostics_print diagnostics_log g_log g_logv g_log_structured g_log_structured_standard"

# "ARCHIVE[OBJECT]: SYMBOL TYPE ...", one symbol a line.
"$nm" --print-file-name --undefined-only --format=posix "$core" >"$scratch/undefined" ||
        fail "$nm cannot read $core"
"$nm" --print-file-name --defined-only --extern-only --format=posix "$shared" >"$scratch/defined" ||
        fail "$nm cannot read $shared"
awk '{ print $2 }' "$scratch/defined" >"$scratch/adapters"

# One line per forbidden use: "OBJECT: SYMBOL: why". With _FORTIFY_SOURCE, read() is __read_chk
# and open() is __open_2: those count as what they check.
awk -v io="$io" -v logging="$logging" -v adapters="$scratch/adapters" '
BEGIN {
        n = split(io, w, /[ \t\n]+/)
        for (i = 1; i <= n; i++)
                if (w[i] != "")
                        why[w[i]] = "I/O"
        n = split(logging, w, /[ \t\n]+/)
        for (i = 1; i <= n; i++)
                if (w[i] != "")
                        why[w[i]] = "logging (report through the return value or Diagnostics; the caller logs)"
        while ((getline s < adapters) > 0)
                adapter[s] = 1
}
{
        object = $1
        sub(/\]:$/, "", object)
        sub(/^.*[\/\[]/, "", object)
        symbol = $2
        sub(/@.*/, "", symbol)
        base = symbol
        if (base ~ /^__.+_(chk|2)$/) {
                sub(/^__/, "", base)
                sub(/_(chk|2)$/, "", base)
        }
        reason = ""
        if (base ~ /^sd_/)
                reason = "sd-bus/sd-event (libsystemd)"
        else if (base in why)
                reason = why[base]
        else if (base in adapter || base ~ /^(sysfs_|procfs_read_)/)
                reason = "an adapter of src/shared"
        if (reason != "")
                printf "%s: %s(): %s\n", object, symbol, reason
}' "$scratch/undefined" >"$scratch/violations"

# An archive nm cannot see into (LTO bytecode, a wrong path) must not pass as clean.
[ -s "$scratch/undefined" ] || fail "no undefined symbol found in $core: not an archive of ELF objects?"

while IFS= read -r line; do
        fail "src/core/$line; the pure core does no I/O and uses no sd-bus: move it to src/shared"
done <"$scratch/violations"

# A dependency alone would hand libsystemd, or the adapters, to everything that links the core.
sed 's/#.*//' "$core_meson" | grep -nE 'libsystemd|systemd_dep|shared_dep|libthpd_shared|daemon_dep' \
        >"$scratch/meson-deps"
while IFS= read -r line; do
        fail "$core_meson:$line: the core must not depend on libsystemd or the adapters"
done <"$scratch/meson-deps"

[ "$failures" -eq 0 ] || exit 1
echo "ok: $(awk '{ print $2 }' "$scratch/undefined" | sort -u | wc -l) undefined symbols of $core, none of them I/O, logging, sd-bus or an adapter"
