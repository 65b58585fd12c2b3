#!/bin/bash
# What encrypting the TCP lanes costs (issue 27's targets), on loopback, in
# one run: mpigpu-vclbench through "mpigpu virtual" over the TCP lanes
# (MPIGPU_VCL_SHM=0: the shared-memory and one-copy lanes carry no
# ciphertext) with encryption off, on with AES-256-GCM (where the CPU has
# AES-NI) and on with ChaCha20-Poly1305, the three interleaved ROUNDS times
# so that a busy neighbour slows each alike; best of all rounds.  Targets:
#   - write and read bandwidth from 8 MiB: at least 0.9x the plain figure;
#   - a small kernel launch + clFinish (median): at most plain + 10 us.
# Prints each as met or MISSED.  A benchmark, not a test: it fails only
# when a run fails.
#
#   vclcryptbench.sh [ROUNDS] [BENCH ARGS...]   (default: 3 -n 3 -l 1000 -m 1:64)
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=proxy-env.sh
. "$here/proxy-env.sh"
mgvcl_skip_unless_built || exit 77
bench=$MGVCL_BUILDDIR/test/remote/mpigpu-vclbench
[ -x "$bench" ] || { echo "vclcryptbench: $bench not built (make check builds it)" >&2; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/vclcrypt.XXXXXX") || exit 1
MGVCL_EXIT_HOOK='rm -rf "$out"'
trap "$MGVCL_EXIT_HOOK" EXIT
rounds=3
case ${1:-} in [0-9]*) rounds=$1; shift ;; esac
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-n 3 -l 1000 -m 1:64)
export MPIGPU_VCL_SHM=${MPIGPU_VCL_SHM:-0} # 1: the default lanes (same-host: no ciphertext)
modes="plain aes256gcm chacha20poly1305"
grep -qw aes /proc/cpuinfo 2>/dev/null || modes="plain chacha20poly1305"

for r in $(seq "$rounds"); do
    for m in $modes; do
        if [ "$m" = plain ]; then
            export MPIGPU_VCL_ENCRYPT=0 MPIGPU_VCL_CIPHER=auto
        else
            export MPIGPU_VCL_ENCRYPT=1 MPIGPU_VCL_CIPHER=$m
        fi
        mgvcl_start virtual || exit 1
        if ! "$bench" "${args[@]}" --csv "$out/$m.$r.csv" "$MGVCL_PLATFORM" >"$out/$m.$r.txt" 2>&1; then
            echo "vclcryptbench: $m run $r failed:" >&2
            cat "$out/$m.$r.txt" >&2
            mgvcl_proxy_log >&2
            exit 1
        fi
        grep -q "authenticated, $( [ "$m" = plain ] && echo plain || echo encrypted)" "$MGVCL_DIR/proxy.log" ||
            { echo "vclcryptbench: the $m run's session was not $m:" >&2; mgvcl_proxy_log >&2; exit 1; }
        mgvcl_stop || exit 1
        echo "vclcryptbench: round $r, $m: done"
    done
done

# CSV: platform,test,bytes,value,unit.  Best bandwidth, lowest median launch.
for m in $modes; do cat "$out/$m".*.csv | sed "s/^/$m,/"; done | awk -F, -v modes="$modes" '
    $3 == "write" || $3 == "read" { k = $1 SUBSEP $3 SUBSEP $4; if ($5 > v[k]) v[k] = $5; size[$4] = 1 }
    $3 == "launch_median" { k = $1 SUBSEP "launch"; if (!(k in v) || $5 < v[k]) v[k] = $5 }
    END {
        nm = split(modes, m, " ")
        ns = 0
        for (s in size) sz[++ns] = s + 0
        for (i = 1; i <= ns; i++) for (j = i + 1; j <= ns; j++) if (sz[j] < sz[i]) { t = sz[i]; sz[i] = sz[j]; sz[j] = t }
        missed = 0
        printf "%-6s %6s %12s", "test", "MiB", "plain GB/s"
        for (c = 2; c <= nm; c++) printf " %18s %6s", m[c] " GB/s", "ratio"
        printf "  target\n"
        for (t = 0; t < 2; t++) {
            test = t ? "read" : "write"
            for (i = 1; i <= ns; i++) {
                s = sz[i]; a = v["plain", test, s]
                printf "%-6s %6d %12.2f", test, s / 1048576, a
                tgt = "-"
                for (c = 2; c <= nm; c++) {
                    b = v[m[c], test, s]; r = a > 0 ? b / a : 0
                    printf " %18.2f %6.2f", b, r
                    if (s >= 8 * 1048576) {
                        ok = r >= 0.9
                        tgt = (tgt == "-" ? "" : tgt ", ") m[c] (ok ? " met" : " MISSED")
                        if (!ok) missed++
                    }
                }
                printf "  %s\n", tgt
            }
        }
        a = v["plain", "launch"]
        printf "launch + clFinish (median): plain %.1f us", a
        for (c = 2; c <= nm; c++) {
            b = v[m[c], "launch"]; ok = b - a <= 10
            printf "; %s %.1f us (%+.1f us, %s)", m[c], b, b - a, ok ? "met" : "MISSED"
            if (!ok) missed++
        }
        printf "\nvclcryptbench: %d target(s) missed (targets: >= 0.9x plain from 8 MiB; <= plain + 10 us)\n", missed
    }'
