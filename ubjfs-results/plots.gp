# plots.gp -- written by `ubjfs bench`; run it in this directory:
#   gnuplot plots.gp

set terminal svg size 1120,440 noenhanced font "Sans,10" background rgb "white"
set output "throughput-ssd-sata.svg"
set datafile missing "?"
set style data histograms
set style fill solid 0.85 border -1
set boxwidth 0.85
set grid ytics
set yrange [0:*]
set offsets 0, 0, graph 0.3, 0
set key top left
set xtics rotate by -30
set multiplot layout 1,4 title "ubjfs bench (virtual clock, seed 1): throughput on ssd:sata (transactions/s, higher is better)"
set style histogram clustered gap 1
set ylabel "transactions/s"
set title "postmark"
plot 'throughput-ssd-sata.dat' index 0 using 2:xtic(1) title columnheader(2) lc 1, 'throughput-ssd-sata.dat' index 0 using 3 title columnheader(3) lc 2, 'throughput-ssd-sata.dat' index 0 using 4 title columnheader(4) lc 3, 'throughput-ssd-sata.dat' index 0 using 5 title columnheader(5) lc 4
set title "varmail"
unset key
unset ylabel
plot 'throughput-ssd-sata.dat' index 1 using 2:xtic(1) title columnheader(2) lc 1, 'throughput-ssd-sata.dat' index 1 using 3 title columnheader(3) lc 2, 'throughput-ssd-sata.dat' index 1 using 4 title columnheader(4) lc 3, 'throughput-ssd-sata.dat' index 1 using 5 title columnheader(5) lc 4
set title "fileserver"
plot 'throughput-ssd-sata.dat' index 2 using 2:xtic(1) title columnheader(2) lc 1, 'throughput-ssd-sata.dat' index 2 using 3 title columnheader(3) lc 2, 'throughput-ssd-sata.dat' index 2 using 4 title columnheader(4) lc 3, 'throughput-ssd-sata.dat' index 2 using 5 title columnheader(5) lc 4
set title "iozone"
plot 'throughput-ssd-sata.dat' index 3 using 2:xtic(1) title columnheader(2) lc 1, 'throughput-ssd-sata.dat' index 3 using 3 title columnheader(3) lc 2, 'throughput-ssd-sata.dat' index 3 using 4 title columnheader(4) lc 3, 'throughput-ssd-sata.dat' index 3 using 5 title columnheader(5) lc 4
unset multiplot

set terminal svg size 1120,440 noenhanced font "Sans,10" background rgb "white"
set output "bytes-ssd-sata.svg"
set datafile missing "?"
set style data histograms
set style fill solid 0.85 border -1
set boxwidth 0.85
set grid ytics
set yrange [0:*]
set offsets 0, 0, graph 0.3, 0
set key top left
set xtics rotate by -30
set multiplot layout 1,4 title "ubjfs bench (virtual clock, seed 1): storage bytes written on ssd:sata by category (MiB)"
set style histogram rowstacked
set ylabel "MiB written"
set title "postmark"
plot 'bytes-ssd-sata.dat' index 0 using 2:xtic(1) title columnheader(2) lc 1, 'bytes-ssd-sata.dat' index 0 using 3 title columnheader(3) lc 2, 'bytes-ssd-sata.dat' index 0 using 4 title columnheader(4) lc 3, 'bytes-ssd-sata.dat' index 0 using 5 title columnheader(5) lc 4
set title "varmail"
unset key
unset ylabel
plot 'bytes-ssd-sata.dat' index 1 using 2:xtic(1) title columnheader(2) lc 1, 'bytes-ssd-sata.dat' index 1 using 3 title columnheader(3) lc 2, 'bytes-ssd-sata.dat' index 1 using 4 title columnheader(4) lc 3, 'bytes-ssd-sata.dat' index 1 using 5 title columnheader(5) lc 4
set title "fileserver"
plot 'bytes-ssd-sata.dat' index 2 using 2:xtic(1) title columnheader(2) lc 1, 'bytes-ssd-sata.dat' index 2 using 3 title columnheader(3) lc 2, 'bytes-ssd-sata.dat' index 2 using 4 title columnheader(4) lc 3, 'bytes-ssd-sata.dat' index 2 using 5 title columnheader(5) lc 4
set title "iozone"
plot 'bytes-ssd-sata.dat' index 3 using 2:xtic(1) title columnheader(2) lc 1, 'bytes-ssd-sata.dat' index 3 using 3 title columnheader(3) lc 2, 'bytes-ssd-sata.dat' index 3 using 4 title columnheader(4) lc 3, 'bytes-ssd-sata.dat' index 3 using 5 title columnheader(5) lc 4
unset multiplot

set terminal svg size 1120,440 noenhanced font "Sans,10" background rgb "white"
set output "throughput-hdd-modern7200.svg"
set datafile missing "?"
set style data histograms
set style fill solid 0.85 border -1
set boxwidth 0.85
set grid ytics
set yrange [0:*]
set offsets 0, 0, graph 0.3, 0
set key top left
set xtics rotate by -30
set multiplot layout 1,4 title "ubjfs bench (virtual clock, seed 1): throughput on hdd:modern7200 (transactions/s, higher is better)"
set style histogram clustered gap 1
set ylabel "transactions/s"
set title "postmark"
plot 'throughput-hdd-modern7200.dat' index 0 using 2:xtic(1) title columnheader(2) lc 1, 'throughput-hdd-modern7200.dat' index 0 using 3 title columnheader(3) lc 2, 'throughput-hdd-modern7200.dat' index 0 using 4 title columnheader(4) lc 3, 'throughput-hdd-modern7200.dat' index 0 using 5 title columnheader(5) lc 4
set title "varmail"
unset key
unset ylabel
plot 'throughput-hdd-modern7200.dat' index 1 using 2:xtic(1) title columnheader(2) lc 1, 'throughput-hdd-modern7200.dat' index 1 using 3 title columnheader(3) lc 2, 'throughput-hdd-modern7200.dat' index 1 using 4 title columnheader(4) lc 3, 'throughput-hdd-modern7200.dat' index 1 using 5 title columnheader(5) lc 4
set title "fileserver"
plot 'throughput-hdd-modern7200.dat' index 2 using 2:xtic(1) title columnheader(2) lc 1, 'throughput-hdd-modern7200.dat' index 2 using 3 title columnheader(3) lc 2, 'throughput-hdd-modern7200.dat' index 2 using 4 title columnheader(4) lc 3, 'throughput-hdd-modern7200.dat' index 2 using 5 title columnheader(5) lc 4
set title "iozone"
plot 'throughput-hdd-modern7200.dat' index 3 using 2:xtic(1) title columnheader(2) lc 1, 'throughput-hdd-modern7200.dat' index 3 using 3 title columnheader(3) lc 2, 'throughput-hdd-modern7200.dat' index 3 using 4 title columnheader(4) lc 3, 'throughput-hdd-modern7200.dat' index 3 using 5 title columnheader(5) lc 4
unset multiplot

set terminal svg size 1120,440 noenhanced font "Sans,10" background rgb "white"
set output "bytes-hdd-modern7200.svg"
set datafile missing "?"
set style data histograms
set style fill solid 0.85 border -1
set boxwidth 0.85
set grid ytics
set yrange [0:*]
set offsets 0, 0, graph 0.3, 0
set key top left
set xtics rotate by -30
set multiplot layout 1,4 title "ubjfs bench (virtual clock, seed 1): storage bytes written on hdd:modern7200 by category (MiB)"
set style histogram rowstacked
set ylabel "MiB written"
set title "postmark"
plot 'bytes-hdd-modern7200.dat' index 0 using 2:xtic(1) title columnheader(2) lc 1, 'bytes-hdd-modern7200.dat' index 0 using 3 title columnheader(3) lc 2, 'bytes-hdd-modern7200.dat' index 0 using 4 title columnheader(4) lc 3, 'bytes-hdd-modern7200.dat' index 0 using 5 title columnheader(5) lc 4
set title "varmail"
unset key
unset ylabel
plot 'bytes-hdd-modern7200.dat' index 1 using 2:xtic(1) title columnheader(2) lc 1, 'bytes-hdd-modern7200.dat' index 1 using 3 title columnheader(3) lc 2, 'bytes-hdd-modern7200.dat' index 1 using 4 title columnheader(4) lc 3, 'bytes-hdd-modern7200.dat' index 1 using 5 title columnheader(5) lc 4
set title "fileserver"
plot 'bytes-hdd-modern7200.dat' index 2 using 2:xtic(1) title columnheader(2) lc 1, 'bytes-hdd-modern7200.dat' index 2 using 3 title columnheader(3) lc 2, 'bytes-hdd-modern7200.dat' index 2 using 4 title columnheader(4) lc 3, 'bytes-hdd-modern7200.dat' index 2 using 5 title columnheader(5) lc 4
set title "iozone"
plot 'bytes-hdd-modern7200.dat' index 3 using 2:xtic(1) title columnheader(2) lc 1, 'bytes-hdd-modern7200.dat' index 3 using 3 title columnheader(3) lc 2, 'bytes-hdd-modern7200.dat' index 3 using 4 title columnheader(4) lc 3, 'bytes-hdd-modern7200.dat' index 3 using 5 title columnheader(5) lc 4
unset multiplot
