#!/bin/bash
# plot.sh CSV... OUTDIR: draws the paper's figures from the CSV files of
# mpigpu-packbench (type,size,method,usec,gbps) and mpigpu-pingpong
# (type,size,sides,method,latency_us,gbps) with gnuplot (Debian gnuplot-nox):
#   fig4-TYPE.png      pack time against packed size, one line per method
#   fig5-vector.png    vector (stride 512 B) pack time against block length at one
#                      packed size (FIG5_SIZE, default 1048576, or the nearest present)
#   fig7-pingpong.png  ping-pong latency against size, one line per type and method
#   table2-faces.md    throughput (GB/s) of the cube faces, a markdown table
# PLOT_METHODS (comma list) limits the methods drawn in Fig. 4 and 5.
set -eu
[ $# -ge 2 ] || { echo "usage: plot.sh CSV... OUTDIR" >&2; exit 2; }
out=${!#}
mkdir -p "$out"
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pb=$tmp/pack.csv pp=$tmp/pingpong.csv
: >"$pb"; : >"$pp"
for f in "${@:1:$#-1}"; do
    case $(head -n 1 "$f") in
        type,size,method,usec,gbps) tail -n +2 "$f" >>"$pb" ;;
        type,size,sides,method,latency_us,gbps) tail -n +2 "$f" >>"$pp" ;;
        *) echo "plot.sh: skipping $f (not a packbench or pingpong CSV, or empty)" >&2 ;;
    esac
done
keep=${PLOT_METHODS:-}
want() { [ -z "$keep" ] || [[ ",$keep," == *",$1,"* ]]; }
term='set terminal pngcairo noenhanced size 800,560 font ",10"'
gp_style='set logscale xy 2; set grid; set key top left; set format x "2^%L"'

# One data file per (key, method) pair: x y rows, sorted by x.
split() { # FILE AWK_KEY_EXPR AWK_X AWK_Y PREFIX
    awk -F, -v d="$tmp" -v p="$5" "{ k = $2; print $3, $4 > (d \"/\" p \"@\" k) }" "$1"
    for f in "$tmp/$5"@*; do sort -g -k1,1 -o "$f" "$f"; done
}

# Fig. 4: per type (not faces).
split "$pb" '$1 "@" $3' '$2' '$4' f4
for t in $(awk -F, '$1 !~ /^face/ {print $1}' "$pb" | sort -u); do
    plots=
    for m in $(awk -F, -v t="$t" '$1 == t {print $3}' "$pb" | awk '!s[$0]++'); do
        want "$m" || continue
        plots+="${plots:+, }'$tmp/f4@$t@$m' using 1:2 with linespoints title '$m'"
    done
    [ -n "$plots" ] || continue
    gnuplot -e "$term; set output '$out/fig4-${t//:/_}.png'; $gp_style;
        set title 'Pack time, $t'; set xlabel 'packed bytes'; set ylabel 'us';
        plot $plots"
done

# Fig. 5: vector with 512 B stride, time against block length at one size.
size=${FIG5_SIZE:-1048576}
awk -F, -v s="$size" '$1 ~ /^vect:512:/ { d = $2 - s; if (d < 0) d = -d;
    split($1, v, ":"); bl = v[3];
    if (!(bl in best) || d < best[bl]) { best[bl] = d; sz[bl] = $2 } }
    END { for (b in sz) print b, sz[b] }' "$pb" >"$tmp/f5sizes"
if [ -s "$tmp/f5sizes" ]; then
    awk -F, 'NR == FNR { sz[$1] = $2; next }
        $1 ~ /^vect:512:/ { split($1, v, ":"); if ($2 == sz[v[3]]) print v[3] "," $3 "," $4 }' \
        FS=' ' "$tmp/f5sizes" FS=, "$pb" | sort -t, -k1,1n >"$tmp/f5"
    plots=
    for m in $(cut -d, -f2 "$tmp/f5" | awk '!s[$0]++'); do
        want "$m" || continue
        awk -F, -v m="$m" '$2 == m {print $1, $3}' "$tmp/f5" >"$tmp/f5@$m"
        plots+="${plots:+, }'$tmp/f5@$m' using 1:2 with linespoints title '$m'"
    done
    gnuplot -e "$term; set output '$out/fig5-vector.png'; set logscale xy 2; set grid;
        set key top left; set xtics (8, 16, 32, 64, 128, 256);
        set title 'Vector pack time at about $size packed bytes, 512 B stride';
        set xlabel 'block length (bytes)'; set ylabel 'us'; plot $plots"
fi

# Fig. 7: ping-pong latency.
if [ -s "$pp" ]; then
    split "$pp" '$1 "@" $3 "@" $4' '$2' '$5' f7
    plots=
    for k in $(awk -F, '{print $1 "@" $3 "@" $4}' "$pp" | awk '!s[$0]++'); do
        plots+="${plots:+, }'$tmp/f7@$k' using 1:2 with linespoints title '${k//@/ }'"
    done
    gnuplot -e "$term; set output '$out/fig7-pingpong.png'; $gp_style;
        set title 'Ping-pong latency (half round trip)'; set xlabel 'packed bytes';
        set ylabel 'us'; plot $plots"
fi

# Table 2: faces, GB/s by cube, face and method.
if grep -q '^face:' "$pb"; then
    awk -F, '$1 ~ /^face:/ { split($1, v, ":"); k = v[2] "^3 | " v[3];
        if (!(k in seen)) { seen[k] = 1; keys[++nk] = k; n3[k] = v[2] + 0 }
        if (!($3 in ms)) { ms[$3] = 1; meth[++nm] = $3 }
        g[k, $3] = $5 }
        END { for (i = 2; i <= nk; i++)
                  for (j = i; j > 1 && (n3[keys[j]] < n3[keys[j - 1]] || (n3[keys[j]] == \
                       n3[keys[j - 1]] && keys[j] < keys[j - 1])); j--) {
                      t = keys[j]; keys[j] = keys[j - 1]; keys[j - 1] = t }
              printf "| cube | face |"; for (j = 1; j <= nm; j++) printf " %s |", meth[j];
              printf "\n|---|---|"; for (j = 1; j <= nm; j++) printf "---|"; printf "\n";
              for (i = 1; i <= nk; i++) { k = keys[i]; printf "| %s |", k;
                  for (j = 1; j <= nm; j++) printf " %s |", ((k, meth[j]) in g) ? g[k, meth[j]] : "";
                  printf "\n" } }' "$pb" >"$out/table2-faces.md"
fi
ls "$out"
