#!/usr/bin/env bash
# Smoke test of the devnet contracts on a throw-away anvil (the devnet's chain id 1752132708, loopback, free port):
#   1. places USDC, WETH and the swap venue at their Base addresses with anvil_setCode;
#   2. seeds the venue with 100 ETH, 300000 USDC and 100 WETH;
#   3. as dev account #1 sells 0.01 ETH for USDC, then approves and sells 10 USDC for ETH, checking every balance;
#   4. runs scripts/eip3009-smoke.mjs (EIP-3009 authorizations signed with viem).
# Needs node and npm; installs devnet/node_modules from package-lock.json when it is missing.
# Usage: bash devnet/scripts/smoke.sh   (from anywhere)
set -euo pipefail

DEVNET="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ANVIL="$DEVNET/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"
CAST="$DEVNET/node_modules/@foundry-rs/cast-linux-amd64/bin/cast"
if [[ ! -x "$ANVIL" || ! -x "$CAST" || ! -d "$DEVNET/node_modules/viem" ]]; then
  (cd "$DEVNET" && npm ci --no-audit --no-fund)
fi

# the devnet's own chain id (crates/devnet/src/contracts.rs: CHAIN_ID), no public chain's
CHAIN_ID=1752132708
USDC=0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913
WETH=0x4200000000000000000000000000000000000006
VENUE=0x0000000000001fF3684f28c67538d4D072C22734
NATIVE=0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE
# anvil's default dev accounts #0 and #1 (unlocked: eth_sendTransaction signs for them)
DEPLOYER=0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
TAKER=0x70997970C51812dc3A010C7d01b50e0d17dc79C8

fail() { echo "smoke: FAIL: $*" >&2; exit 1; }
# Big-integer arithmetic (wei amounts overflow bash): calc '<expression over BigInt literals like 5n>'
calc() { node -e 'process.stdout.write(String(eval(process.argv[1])))' "$1"; }
# First word of cast's output ("29880 [2.988e4]" -> "29880").
num() { awk '{print $1}'; }
code_of() {
  node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).deployedBytecode)' \
    "$DEVNET/artifacts/$1.json"
}
usdc_of() { "$CAST" call "$USDC" "balanceOf(address)(uint256)" "$1" | num; }
# Sends a transaction from an unlocked dev account; prints the wei it paid for gas.
send() {
  local from="$1"
  shift
  local receipt
  receipt="$("$CAST" send --unlocked --from "$from" --json "$@")"
  node -e '
    const r = JSON.parse(process.argv[1]);
    if (r.status !== "0x1") { console.error("transaction reverted: " + r.transactionHash); process.exit(1); }
    process.stdout.write(String(BigInt(r.gasUsed) * BigInt(r.effectiveGasPrice)));' "$receipt"
}
# Requires `cast call "$@"` to revert with output containing the expected text (first argument).
expect_revert() {
  local expected="$1" out
  shift
  if out="$("$CAST" call "$@" 2>&1)"; then fail "expected a revert with '$expected', got: $out"; fi
  [[ "$out" == *"$expected"* ]] || fail "expected a revert with '$expected', got: $out"
}

# A free loopback port: bind port 0, read what the kernel chose, release it.
PORT="$(node -e '
  const s = require("net").createServer();
  s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });')"
export ETH_RPC_URL="http://127.0.0.1:$PORT"
"$ANVIL" --host 127.0.0.1 --port "$PORT" --chain-id "$CHAIN_ID" --silent &
ANVIL_PID=$!
trap 'kill "$ANVIL_PID" 2>/dev/null || true; wait "$ANVIL_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  "$CAST" chain-id >/dev/null 2>&1 && break
  kill -0 "$ANVIL_PID" 2>/dev/null || fail "anvil exited during start-up"
  sleep 0.1
done
[[ "$("$CAST" chain-id)" == "$CHAIN_ID" ]] || fail "anvil did not come up on port $PORT"
echo "smoke: anvil pid $ANVIL_PID on $ETH_RPC_URL"

# 1. Contracts at their Base addresses.
"$CAST" rpc anvil_setCode "$USDC" "$(code_of FiatTokenDevnet)" >/dev/null
"$CAST" rpc anvil_setCode "$WETH" "$(code_of WETH9)" >/dev/null
"$CAST" rpc anvil_setCode "$VENUE" "$(code_of SwapVenue)" >/dev/null
[[ "$("$CAST" call "$USDC" "symbol()(string)")" == '"USDC"' ]] || fail "USDC symbol"
[[ "$("$CAST" call "$WETH" "symbol()(string)")" == '"WETH"' ]] || fail "WETH symbol"

# 2. Venue liquidity: 100 ETH, 300000 USDC, 100 WETH (wrapped by the deployer, then transferred).
"$CAST" rpc anvil_setBalance "$VENUE" "$("$CAST" to-hex 100000000000000000000)" >/dev/null
send "$DEPLOYER" "$USDC" "mint(address,uint256)" "$VENUE" 300000000000 >/dev/null
send "$DEPLOYER" "$WETH" "deposit()" --value 100ether >/dev/null
send "$DEPLOYER" "$WETH" "transfer(address,uint256)" "$VENUE" 100000000000000000000 >/dev/null
[[ "$("$CAST" balance "$VENUE")" == 100000000000000000000 ]] || fail "venue ETH reserve"
[[ "$(usdc_of "$VENUE")" == 300000000000 ]] || fail "venue USDC reserve"
[[ "$("$CAST" call "$WETH" "balanceOf(address)(uint256)" "$VENUE" | num)" == 100000000000000000000 ]] \
  || fail "venue WETH reserve"
# Balances sit where Base's contracts keep them: USDC mapping slot 9, WETH mapping slot 3.
venue_usdc_slot="$("$CAST" index address "$VENUE" 9)"
[[ "$("$CAST" to-dec "$("$CAST" storage "$USDC" "$venue_usdc_slot")")" == 300000000000 ]] || fail "USDC slot 9"
venue_weth_slot="$("$CAST" index address "$VENUE" 3)"
[[ "$("$CAST" to-dec "$("$CAST" storage "$WETH" "$venue_weth_slot")")" == 100000000000000000000 ]] || fail "WETH slot 3"
echo "smoke: venue seeded (100 ETH, 300000 USDC, 100 WETH)"

# 3a. Sell 0.01 ETH for USDC.
SELL_ETH=10000000000000000
quote="$("$CAST" call "$VENUE" "quote(address,address,uint256)(uint256)" "$NATIVE" "$USDC" "$SELL_ETH" | num)"
expected="$(calc "${SELL_ETH}n * 997n * 300000000000n / (100000000000000000000n * 1000n + ${SELL_ETH}n * 997n)")"
[[ "$quote" == "$expected" ]] || fail "ETH->USDC quote $quote, expected $expected"
expect_revert "$("$CAST" sig "InsufficientBuyAmount(uint256,uint256)")" --from "$TAKER" --value "$SELL_ETH" \
  "$VENUE" "sell(address,address,uint256,uint256,address)" "$NATIVE" "$USDC" "$SELL_ETH" "$((quote + 1))" "$TAKER"
expect_revert "$("$CAST" sig "WrongMsgValue(uint256,uint256)")" --from "$TAKER" --value 1 \
  "$VENUE" "sell(address,address,uint256,uint256,address)" "$NATIVE" "$USDC" "$SELL_ETH" 0 "$TAKER"
eth_before="$("$CAST" balance "$TAKER")"
usdc_before="$(usdc_of "$TAKER")"
gas="$(send "$TAKER" "$VENUE" "sell(address,address,uint256,uint256,address)" \
  "$NATIVE" "$USDC" "$SELL_ETH" "$(calc "${quote}n * 99n / 100n")" "$TAKER" --value "$SELL_ETH")"
[[ "$(usdc_of "$TAKER")" == "$(calc "${usdc_before}n + ${quote}n")" ]] || fail "taker USDC after ETH->USDC"
[[ "$("$CAST" balance "$TAKER")" == "$(calc "${eth_before}n - ${SELL_ETH}n - ${gas}n")" ]] || fail "taker ETH after ETH->USDC"
[[ "$("$CAST" balance "$VENUE")" == "$(calc "100000000000000000000n + ${SELL_ETH}n")" ]] || fail "venue ETH after ETH->USDC"
[[ "$(usdc_of "$VENUE")" == "$(calc "300000000000n - ${quote}n")" ]] || fail "venue USDC after ETH->USDC"
echo "smoke: sold 0.01 ETH for $quote USDC base units"

# 3b. Approve the venue and sell 10 USDC for ETH.
SELL_USDC=10000000
expect_revert "ERC20: transfer amount exceeds allowance" --from "$TAKER" \
  "$VENUE" "sell(address,address,uint256,uint256,address)" "$USDC" "$NATIVE" "$SELL_USDC" 0 "$TAKER"
expect_revert "$("$CAST" sig "WrongMsgValue(uint256,uint256)")" --from "$TAKER" --value 1 \
  "$VENUE" "sell(address,address,uint256,uint256,address)" "$USDC" "$NATIVE" "$SELL_USDC" 0 "$TAKER"
eth_before="$("$CAST" balance "$TAKER")"
usdc_before="$(usdc_of "$TAKER")"
venue_eth_before="$("$CAST" balance "$VENUE")"
venue_usdc_before="$(usdc_of "$VENUE")"
gas_approve="$(send "$TAKER" "$USDC" "approve(address,uint256)" "$VENUE" "$SELL_USDC")"
quote="$("$CAST" call "$VENUE" "quote(address,address,uint256)(uint256)" "$USDC" "$NATIVE" "$SELL_USDC" | num)"
expected="$(calc "${SELL_USDC}n * 997n * ${venue_eth_before}n / (${venue_usdc_before}n * 1000n + ${SELL_USDC}n * 997n)")"
[[ "$quote" == "$expected" ]] || fail "USDC->ETH quote $quote, expected $expected"
gas_sell="$(send "$TAKER" "$VENUE" "sell(address,address,uint256,uint256,address)" \
  "$USDC" "$NATIVE" "$SELL_USDC" "$quote" "$TAKER")"
[[ "$(usdc_of "$TAKER")" == "$(calc "${usdc_before}n - ${SELL_USDC}n")" ]] || fail "taker USDC after USDC->ETH"
[[ "$("$CAST" balance "$TAKER")" == "$(calc "${eth_before}n + ${quote}n - ${gas_approve}n - ${gas_sell}n")" ]] \
  || fail "taker ETH after USDC->ETH"
[[ "$("$CAST" balance "$VENUE")" == "$(calc "${venue_eth_before}n - ${quote}n")" ]] || fail "venue ETH after USDC->ETH"
[[ "$(usdc_of "$VENUE")" == "$(calc "${venue_usdc_before}n + ${SELL_USDC}n")" ]] || fail "venue USDC after USDC->ETH"
[[ "$("$CAST" call "$USDC" "allowance(address,address)(uint256)" "$TAKER" "$VENUE" | num)" == 0 ]] \
  || fail "allowance not spent"
echo "smoke: sold 10 USDC for $quote wei"

# 3c. ETH <-> WETH trades 1:1.
[[ "$("$CAST" call "$VENUE" "quote(address,address,uint256)(uint256)" "$NATIVE" "$WETH" 12345 | num)" == 12345 ]] \
  || fail "ETH->WETH is not 1:1"
expect_revert "$("$CAST" sig "SameToken(address)")" "$VENUE" "quote(address,address,uint256)(uint256)" "$USDC" "$USDC" 1
expect_revert "$("$CAST" sig "ZeroSellAmount()")" "$VENUE" "quote(address,address,uint256)(uint256)" "$NATIVE" "$USDC" 0

# 4. EIP-3009.
node "$DEVNET/scripts/eip3009-smoke.mjs" "$ETH_RPC_URL" "$CHAIN_ID"

echo "smoke: all checks passed"
