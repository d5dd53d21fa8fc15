#!/usr/bin/env bash
# Usage: hack/cpu-by-process.sh SECONDS
# Prints the CPU seconds each process name used over the next SECONDS, and the
# cores that makes, read from /proc/PID/stat (utime+stime) at the start and the
# end. Run it beside a benchmark to see how the machine's cores are shared
# between the API server, the scheduler, kwok and etcd (docs/benchmarks.md).
set -euo pipefail
secs=${1:?usage: $0 SECONDS}
snapshot() {
  for f in /proc/[0-9]*/stat; do
    { read -r line <"$f"; } 2>/dev/null || continue
    pid=${line%% *}
    comm=${line#*(}; comm=${comm%)*}
    rest=${line##*) }
    # shellcheck disable=SC2086
    set -- $rest
    echo "$pid ${comm// /_} $((${12} + ${13}))"
  done
}
ticks=$(getconf CLK_TCK)
a=$(snapshot)
sleep "$secs"
b=$(snapshot)
awk -v secs="$secs" -v ticks="$ticks" '
  NR == FNR { before[$1 " " $2] = $3; next }
  ($1 " " $2) in before { used[$2] += ($3 - before[$1 " " $2]) / ticks }
  END {
    for (c in used) { total += used[c]; if (used[c] >= 0.05) printf "%.2f %-24s %8.1f CPU-s %5.2f cores\n", used[c], c, used[c], used[c] / secs }
    printf "%.2f %-24s %8.1f CPU-s %5.2f cores\n", total + 1e9, "all processes", total, total / secs
  }' <(echo "$a") <(echo "$b") | sort -k1,1 -gr | cut -d" " -f2-
