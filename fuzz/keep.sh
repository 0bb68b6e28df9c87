#!/usr/bin/env bash
# Minimises the working corpus of a fuzz target (fuzz/corpus/TARGET) and
# keeps it, with any crash inputs already fixed, as the regression corpus
# fuzz/regressions/TARGET that `cargo test --test fuzz_regressions`
# replays on stable Rust.
#
#   fuzz/keep.sh [TARGET]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-scenario}
cargo +nightly fuzz cmin --sanitizer none "$target" "fuzz/corpus/$target" -- -rss_limit_mb=2048 -timeout=10
mkdir -p "fuzz/regressions/$target"
cp "fuzz/corpus/$target"/* "fuzz/regressions/$target"/
echo "fuzz/regressions/$target: $(ls "fuzz/regressions/$target" | wc -l) inputs"
