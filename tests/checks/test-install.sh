#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Configures a fresh build of the source tree the way a distribution does (--prefix=/usr,
# --sysconfdir=/etc), runs "meson install --destdir" into a scratch directory and compares what
# was installed with the list of files a Debian system expects, exactly: a missing file and an
# unexpected one both fail. Then checks that the installed pieces fit together: the pkg-config
# policydir, the paths inside the unit and bus activation files, file modes thpd trusts, and the
# installed policies pass the installed thpd-ctl's verify.
#
# Usage: test-install.sh   (THPD_SOURCE_ROOT must be set; meson test does)

set -u

src=${THPD_SOURCE_ROOT:?}

for tool in meson ninja pkg-config; do
        if ! command -v "$tool" >/dev/null; then
                echo "SKIP: $tool is not installed"
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
build=$tmp/build
dest=$tmp/dest

# Where the distribution wants units and completions; the build asks pkg-config the same way.
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null) || unitdir=/lib/systemd/system
generatordir=$(pkg-config --variable=systemdsystemgeneratordir systemd 2>/dev/null) ||
        generatordir=/lib/systemd/system-generators
completionsdir=$(pkg-config --define-variable=datadir=/usr/share --variable=completionsdir bash-completion \
                 2>/dev/null) || completionsdir=/usr/share/bash-completion/completions

if ! meson setup "$build" "$src" --prefix=/usr --sysconfdir=/etc --buildtype=plain -Dtests=false \
        --wrap-mode=nodownload >"$tmp/setup.log" 2>&1; then
        cat "$tmp/setup.log"
        fail "meson setup failed"
        exit 1
fi
if ! meson install -C "$build" --destdir "$dest" >"$tmp/install.log" 2>&1; then
        cat "$tmp/install.log"
        fail "meson install failed"
        exit 1
fi

expected=(
        /usr/sbin/thpd
        /usr/bin/thpd-ctl
        "$generatordir/thpd-generator"
        /usr/lib/thpd/thpd-exec
        /usr/share/thpd/policy.d/hadoop.conf
        /usr/share/thpd/policy.d/mongodb.conf
        /usr/share/thpd/policy.d/mysql.conf
        /usr/share/thpd/policy.d/postgresql.conf
        /usr/share/thpd/policy.d/redis.conf
        /usr/share/thpd/policy.d/valkey.conf
        /usr/share/thpd/policy-vendor/go.conf
        /usr/share/thpd/policy-vendor/mongodb-8-alone.conf
        /usr/share/thpd/policy-vendor/mongodb-8.conf
        "$unitdir/thpd.service"
        "$unitdir/redis-server.service.d/thpd-await.conf"
        "$unitdir/redis-server@.service.d/thpd-await.conf"
        /usr/share/dbus-1/system.d/org.thpd1.conf
        /usr/share/dbus-1/system-services/org.thpd1.service
        /usr/share/dbus-1/interfaces/org.thpd1.Manager.xml
        /usr/share/polkit-1/actions/org.thpd1.policy
        /usr/lib/tmpfiles.d/thpd.conf
        /etc/thpd/thpd.conf
        /usr/share/man/man8/thpd.8
        /usr/share/man/man8/thpd-generator.8
        /usr/share/man/man1/thpd-ctl.1
        /usr/share/man/man5/thpd.conf.5
        /usr/share/man/man5/thpd.policy.5
        "$completionsdir/thpd-ctl"
        /usr/share/pkgconfig/thpd.pc
        /usr/share/thpd/thpd-ctl.schema.json
        /usr/share/doc/thpd/drift.md
        /usr/share/doc/thpd/outcomes.md
        /usr/share/doc/thpd/outcomes-measured.md
        /usr/share/doc/thpd/outcomes/compaction.png
        /usr/share/doc/thpd/outcomes/redis.png
        /usr/share/doc/thpd/outcomes/postgresql.png
        /usr/share/doc/thpd/packaging-redis-example.md
        /usr/share/licenses/thpd/COPYING
        /usr/share/cockpit/thpd/manifest.json
        /usr/share/cockpit/thpd/index.html
        /usr/share/cockpit/thpd/thpd.js
        /usr/share/cockpit/thpd/thpd.css
        /usr/share/cockpit/thpd/patternfly.css
)

printf '%s\n' "${expected[@]}" | sort >"$tmp/expected"
(cd "$dest" && find . -type f -o -type l) | sed 's|^\.||' | sort >"$tmp/installed"
if ! diff -u "$tmp/expected" "$tmp/installed" >"$tmp/diff"; then
        fail "installed files differ from the expected list (- missing, + unexpected):"
        sed -n '3,$p' "$tmp/diff" | grep '^[-+]'
fi

# --- the pieces fit together --------------------------------------------------------------------

pc_dir=$dest/usr/share/pkgconfig
vendorpolicydir=$(PKG_CONFIG_PATH=$pc_dir pkg-config --variable=vendorpolicydir thpd 2>&1)
[[ $vendorpolicydir == /usr/share/thpd/policy-vendor && -f $dest$vendorpolicydir/mongodb-8.conf ]] ||
        fail "pkg-config --variable=vendorpolicydir thpd says '$vendorpolicydir', which has no mongodb-8.conf"
policydir=$(PKG_CONFIG_PATH=$pc_dir pkg-config --variable=policydir thpd 2>&1)
[[ $policydir == /usr/lib/thpd/policy.d ]] ||
        fail "pkg-config --variable=policydir thpd says '$policydir', not /usr/lib/thpd/policy.d"
# A package built for another prefix (or staged into a destdir) can move it with ${prefix}.
moved=$(PKG_CONFIG_PATH=$pc_dir pkg-config --define-variable=prefix=/opt/x --variable=policydir thpd 2>&1)
[[ $moved == /opt/x/lib/thpd/policy.d ]] ||
        fail "policydir does not follow --define-variable=prefix=/opt/x: '$moved'"
iface=$(PKG_CONFIG_PATH=$pc_dir pkg-config --variable=interfacesdir thpd 2>&1)
[[ $iface == /usr/share/dbus-1/interfaces ]] || fail "pkg-config --variable=interfacesdir thpd says '$iface'"
version=$(PKG_CONFIG_PATH=$pc_dir pkg-config --modversion thpd 2>&1)
[[ $("$dest/usr/sbin/thpd" --version) == "thpd $version" ]] ||
        fail "thpd --version does not match the .pc version $version"

grep -qx 'ExecStart=/usr/sbin/thpd' "$dest$unitdir/thpd.service" ||
        fail "thpd.service does not start /usr/sbin/thpd"
grep -qx 'ExecStartPre=-/usr/bin/thpd-ctl await %n' "$dest$unitdir/redis-server.service.d/thpd-await.conf" ||
        fail "the redis-server drop-in does not run /usr/bin/thpd-ctl await"
grep -qx 'SystemdService=thpd.service' "$dest/usr/share/dbus-1/system-services/org.thpd1.service" ||
        fail "the bus activation file does not name thpd.service"

# The generator's drop-ins name the helper by the path it is installed at.
grep -q '/usr/lib/thpd/thpd-exec' "$dest$generatordir/thpd-generator" ||
        fail "thpd-generator does not name /usr/lib/thpd/thpd-exec"

for f in /usr/sbin/thpd /usr/bin/thpd-ctl "$generatordir/thpd-generator" /usr/lib/thpd/thpd-exec; do
        [[ -x $dest$f ]] || fail "$f is not executable"
done
# thpd ignores a policy (and a policy directory) that group or others can write.
while read -r f; do
        fail "$f is writable by group or others; thpd would not trust it"
done < <(find "$dest" \( -type f -o -type d \) -perm /022 -printf '/%P\n')

# The licence goes where other distributions keep licences, as it is in the source tree. Debian
# leaves it out (debian/not-installed) and points at its own copy, as Debian policy asks: no
# package may ship it.
cmp -s "$src/COPYING" "$dest/usr/share/licenses/thpd/COPYING" ||
        fail "/usr/share/licenses/thpd/COPYING is not the source tree's COPYING"
grep -qx 'usr/share/licenses/thpd/COPYING' "$src/debian/not-installed" ||
        fail "debian/not-installed does not leave out usr/share/licenses/thpd/COPYING"
if grep -Eq '^/?usr/share(/licenses)?/?$|^/?usr/share/licenses' "$src"/debian/*.install; then
        fail "a debian/*.install ships /usr/share/licenses, which holds a common licence"
fi

# The Cockpit page: a manifest Cockpit can parse, and every file index.html loads is either the
# page's own (installed beside it) or ../base1/cockpit.js from cockpit-bridge, the one Cockpit
# package cockpit-thpd depends on. The page borrows no other package's stylesheet: it ships its
# PatternFly, whose header names the release and licence that debian/copyright names.
page=$dest/usr/share/cockpit/thpd
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$page/manifest.json" 2>/dev/null ||
        fail "the Cockpit manifest $page/manifest.json is not JSON"
while read -r ref; do
        case $ref in
        ../base1/cockpit.js) ;;
        ../* | /* | *:*) fail "index.html loads $ref, which neither the page nor cockpit-bridge ships" ;;
        *) [[ -f $page/$ref ]] || fail "index.html loads $ref, which is not installed" ;;
        esac
done < <(grep -oE '(src|href)="[^"]+"' "$page/index.html" | sed -E 's/^[a-z]+="(.*)"$/\1/')
pf=$(head -c 200 "$page/patternfly.css" | grep -oE '@patternfly/patternfly [0-9][^ ]* \([^)]*\), MIT licence')
[[ -n $pf ]] || fail "$page/patternfly.css does not start with the header naming its PatternFly release and licence"
grep -qF "${pf%% (*}" "$src/debian/copyright" ||
        fail "debian/copyright does not name ${pf%% (*}, which cockpit/patternfly.css is"

# The installed policies are clean for the installed thpd-ctl. Installed files belong to whoever
# ran the install, so trust that user as thpd trusts root.
out=$(THPD_TRUSTED_UID=$(id -u) "$dest/usr/bin/thpd-ctl" verify --policy-dir="$dest/usr/share/thpd/policy.d" 2>&1)
rc=$?
n=$(grep -c "^[a-z]*\.conf: $dest/usr/share/thpd/policy.d/" <<<"$out")
[[ $rc -eq 0 && $n -eq 6 ]] || fail "thpd-ctl verify of the installed policies (exit $rc, $n of 6 found):"$'\n'"$out"

[[ $failed -eq 0 ]] && echo "ok: meson install --destdir installs the ${#expected[@]} expected files, and they fit together"
exit $failed
