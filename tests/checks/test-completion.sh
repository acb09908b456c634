#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# data/thpd-ctl.bash-completion against the thpd-ctl it completes: every option and command of
# --help, the property names of show (as arguments and after -p/--property=), and for cat the
# policy names the daemon lists (a stand-in thpd-ctl early in PATH plays the daemon's part).
#
# Usage: test-completion.sh THPD_CTL COMPLETION_FILE

set -u

ctl=$1
completion=$2
bash_completion=/usr/share/bash-completion/bash_completion
if [[ ! -r $bash_completion ]]; then
        echo "SKIP: $bash_completion is not installed (Debian: bash-completion)"
        exit 77
fi

failed=0
fail() {
        echo "FAIL: $*"
        failed=1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=/dev/null
source "$bash_completion"
# shellcheck source=/dev/null
source "$completion"

# Prints the completions of a command line whose last word is being completed, one per line.
complete_line() {
        local line=$1
        COMP_LINE=$line
        COMP_POINT=${#line}
        # Split as readline does, with '=' breaking words.
        read -ra COMP_WORDS <<<"${line//=/ = }"
        [[ $line == *' ' || $line == *= ]] && COMP_WORDS+=('')
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMPREPLY=()
        _thpd_ctl thpd-ctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf '%s\n' "${COMPREPLY[@]}" | sort -u
}

expect_all() {
        local what=$1 got=$2 want
        shift 2
        for want in "$@"; do
                grep -qxF -- "$want" <<<"$got" || fail "$what: '$want' not offered; got: $(tr '\n' ' ' <<<"$got")"
        done
}

# Every long option of --help (those with a value end in '=').
help=$("$ctl" --help)
mapfile -t options < <(grep -oE -- '--[a-z][a-z-]*=?' <<<"$help" | sort -u)
[[ ${#options[@]} -gt 5 ]] || fail "found no options in thpd-ctl --help"
expect_all "options" "$(complete_line 'thpd-ctl --')" "${options[@]}"
expect_all "short options" "$(complete_line 'thpd-ctl -')" -h -l -p

mapfile -t verbs < <(sed -n '/^Commands:/,/^[A-Z]/{/^  [a-z]/p}' <<<"$help" | awk '{ print $1 }')
[[ ${#verbs[@]} -gt 5 ]] || fail "found no commands in thpd-ctl --help"
expect_all "commands" "$(complete_line 'thpd-ctl ')" "${verbs[@]}"
expect_all "commands after an option" "$(complete_line 'thpd-ctl --user ')" "${verbs[@]}"

# The property names, as thpd-ctl knows them: it lists them for a name nothing resembles.
known=$("$ctl" show -p zzzzzzzzzz 2>&1 | sed -n "s/.*thpd has: \(.*\)\. See.*/\1/p")
mapfile -t properties < <(tr ',' '\n' <<<"$known" | tr -d ' ')
[[ ${#properties[@]} -gt 5 ]] || fail "found no property names in: $known"
expect_all "show" "$(complete_line 'thpd-ctl show ')" "${properties[@]}"
expect_all "show -p" "$(complete_line 'thpd-ctl show -p ')" "${properties[@]}"
expect_all "show --property=" "$(complete_line 'thpd-ctl show --property=')" "${properties[@]}"
expect_all "-p after a comma" "$(complete_line 'thpd-ctl show -p Version,Sto')" Version,StormState Version,StormAction Version,Storms
[[ $(complete_line 'thpd-ctl show Ver') == Version ]] || fail "show Ver: $(complete_line 'thpd-ctl show Ver')"
[[ $(complete_line 'thpd-ctl -p Version ') == *status* ]] || fail "the value of -p was taken for the command"

# cat: the names the daemon lists, asked on the bus given (--user).
mkdir "$tmp/bin"
cat >"$tmp/bin/thpd-ctl" <<'END'
#!/bin/sh
echo "$*" >>"$CALLS"
[ "$*" = "--user list --no-legend" ] || exit 3
printf 'alpha.conf  active    a.service  /etc/thpd/policy.d/alpha.conf\n'
printf 'beta.conf   masked    -          /etc/thpd/policy.d/beta.conf (mask)\n'
END
chmod +x "$tmp/bin/thpd-ctl"
export CALLS=$tmp/calls
got=$(PATH=$tmp/bin:$PATH complete_line 'thpd-ctl --user cat ')
[[ $got == $'alpha.conf\nbeta.conf' ]] || fail "cat: $got"
grep -qx -- '--user list --no-legend' "$CALLS" || fail "cat did not ask thpd-ctl --user list: $(cat "$CALLS")"

expect_all "override options" "$(complete_line 'thpd-ctl override --')" --for= --replace --clear

[[ $failed -eq 0 ]] && echo "ok: the completion offers every option, command, property and policy name"
exit $failed
