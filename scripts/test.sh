#!/usr/bin/env bash
# Runs every holdfast test on a fresh machine, installing first what the tests need
# (the npm devnet packages: anvil, solc-js, viem, the x402 reference implementation; Debian's chromium; Debian's
# PostgreSQL server, run as a throwaway cluster for the run; schemathesis from PyPI in a virtualenv under
# ~/.cache/holdfast).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
# Every cargo command below selects the whole workspace (and filters targets): one package alone (`-p`) unifies
# features differently, and cargo would rebuild most crates for it (only the check of the library alone does).

# One build per run: incremental caches would only add gigabytes to target/ (CI starts from a clean checkout).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# What the run writes under HOME is checked at the end: only the caches the README names (~/.cache/holdfast); nothing of
# anvil's under ~/.foundry (every anvil holdfast starts prunes its history in memory).
started_marker=$(mktemp)
trap 'rm -f "$started_marker"' EXIT

step "npm packages for the devnet and interop tests (devnet/package-lock.json)"
npm ci --prefix devnet --no-audit --no-fund --loglevel=error

step "Chromium for the browser test (Debian's chromium package)"
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }
if [ ! -x /usr/bin/chromium ]; then
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
fi

step "PostgreSQL for the storage tests: Debian's package, a throwaway cluster on 127.0.0.1 (scripts/postgres.sh)"
pg_dir=$(mktemp -d "${TMPDIR:-/tmp}/holdfast-pg.XXXXXX")
trap 'scripts/postgres.sh stop "$pg_dir"; rm -f "$started_marker"' EXIT
HOLDFAST_TEST_DATABASE_URL=$(scripts/postgres.sh start "$pg_dir")
# Every test that takes a database from it fails, instead of skipping, if it is missing.
export HOLDFAST_TEST_DATABASE_URL HOLDFAST_REQUIRE_POSTGRES=1
echo "PostgreSQL at $HOLDFAST_TEST_DATABASE_URL"

step "contract artifacts match their Solidity sources"
node devnet/scripts/compile.mjs --check

step "formatting"
cargo fmt --all -- --check

step "lints (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests (the crash harness and the hostile transcripts run next, on their own, printing their figures)"
cargo test --workspace --locked -- --skip crash:: --skip hostile::hostile_transcripts

step "the devnet's own anvil install: anvil alone from npm into an empty cache, at most 100 MB (crates/devnet/src/anvil.rs)"
cargo test --workspace --locked --lib -- --ignored installs_anvil --nocapture

step "schemathesis against the server's OpenAPI document: no 5xx, every answer matching its schema (crates/server/tests/it/schemathesis.rs)"
st_venv="${XDG_CACHE_HOME:-$HOME/.cache}/holdfast/schemathesis-4.32.5"
if [ ! -x "$st_venv/bin/st" ]; then
  python3 -m venv "$st_venv"
  "$st_venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==4.32.5"
fi
HOLDFAST_SCHEMATHESIS="$st_venv/bin/st" \
  cargo test --workspace --locked --test it schemathesis:: -- --ignored --nocapture

step "crash harness: kill -9 during memory writes, register writes on one session, a swap at each stage, an x402 payment (crates/holdfast/tests/it/crash.rs)"
cargo test --workspace --locked --test it crash:: -- --nocapture

step "hostile transcripts: ${HOLDFAST_HOSTILE_CASES:=6000} generated cases, 4 workers on one devnet (crates/web3/tests/it/hostile.rs)"
# The test build above already holds this binary: an optimized build would cost CI more minutes than it saves.
HOLDFAST_HOSTILE_CASES=$HOLDFAST_HOSTILE_CASES HOLDFAST_HOSTILE_WORKERS=4 \
  cargo test --workspace --locked --test it hostile::hostile_transcripts -- --exact --nocapture

step "examples run (crates/holdfast/examples), and the library without default features has no alloy, axum or rmcp"
cargo build --workspace --locked --quiet --examples
for example in custom_tool replace_memory_tool embed_runtime agent_loop custom_preset; do
  echo "--- example $example"
  "${CARGO_TARGET_DIR:-target}/debug/examples/$example" > /dev/null
done
cargo build --quiet --locked -p holdfast --no-default-features
tree=$(cargo tree --locked -p holdfast --no-default-features -e normal --prefix none)
if grep -E '^(alloy|axum|rmcp) ' <<< "$tree"; then
  echo "holdfast --no-default-features pulls in the crates above" >&2
  exit 1
fi

step "docs build without warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet

step "fuzzing: each target 5 s on holdfast-core's parsers (scripts/fuzz.sh --core; all targets: scripts/fuzz.sh)"
scripts/fuzz.sh --core 5

step "nothing left under HOME beyond the documented caches"
left=$(find "$HOME/.foundry/anvil/tmp" -mindepth 1 -maxdepth 1 -newer "$started_marker" 2> /dev/null || true)
if [ -n "$left" ]; then
  echo "anvil left states under ~/.foundry/anvil/tmp during this run:" >&2
  echo "$left" >&2
  exit 1
fi
echo "~/.foundry/anvil/tmp: nothing new"

step "all tests passed in $((SECONDS / 60)) min $((SECONDS % 60)) s ($(du -sh target 2> /dev/null | cut -f1) in target/)"
