#!/bin/bash
# halo-plot.sh CSV... OUTDIR: mode comparisons and scaling from the CSV files
# of mpigpu-halo --csv (one header and one row per run; concatenate as many
# runs as you like), with gnuplot (Debian gnuplot-nox):
#   halo-exchange.png  exchange time per iteration against cells per rank,
#                      one line per mode and rank count
#   halo-total.png     the same for the whole iteration (exchange and compute)
#   halo-scaling.png   time per iteration against the number of ranks, one
#                      line per mode and global grid (strong scaling)
#   halo-table.md      every run as a markdown table, with each mode's
#                      exchange speedup over rect on the same problem
# Example (8 ranks, PoCL, three sizes, two modes):
#   for g in 32:32:32 64:64:64 128:128:128; do for m in p2p rect; do
#       mpiexec -n 8 mpigpu-halo -g $g -i 20 --mode $m --csv halo-$m-${g%%:*}.csv
#   done; done
#   test/perf/halo-plot.sh halo-*.csv plots/
set -eu
[ $# -ge 2 ] || { echo "usage: halo-plot.sh CSV... OUTDIR" >&2; exit 2; }
out=${!#}
mkdir -p "$out"
command -v gnuplot >/dev/null || { echo "halo-plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows=$tmp/rows.csv
: >"$rows"
for f in "${@:1:$#-1}"; do
    case $(head -n 1 "$f") in
        mode,grid,procs,ranks,width,stencil,periodic,iters,bytes,exchange_us,compute_us,total_us,hidden,*)
            tail -n +2 "$f" >>"$rows" ;;
        *) echo "halo-plot.sh: skipping $f (not an mpigpu-halo CSV, or empty)" >&2 ;;
    esac
done
[ -s "$rows" ] || { echo "halo-plot.sh: no rows" >&2; exit 1; }
term='set terminal pngcairo noenhanced size 800,560 font ",10"'

# cells(grid) per rank: the product of NX:NY:NZ over the ranks.
cpr='split($2, g, ":"); c = g[1] * g[2] * g[3] / $4'

# One data file per key: x y rows sorted by x; prints the keys in order seen.
series() { # PREFIX AWK_KEY AWK_X AWK_Y
    awk -F, -v d="$tmp" -v p="$1" "{ $cpr; k = $2; print $3, $4 > (d \"/\" p \"@\" k);
        if (!(k in s)) { s[k] = 1; print k } }" "$rows"
    for f in "$tmp/$1"@*; do sort -g -k1,1 -o "$f" "$f"; done
}

# plot PREFIX OUTPUT TITLE XLABEL AWK_KEY AWK_X AWK_Y
plot() {
    plots=
    while read -r k; do
        plots+="${plots:+, }'$tmp/$1@$k' using 1:2 with linespoints title '${k//@/ }'"
    done < <(series "$1" "$5" "$6" "$7")
    gnuplot -e "$term; set output '$out/$2'; set logscale xy 2; set grid; set key top left;
        set title '$3'; set xlabel '$4'; set ylabel 'us per iteration'; plot $plots"
}

key='$1 "@" $4 "@ranks@" $6 "pt@w" $5'
plot ex halo-exchange.png 'Halo exchange per iteration' 'cells per rank' "$key" c '$10'
plot to halo-total.png 'Iteration (exchange and stencil)' 'cells per rank' "$key" c '$12'
plot sc halo-scaling.png 'Strong scaling: iteration time' 'ranks' \
    '$1 "@" $2 "@" $6 "pt@w" $5' '$4' '$12'

# The table, with exchange(rect) / exchange(mode) on the same problem.
awk -F, '{ p = $2 "," $3 "," $5 "," $6 "," $7; if ($1 == "rect") rect[p] = $10; r[NR] = $0 }
    END { print "| grid | procs | stencil | width | mode | exchange (us) | compute (us) | total (us) | hidden | rect/mode exchange |";
          print "|---|---|---|---|---|---|---|---|---|---|";
          for (i = 1; i <= NR; i++) { split(r[i], f, ","); p = f[2] "," f[3] "," f[5] "," f[6] "," f[7];
              ratio = (p in rect) && f[10] > 0 ? sprintf("%.2f", rect[p] / f[10]) : "";
              printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f[2], f[3], f[6], f[5],
                     f[1], f[10], f[11], f[12], f[1] == "enqueue" ? f[13] : "-", ratio } }' \
    "$rows" >"$out/halo-table.md"
ls "$out"
