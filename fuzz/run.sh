#!/usr/bin/env bash
# Fuzzes stormsim (README.md, "Fuzzing").
#
#   fuzz/run.sh [TARGET] [SECONDS] [WORKERS]
#
# TARGET: `scenario` (arbitrary bytes as a scenario file; default) or
# `sets` (bundled scenarios with fuzzed --set values). SECONDS: default
# 600. WORKERS: default 1. Needs a nightly toolchain and cargo-fuzz
# (`cargo install cargo-fuzz`). The working corpus grows in
# fuzz/corpus/TARGET (not committed); crashes land in
# fuzz/artifacts/TARGET/. `fuzz/keep.sh TARGET` minimises the corpus into
# fuzz/regressions/TARGET, which `cargo test` replays.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-scenario}
secs=${2:-600}
workers=${3:-1}
corpus=fuzz/corpus/$target
mkdir -p "$corpus"
cp fuzz/regressions/"$target"/* "$corpus"/ 2>/dev/null || true
if [ "$target" = scenario ]; then
    # Seeds: every bundled scenario, every preset, every hostile input.
    cp scenarios/*.yaml scenarios/published/*.yaml "$corpus"/
    find tests/bad_inputs -maxdepth 1 -type f -name '*.yaml' -exec cp {} "$corpus"/ \;
    cargo build --release --quiet
    for p in $(./target/release/stormsim presets | awk '{print $1}'); do
        ./target/release/stormsim presets show "$p" > "$corpus/preset-$p.yaml"
    done
fi
# A `sets` input needs only some 10 bytes a override: let it be long at once.
lengths=(-max_len=16384)
if [ "$target" = sets ]; then
    lengths=(-max_len=64 -len_control=0)
fi
parallel=()
if [ "$workers" -gt 1 ]; then
    parallel=(-jobs="$workers" -workers="$workers")
fi
# Safe Rust: AddressSanitizer finds nothing the borrow checker has not,
# and costs a factor of several in speed.
exec cargo +nightly fuzz run --sanitizer none "$target" "$corpus" -- \
    -dict=fuzz/scenario.dict \
    -max_total_time="$secs" \
    -timeout=10 \
    -rss_limit_mb=2048 \
    "${lengths[@]}" \
    "${parallel[@]}"
