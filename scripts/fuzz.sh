#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (cargo-fuzz, libFuzzer) for a bounded time and prints, per target, the executions,
# the seconds and the crashes. Exits non-zero when any target crashed; the input that crashed it is kept in
# fuzz/artifacts/TARGET/ (reproduce with `fuzz/target/<triple>/release/TARGET FILE`).
#
#   scripts/fuzz.sh [--core] [SECONDS_PER_TARGET]        (default 60)
#   FUZZ_TARGETS="context_bank x402_headers" scripts/fuzz.sh 10
#
# --core builds without the fuzz crate's `web3` feature: no alloy, reqwest or SQLite, so the build takes about a
# third of the time (scripts/test.sh uses it). `x402_headers` is then skipped, and `tool_params`, `preset_or_custom`
# and `config_toml` fuzz only what holdfast-core parses (no memory built-ins, web3 inputs or web3 sections).
#
# Installs cargo-fuzz when it is missing. The build uses `--sanitizer none` by default: the workspace forbids unsafe
# code, so what fuzzing finds here is panics, and the build is faster without address sanitizer. With
# FUZZ_SANITIZER=address it is kept; that needs `-Zsanitizer`, which the stable toolchain accepts under
# RUSTC_BOOTSTRAP=1 (set for the build). Debug assertions (overflow checks) are on. All targets are built by one
# `cargo fuzz build`, into fuzz/target.
#
# Writes nothing that git tracks: the build goes to fuzz/target, the working corpus to fuzz/corpus/TARGET (seeded
# from the committed fuzz/seeds/TARGET, which is only read), crashes to fuzz/artifacts; fuzz/Cargo.lock is copied from
# the workspace's Cargo.lock before the build, so the fuzz build uses exactly the workspace's versions.
set -euo pipefail
cd "$(dirname "$0")/.."

features=()
all_targets="context_bank tool_params preset_or_custom register_path x402_headers transcript_line config_toml"
if [ "${1:-}" = "--core" ]; then
  shift
  features=(--no-default-features)
  all_targets="${all_targets/ x402_headers/}"
fi
seconds="${1:-60}"
case "$seconds" in '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [--core] [SECONDS_PER_TARGET]" >&2; exit 2 ;; esac
targets="${FUZZ_TARGETS:-$all_targets}"
cargo_fuzz_version="0.13.2"

if ! cargo fuzz --version > /dev/null 2>&1; then
  echo "==> installing cargo-fuzz $cargo_fuzz_version"
  cargo install cargo-fuzz --locked --version "$cargo_fuzz_version"
fi

export CARGO_TARGET_DIR="$PWD/fuzz/target"
cp Cargo.lock fuzz/Cargo.lock
echo "==> building the fuzz targets (one build for all${features:+, without the web3 feature})"
build_start=$(date +%s)
RUSTC_BOOTSTRAP=1 cargo fuzz build --fuzz-dir fuzz --sanitizer "${FUZZ_SANITIZER:-none}" --debug-assertions \
  --codegen-units 16 "${features[@]}"
echo "built in $(($(date +%s) - build_start)) s"

bin="$CARGO_TARGET_DIR/$(rustc -vV | sed -n 's/^host: //p')/release"
failed=0
summary=()
for target in $targets; do
  corpus="fuzz/corpus/$target"
  artifacts="fuzz/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  cp -n "fuzz/seeds/$target"/* "$corpus"/ 2> /dev/null || true
  before=$(find "$artifacts" -type f | wc -l)
  log="fuzz/artifacts/$target.log"
  echo "==> $target for ${seconds} s"
  start=$(date +%s%N)
  status=0
  timeout $((seconds + 120)) "$bin/$target" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" > "$log" 2>&1 || status=$?
  elapsed=$(awk -v ns="$(($(date +%s%N) - start))" 'BEGIN { printf "%.1f", ns / 1e9 }')
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$log" | tr -d '#' | sort -n | tail -1)
  crashes=$(($(find "$artifacts" -type f | wc -l) - before))
  if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
  if [ "$crashes" -ne 0 ]; then
    failed=1
    grep -m 5 -E "panicked|ERROR|SUMMARY" "$log" || true
    echo "crash: see $log and $artifacts/"
  fi
  summary+=("$(printf '%-18s %12s %9s %8s' "$target" "${execs:-?}" "$elapsed" "$crashes")")
done

echo
printf '%-18s %12s %9s %8s\n' target executions seconds crashes
printf '%s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
  echo "fuzzing found a crash" >&2
  exit 1
fi
