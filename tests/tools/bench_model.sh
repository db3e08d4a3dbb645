#!/usr/bin/env bash
# bench_model.sh -- `ubjfs bench micro|modes --device SPEC` with timed
# device models on the virtual clock (docs/TOOLS.md, docs/DEVICES.md).
# Checks values, never timings: the modeled figures of a virtual-clock run
# are deterministic, so
#  - bench micro --csv on nand:slc@ram has the four model columns, and two
#    identical invocations give identical model columns in every row;
#  - its fsync row (mode none) waits for the device: model_us_per_op > 0,
#    and the cached-read row does not (0);
#  - bench modes --csv on nand:slc: mode none's modeled median per
#    append + fsync is a whole number (>= 2) of SLC 4 KiB programs of
#    780.96 us (docs/DEVICES.md: data + inode at least, no GC on a fresh
#    device), and mode ubj's is the NVM cost model's time alone (its
#    commit goes to NVM, whose model runs on the device's clock: > 0 under
#    --nvm-profile pcm, within 10% of the NVM ns per fsync);
#  - a file: leaf under a model is created and removed like a plain one;
#  - bad specs, profiles and clocks exit 2 with a message.
. "$(dirname "$0")/../common/lib.sh" bench_model
B=$UBJ_TOOL

# micro_model -- the model columns of a small bench micro run
micro_model() {
  "$B" bench micro --ops 300 --runs 1 --fsync-ops 20 --size 16M --device "$1" --csv |
    awk -F, 'NR > 1 { print $1, $6, $7, $8, $9 }'
}

run 0 "$B" bench micro --ops 300 --runs 1 --fsync-ops 20 --size 16M --device nand:slc@ram --csv
[ "$(head -n 1 "$tmp/out")" = \
  "op,ops,seconds,ops_per_s,ns_per_op,model_seconds,model_us_per_op,model_ops_per_s,energy_mj_per_op" ] ||
  fail "csv header with a model: $(head -n 1 "$tmp/out")"
[ "$(grep -c . "$tmp/out")" -eq 8 ] || fail "csv has $(grep -c . "$tmp/out") lines, want 8"
fs_us=$(awk -F, '$1 == "fsync-4k-append" { print $7 }' "$tmp/out")
rd_us=$(awk -F, '$1 == "read-4k-cached" { print $7 }' "$tmp/out")
awk -v v="$fs_us" 'BEGIN { exit !(v > 0) }' || fail "fsync row modeled us/op = '$fs_us', want > 0"
[ "$rd_us" = "0.000" ] || fail "cached-read row modeled us/op = '$rd_us', want 0.000"

a=$(micro_model nand:slc@ram)
b=$(micro_model nand:slc@ram)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "two virtual-clock runs differ: '$a' vs '$b'"
c=$(micro_model hdd:hp_c2249a)
[ "$a" != "$c" ] || fail "nand:slc and hdd:hp_c2249a gave the same modeled figures"

run 0 "$B" bench modes --ops 50 --size 32M --cache 1024 --device nand:slc \
    --nvm-profile pcm --modes none,ubj --csv
none_med=$(awk -F, '$1 == "none" && $2 == "model_median_us" { print $3 }' "$tmp/out")
ubj_med=$(awk -F, '$1 == "ubj" && $2 == "model_median_us" { print $3 }' "$tmp/out")
ubj_nvm=$(awk -F, '$1 == "ubj" && $2 == "nvm_model_ns_per_fsync" { print $3 }' "$tmp/out")
awk -v v="$none_med" 'BEGIN { k = v / 780.96; r = k - int(k + 0.5);
                              exit !(k >= 1.999 && r < 0.001 && r > -0.001) }' ||
  fail "mode none on nand:slc: modeled median $none_med us is not k x 780.96 (k >= 2)"
awk -v v="$ubj_nvm" 'BEGIN { exit !(v > 0) }' || fail "mode ubj: NVM ns per fsync '$ubj_nvm', want > 0"
awk -v m="$ubj_med" -v n="$ubj_nvm" 'BEGIN { d = m * 1000 - n; if (d < 0) d = -d;
                                             exit !(m > 0 && d <= n / 10) }' ||
  fail "mode ubj on nand:slc: modeled median '$ubj_med' us is not its NVM time ($ubj_nvm ns)"

f=$tmp/model.img
run 0 "$B" bench micro --ops 50 --runs 1 --fsync-ops 5 --size 16M --device "ssd:sata@file:$f"
grep -q "^ubjfs bench micro: ssd:sata@file:$f device" "$tmp/out" ||
  fail "banner with a model over a file: $(head -n 1 "$tmp/out")"
[ -e "$f" ] && fail "bench left its image file behind"

for bad in "micro --device nand:nosuch" "micro --device ram@nand:slc" "micro --device file:" \
           "micro --clock sometimes" "micro --nvm-profile nosuch" "modes --device hdd:" \
           "modes --clock x" "ubj --device nand:slc@" "ubj --device disk:slc" \
           "ubj --nvm-profile nosuch" "modes --nvm-profile nosuch"; do
  # shellcheck disable=SC2086  # the options split on purpose
  run 2 "$B" bench $bad
  head -n 1 "$tmp/err" | grep -q "^ubjfs bench: invalid" || fail "bench $bad: message '$(head -n 1 "$tmp/err")'"
done

[ "$fails" -eq 0 ] && echo "bench_model: all checks passed"
exit $((fails > 0))
