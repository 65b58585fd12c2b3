#!/bin/bash
# halo-bench.sh OUTDIR: mpigpu-halo mode against mode, in alternate rounds so
# that a busy machine slows every mode alike.  One CSV per run in OUTDIR
# (run-ROUND-MODE-GRID.csv, for test/perf/halo-plot.sh), then a markdown table
# of the medians over the rounds: exchange and total time per iteration, and
# each mode's exchange speedup over rect (median of the per-round ratios).
# Environment:
#   HALO           the program (default: mpigpu-halo in PATH, or ./mpigpu-halo)
#   HALO_NP        ranks (default 8)
#   HALO_MODES     modes (default "p2p rect")
#   HALO_GRIDS     global grids (default "32:32:32 64:64:64 128:128:128")
#   HALO_ROUNDS    rounds (default 3)
#   HALO_ARGS      more arguments, e.g. "-i 20 --stencil 27"
# Every run must end with "verified"; the script stops otherwise.
set -eu
[ $# -eq 1 ] || { echo "usage: halo-bench.sh OUTDIR" >&2; exit 2; }
out=$1
mkdir -p "$out"
halo=${HALO:-$(command -v mpigpu-halo || echo ./mpigpu-halo)}
np=${HALO_NP:-8}
modes=${HALO_MODES:-p2p rect}
grids=${HALO_GRIDS:-32:32:32 64:64:64 128:128:128}
rounds=${HALO_ROUNDS:-3}
read -r -a extra <<<"${HALO_ARGS:--i 10}"
for r in $(seq 1 "$rounds"); do
    for g in $grids; do
        # Alternate the order of the modes from round to round.
        ms=$modes
        [ $((r % 2)) -eq 0 ] && ms=$(echo "$modes" | tr ' ' '\n' | tac | tr '\n' ' ')
        for m in $ms; do
            csv=$out/run-$r-$m-${g//:/x}.csv
            log=${csv%.csv}.log
            ${MPIEXEC:-mpiexec} -n "$np" "$halo" -g "$g" --mode "$m" "${extra[@]}" --csv "$csv" \
                >"$log" 2>&1 || true
            last=$(tail -n 1 "$log")
            case $last in
                verified*) ;;
                *) echo "halo-bench: $m $g: $last (see $log)" >&2; exit 1 ;;
            esac
            echo "round $r, $g, $m: $(sed -n '/^# exchange/{n;p}' "$log")" >&2
        done
    done
done
# The medians: key grid,mode -> exchange, total; the rect ratio per round.
for f in "$out"/run-*.csv; do
    b=${f##*/run-}
    printf '%s,' "${b%%-*}"
    tail -n 1 "$f"
done | awk -F, '
    function med(s,   n, a, i, j, t) { n = split(s, a, " ");
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j] + 0 < a[j - 1] + 0; j--) {
            t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    { k = $3 "," $2; ex[k] = ex[k] " " $11; to[k] = to[k] " " $13; hid[k] = hid[k] " " $14;
      e[$1, $3, $2] = $11; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
      rounds[$1] = 1 }
    END {
      print "| grid | mode | exchange (us) | total (us) | hidden | rect/mode exchange |";
      print "|---|---|---|---|---|---|";
      for (i = 1; i <= nk; i++) { split(keys[i], kk, ","); rs = "";
          for (r in rounds) if ((r, kk[1], "rect") in e && e[r, kk[1], kk[2]] > 0)
              rs = rs " " e[r, kk[1], "rect"] / e[r, kk[1], kk[2]];
          printf "| %s | %s | %.1f | %.1f | %s | %s |\n", kk[1], kk[2], med(ex[keys[i]]),
              med(to[keys[i]]), kk[2] == "enqueue" ? sprintf("%.2f", med(hid[keys[i]])) : "-",
              rs == "" ? "" : sprintf("%.2f", med(rs)) } }' | tee "$out/medians.md"
