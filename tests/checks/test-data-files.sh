#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Checks the system-integration files in data/ and units/: that they parse, that they agree with
# each other (every interface method has a bus policy rule, the activation file names the unit,
# the pkg-config policydir is the daemon's), and that the unit passes systemd-analyze.
# Needs THPD_SOURCE_ROOT and THPD_BUILD_ROOT (set by meson test).

set -u

src=${THPD_SOURCE_ROOT:?}
build=${THPD_BUILD_ROOT:?}
iface=$src/data/org.thpd1.Manager.xml
buspolicy=$src/data/org.thpd1.conf
polkit=$src/data/org.thpd1.policy

failed=0
fail() {
        echo "FAIL: $*"
        failed=1
}
ok() {
        echo "ok: $*"
}
skip() {
        echo "SKIP: $*"
}

if ! command -v xmllint >/dev/null; then
        echo "SKIP: xmllint not installed (Debian: libxml2-utils)"
        exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

xpath() {
        xmllint --nonet --xpath "$2" "$1" 2>/dev/null
}

# --- well-formedness ----------------------------------------------------------------------------

for f in "$iface" "$buspolicy" "$polkit"; do
        if xmllint --nonet --noout "$f"; then
                ok "${f#"$src"/} is well-formed"
        else
                fail "${f#"$src"/} is not well-formed"
        fi
done

# --- interface ----------------------------------------------------------------------------------

members="//interface[@name='org.thpd1.Manager']/*[self::method or self::property or self::signal]"
n_members=$(xpath "$iface" "count($members)")
if [[ ${n_members:-0} -gt 0 ]]; then
        ok "interface org.thpd1.Manager has $n_members members"
else
        fail "interface org.thpd1.Manager not found or empty"
fi

undocumented=$(xpath "$iface" "$members[not(annotation[@name='org.gtk.GDBus.DocString'])]/@name")
if [[ -z $undocumented ]]; then
        ok "every member has a DocString"
else
        fail "members without a DocString:$undocumented"
fi
undocumented=$(xpath "$iface" "$members/arg[not(annotation[@name='org.gtk.GDBus.DocString'])]/@name")
if [[ -z $undocumented ]]; then
        ok "every argument has a DocString"
else
        fail "arguments without a DocString:$undocumented"
fi

if command -v gdbus-codegen >/dev/null; then
        if (cd "$tmp" && gdbus-codegen --interface-prefix org.thpd1. --generate-c-code iface "$iface"); then
                ok "gdbus-codegen accepts the interface"
        else
                fail "gdbus-codegen rejects the interface"
        fi
else
        skip "gdbus-codegen not installed (Debian: libglib2.0-dev-bin)"
fi

# --- bus policy ---------------------------------------------------------------------------------

attr_values() {
        sed -n 's/^ *[a-z_]*="\([^"]*\)"$/\1/p'
}

methods=$(xpath "$iface" "//interface[@name='org.thpd1.Manager']/method/@name" | attr_values)
for m in $methods; do
        rule="//policy[@context='default']/allow[@send_destination='org.thpd1' and @send_interface='org.thpd1.Manager' and @send_member='$m']"
        if [[ $(xpath "$buspolicy" "count($rule)") == 1 ]]; then
                ok "bus policy names method $m"
        else
                fail "bus policy has no single allow rule for method $m"
        fi
done
allowed=$(xpath "$buspolicy" "//policy[@context='default']/allow[@send_interface='org.thpd1.Manager']/@send_member" | attr_values)
for m in $allowed; do
        grep -qx "$m" <<<"$methods" || fail "bus policy allows $m, which the interface does not have"
done
if [[ $(xpath "$buspolicy" "count(//policy[@context='default']/allow[@send_destination='org.thpd1' and not(@send_interface)])") == 0 &&
      $(xpath "$buspolicy" "count(//policy[@context='default']/deny[@send_destination='org.thpd1' and not(@send_interface)])") == 1 ]]; then
        ok "default context denies org.thpd1 and only opens named interfaces"
else
        fail "default context must deny send_destination=org.thpd1 and not allow it wholesale"
fi
if [[ $(xpath "$buspolicy" "count(//policy[@user='root']/allow[@own='org.thpd1'])") == 1 &&
      $(xpath "$buspolicy" "count(//policy[not(@user='root')]/allow[@own='org.thpd1'])") == 0 ]]; then
        ok "only root may own org.thpd1"
else
        fail "org.thpd1 must be ownable by root and nobody else"
fi

# --- polkit -------------------------------------------------------------------------------------

dtd=/usr/share/polkit-1/policyconfig-1.dtd
if [[ -r $dtd ]]; then
        if xmllint --nonet --noout --dtdvalid "$dtd" "$polkit"; then
                ok "polkit policy is valid against its DTD"
        else
                fail "polkit policy does not validate against $dtd"
        fi
else
        skip "$dtd not installed (Debian: polkitd); checked well-formedness only"
fi
if [[ $(xpath "$polkit" "count(//action[@id='org.thpd1.manage']/defaults)") == 1 ]]; then
        ok "polkit action org.thpd1.manage is defined"
else
        fail "polkit action org.thpd1.manage is missing"
fi

# --- activation file and unit -------------------------------------------------------------------

unit=$build/units/thpd.service
activation=$src/data/org.thpd1.service
if grep -qx 'Name=org.thpd1' "$activation" && grep -qx 'SystemdService=thpd.service' "$activation" &&
   grep -qx 'BusName=org.thpd1' "$unit"; then
        ok "activation file and unit agree on org.thpd1 and thpd.service"
else
        fail "org.thpd1.service and thpd.service disagree on the bus name or unit name"
fi
if grep -q '@[a-z]*@' "$unit"; then
        fail "unconfigured @variable@ left in $unit"
fi
# Found under a real PID 1 (tests/system): at shutdown the bus stopped first and thpd exited
# without restoring; ExecReload=/bin/kill failed where procps is not installed (containers), and
# with it the dpkg trigger.
if grep -qx 'After=dbus.service' "$unit"; then
        ok "thpd.service is ordered after dbus.service (stopped before the bus)"
else
        fail "thpd.service lacks After=dbus.service: at shutdown it loses the bus and exits without restoring"
fi
if grep -qx 'ExecReload=/.*/thpd-ctl reload' "$unit"; then
        ok "ExecReload= needs nothing but thpd-ctl"
else
        fail "ExecReload= is not thpd-ctl reload"
fi

if command -v systemd-analyze >/dev/null; then
        # verify insists that ExecStart= and ExecReload= exist, and thpd need not be installed.
        printf '#!/bin/sh\n' > "$tmp/thpd"
        chmod +x "$tmp/thpd"
        sed -e "s|^ExecStart=.*/thpd$|ExecStart=$tmp/thpd|" \
            -e "s|^ExecReload=.*/thpd-ctl reload$|ExecReload=$tmp/thpd reload|" "$unit" > "$tmp/thpd.service"
        if systemd-analyze verify --man=no "$tmp/thpd.service"; then
                ok "systemd-analyze verify thpd.service"
        else
                fail "systemd-analyze verify thpd.service"
        fi
        # 20 is an exposure of 2.0 on the scale systemd-analyze prints.
        if systemd-analyze security --offline=yes --threshold=20 "$tmp/thpd.service" > "$tmp/security"; then
                ok "$(grep 'Overall exposure' "$tmp/security")"
        else
                fail "exposure above 2.0: $(grep 'Overall exposure' "$tmp/security")"
        fi

        dropin=$build/units/thpd-await.conf
        if [[ -e $dropin ]]; then
                mkdir "$tmp/redis-server.service.d"
                cp "$dropin" "$tmp/redis-server.service.d/"
                printf '[Service]\nExecStart=/bin/true\n' > "$tmp/redis-server.service"
                # ExecPaths=: Debian's redis-server.service has NoExecPaths=/.
                if grep -q '^ExecStartPre=-/.*/thpd-ctl await %n$' "$dropin" &&
                   grep -q '^ExecPaths=/.*/thpd-ctl$' "$dropin" &&
                   systemd-analyze verify --man=no "$tmp/redis-server.service"; then
                        ok "redis-server.service drop-in"
                else
                        fail "redis-server.service drop-in"
                fi
        else
                skip "redis drop-in not built (-Dredis_dropin=false)"
        fi
else
        skip "systemd-analyze not installed"
fi

# --- tmpfiles -----------------------------------------------------------------------------------

if command -v systemd-tmpfiles >/dev/null; then
        mkdir "$tmp/root"
        if systemd-tmpfiles --root="$tmp/root" --create "$src/data/thpd.tmpfiles" &&
           [[ $(stat -c '%a %u %g' "$tmp/root/run/thpd" "$tmp/root/etc/thpd/policy.d" | sort -u) == '755 0 0' ]]; then
                ok "tmpfiles creates /run/thpd and /etc/thpd/policy.d as root, 0755"
        else
                fail "tmpfiles did not create the directories as root-owned 0755"
        fi
else
        skip "systemd-tmpfiles not installed"
fi

# --- default configuration ----------------------------------------------------------------------

conf=$src/data/thpd.conf
active=$(grep -v -E '^[[:space:]]*([#;].*)?$' "$conf" | grep -v -E '^\[[A-Za-z]+\]$')
if [[ -z $active ]]; then
        ok "thpd.conf sets nothing: every setting is commented out"
else
        fail "thpd.conf has active lines: $active"
fi
# A documented baseline key must be one a policy accepts, so the example cannot drift from the
# knob table.
section=''
while IFS= read -r line; do
        if [[ $line =~ ^\[Baseline(TransparentHugePages|Khugepaged)\]$ ]]; then
                section=${BASH_REMATCH[1]}
        elif [[ $line =~ ^\[ ]]; then
                section=''
        elif [[ -n $section && $line =~ ^#([A-Za-z]+)(\.([0-9]+[KMG]))?= ]]; then
                key=${BASH_REMATCH[1]} size=${BASH_REMATCH[3]}
                if [[ $section == TransparentHugePages ]]; then
                        pattern="(WORD_KNOB\(\"[a-z_]+\", \"TransparentHugePages\"|FLAG_KNOB\(\"[a-z_]+\"), \"$key\""
                else
                        pattern="NUMBER_KNOB\(\"khugepaged/[a-z_]+\", \"$key\""
                fi
                [[ -n $size && $key == Enabled ]] && pattern="MTHP_KNOB\([0-9]+, \"$size\"\)"
                [[ -n $size && $key == ShmemEnabled ]] && pattern="MTHP_SHMEM_KNOB\([0-9]+, \"$size\"\)"
                [[ -n $size && $key != Enabled && $key != ShmemEnabled ]] && pattern="no per-size $key"
                if grep -qE "$pattern" "$src/src/core/knob.c"; then
                        ok "thpd.conf [Baseline$section] $key${size:+.$size} is a knob key"
                else
                        fail "thpd.conf [Baseline$section] $key${size:+.$size} is not in src/core/knob.c"
                fi
        fi
done < "$conf"

# --- pkg-config ---------------------------------------------------------------------------------

if command -v pkg-config >/dev/null; then
        want=$(sed -n 's/^#define THPD_VENDOR_POLICY_DIR "\(.*\)"$/\1/p' "$build/config.h")
        got=$(PKG_CONFIG_PATH=$build/data pkg-config --variable=policydir thpd)
        if [[ -n $want && $got == "$want" ]]; then
                ok "pkg-config policydir is the daemon's vendor policy dir ($got)"
        else
                fail "pkg-config policydir '$got' differs from the daemon's '$want'"
        fi
else
        skip "pkg-config not installed"
fi

# --- bash completion ----------------------------------------------------------------------------

completion=$src/data/thpd-ctl.bash-completion
if bash -n "$completion"; then
        ok "bash completion parses"
else
        fail "bash completion has a syntax error"
fi
if [[ -r /usr/share/bash-completion/bash_completion ]]; then
        # A scratch sysfs with one mTHP size: completion must offer what this "kernel" has.
        thp=$tmp/sys/kernel/mm/transparent_hugepage
        mkdir -p "$thp/khugepaged" "$thp/hugepages-64kB"
        echo 'always [madvise] never' > "$thp/enabled"
        echo '511' > "$thp/khugepaged/max_ptes_none"
        echo 'always inherit madvise [never]' > "$thp/hugepages-64kB/enabled"
        echo 'always inherit within_size advise [never]' > "$thp/hugepages-64kB/shmem_enabled"
        echo '1' > "$thp/shrink_underused"
        complete_line() {
                THPD_SYSFS=$tmp/sys bash -c '
                        source /usr/share/bash-completion/bash_completion
                        source "$1"
                        shift
                        COMP_WORDS=("$@")
                        COMP_CWORD=$(($# - 1))
                        COMP_LINE="$*"
                        COMP_POINT=${#COMP_LINE}
                        _thpd_ctl thpd-ctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
                        printf "%s\n" "${COMPREPLY[@]}" | LC_ALL=C sort | tr "\n" " "' _ "$completion" "$@" 2>/dev/null
        }
        check_completion() {
                local want=$1 got
                shift
                got=$(complete_line "$@")
                if [[ $got == "$want" ]]; then
                        ok "completion of '$*'"
                else
                        fail "completion of '$*': got '$got', want '$want'"
                fi
        }
        check_completion 'enabled hugepages-64kB/enabled hugepages-64kB/shmem_enabled khugepaged/max_ptes_none shrink_underused ' \
                thpd-ctl explain ''
        check_completion '0 1 ' thpd-ctl override shrink_underused=
        check_completion 'advise always inherit never within_size ' thpd-ctl override hugepages-64kB/shmem_enabled=
        check_completion 'madvise ' thpd-ctl override enabled=ma
        check_completion 'always inherit madvise never ' thpd-ctl --json override hugepages-64kB/enabled=
        check_completion 'await ' thpd-ctl --user aw
else
        skip "bash-completion not installed; checked syntax only"
fi

exit $failed
