#!/bin/sh
# The user guide's settings tables (doc/user-guide.md: "Settings" for the
# library, "Remote devices" for the ICD and the proxy) against the settings
# table, as mpigpu-info --params --all --tsv prints it: every user setting
# has exactly one row, no row names a test switch or an unknown variable, and
# a setting whose default is a value shows that value first in its default
# cell.  Run by make check with srcdir and abs_top_builddir in the environment.
set -u
info=${abs_top_builddir:-.}/mpigpu-info
guide=${srcdir:-.}/doc/user-guide.md
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# A malformed setting in this environment would make the exit status 1; the
# table is printed all the same.
"$info" --params --all --tsv >"$tmp/table" 2>"$tmp/err"
if [ ! -s "$tmp/table" ]; then
    echo "params: mpigpu-info --params printed nothing:" >&2
    cat "$tmp/err" >&2
    exit 1
fi
# Guide rows: | `NAME` | meaning | default |  ->  NAME <tab> default cell
sed -n 's/^| `\(MPIGPU_[A-Z0-9_]*\)` |.*| *\([^|]*[^| ]\) *|$/\1\t\2/p' "$guide" >"$tmp/guide"

fail=0
bad() {
    echo "params: $*" >&2
    fail=1
}
# columns: name reader class type default value help; an empty default (unset
# has a meaning of its own) becomes "-", since read joins adjacent tabs.
awk -F '\t' -v OFS='\t' '$5 == "" {$5 = "-"} {print}' "$tmp/table" >"$tmp/rows"
while IFS="$(printf '\t')" read -r name reader class type def value help; do
    rows=$(awk -F '\t' -v n="$name" '$1 == n' "$tmp/guide" | wc -l)
    if [ "$class" = test ]; then
        [ "$rows" -eq 0 ] || bad "$name is a switch for tests, yet the user guide lists it"
        continue
    fi
    if [ "$rows" -ne 1 ]; then
        bad "$name ($reader) has $rows rows in the user guide's settings tables, not 1"
        continue
    fi
    [ "$def" != - ] || continue
    cell=$(awk -F '\t' -v n="$name" '$1 == n {print $2}' "$tmp/guide")
    case "$cell" in
    "\`$def\`"*) ;;
    *) bad "$name: the table's default is $def, the user guide's \"$cell\"" ;;
    esac
done <"$tmp/rows"
cut -f1 "$tmp/guide" | while read -r name; do
    grep -q "^$name	" "$tmp/table" || echo "$name"
done >"$tmp/unknown"
while read -r name; do
    bad "the user guide lists $name, which no reader declares (src/common/mgparam_table.c)"
done <"$tmp/unknown"
[ $fail -eq 0 ] && echo "params: $(grep -c '	user	' "$tmp/table") user settings match the user guide"
exit $fail
