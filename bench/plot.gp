# Latency distributions of one bench series, drawn from the .dat file bench/run.mjs writes next to the
# JSON results (bench/results/<date>-<scenario>-<series>.dat): the first column is the percentile,
# each further column one contender (its header names it), values are the medians over the rounds.
#
#   gnuplot -e "datafile='x.dat'; outfile='x.png'; plottitle='…'; unit='µs'" bench/plot.gp
#
# Both axes are logarithmic: x as 100/(100-percentile), so the tail (90, 99, 99.9, max) gets as much room
# as the body, and y because contenders differ by factors and tails by orders of magnitude.
# The maximum (percentile 100 in the file) is drawn where 99.99 would be.
if (!exists("unit")) unit = "µs"
if (!exists("plottitle")) plottitle = datafile
set terminal pngcairo size 900,540 noenhanced font ",10"
set output outfile
set title plottitle
set xlabel "percentile"
set ylabel unit
set logscale y
set grid xtics ytics mytics
set key top left autotitle columnhead
x(p) = 100.0 / (100.0 - (p < 100 ? p : 99.99))
set logscale x
set xrange [1:20000]
set xtics ("1" x(1), "50" x(50), "90" x(90), "99" x(99), "99.9" x(99.9), "max" x(100))
stats datafile skip 1 nooutput
plot for [c=2:STATS_columns] datafile using (x($1)):c with linespoints lw 2 pt 7 ps 0.6
