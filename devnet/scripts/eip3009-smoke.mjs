#!/usr/bin/env node
// EIP-3009 smoke test of FiatTokenDevnet at Base's USDC address on a running devnet (placed by smoke.sh).
// Signs authorizations with viem the way an x402 client does and submits them the way the x402 reference
// facilitator does (the (v, r, s) overload of transferWithAuthorization), then checks every refusal.
//
//   node devnet/scripts/eip3009-smoke.mjs http://127.0.0.1:PORT CHAIN_ID
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  domainSeparator,
  http,
  parseEventLogs,
  parseSignature,
  toHex,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";

const rpcUrl = process.argv[2];
const chainId = Number(process.argv[3]);
if (!rpcUrl || !Number.isSafeInteger(chainId) || chainId <= 0) {
  console.error("usage: node eip3009-smoke.mjs RPC_URL CHAIN_ID");
  process.exit(2);
}

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const { abi } = JSON.parse(readFileSync(new URL("../artifacts/FiatTokenDevnet.json", import.meta.url), "utf8"));
const chain = defineChain({
  id: chainId,
  name: "holdfast devnet",
  nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [rpcUrl] } },
});
const publicClient = createPublicClient({ chain, transport: http(rpcUrl) });
// anvil's well-known dev mnemonic; these accounts are funded with 10000 ETH each.
const devAccount = (addressIndex) =>
  mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex });
const wallet = (account) => createWalletClient({ account, chain, transport: http(rpcUrl) });
const relayer = wallet(devAccount(0)); // plays the facilitator: submits, pays gas
const payer = devAccount(2);
const payee = wallet(devAccount(3));

const domain = { name: "USD Coin", version: "2", chainId, verifyingContract: USDC };
const authorizationFields = [
  { name: "from", type: "address" },
  { name: "to", type: "address" },
  { name: "value", type: "uint256" },
  { name: "validAfter", type: "uint256" },
  { name: "validBefore", type: "uint256" },
  { name: "nonce", type: "bytes32" },
];
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

const read = (functionName, args = []) => publicClient.readContract({ address: USDC, abi, functionName, args });
const balance = (account) => read("balanceOf", [account]);

/** Signs an authorization of `primaryType` from the payer; returns its fields, signature and call arguments. */
async function authorize(primaryType, overrides = {}) {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const message = {
    from: payer.address,
    to: payee.account.address,
    value: 1_000_000n,
    validAfter: 0n,
    validBefore: now + 600n,
    nonce: toHex(randomBytes(32)),
    ...overrides,
  };
  const types = { [primaryType]: authorizationFields };
  const signature = await payer.signTypedData({ domain, types, primaryType, message });
  const { from, to, value, validAfter, validBefore, nonce } = message;
  return { message, signature, args: [from, to, value, validAfter, validBefore, nonce] };
}

/** Splits a 65-byte signature into the (v, r, s) arguments, v being 27 or 28. */
const vrs = (signature) => {
  const { v, r, s } = parseSignature(signature);
  return [Number(v), r, s];
};

/** Sends a USDC call from `client`, waits for it and returns the decoded logs of the successful receipt. */
async function send(client, functionName, args) {
  const hash = await client.writeContract({ address: USDC, abi, functionName, args });
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  assert.equal(receipt.status, "success", `${functionName} reverted`);
  return parseEventLogs({ abi, logs: receipt.logs });
}

/** Requires a simulated USDC call from the relayer to revert with a message containing `reason`. */
async function expectRevert(functionName, args, reason) {
  try {
    await publicClient.simulateContract({ address: USDC, abi, functionName, args, account: relayer.account });
  } catch (err) {
    assert.ok(String(err.message).includes(reason), `${functionName}: expected "${reason}", got: ${err.message}`);
    return;
  }
  assert.fail(`${functionName}: expected a revert with "${reason}"`);
}

const TRANSFER = "transferWithAuthorization";
const RECEIVE = "receiveWithAuthorization";
const CANCEL = "cancelAuthorization";

// Metadata the x402 facilitator and clients rely on.
assert.equal(await read("name"), "USD Coin");
assert.equal(await read("version"), "2");
assert.equal(await read("decimals"), 6);
assert.equal(await read("DOMAIN_SEPARATOR"), domainSeparator({ domain }));
assert.deepEqual(await read("eip712Domain"), ["0x0f", "USD Coin", "2", BigInt(chainId), USDC, `0x${"00".repeat(32)}`, []]);

await send(relayer, "mint", [payer.address, 100_000_000n]);
const payerStart = await balance(payer.address);
const payeeStart = await balance(payee.account.address);

// 1. transferWithAuthorization, (v, r, s) overload, as the x402 facilitator settles.
const first = await authorize("TransferWithAuthorization");
{
  const [v, r, s] = vrs(first.signature);
  const tampered = [...first.args];
  tampered[2] += 1n;
  await expectRevert(TRANSFER, [...tampered, v, r, s], "FiatTokenV2: invalid signature");
  const highS = toHex(SECP256K1_N - BigInt(s), { size: 32 });
  await expectRevert(TRANSFER, [...first.args, 55 - v, r, highS], "ECRecover: invalid signature 's' value");
  await expectRevert(TRANSFER, [...first.args, 29, r, s], "ECRecover: invalid signature 'v' value");
  const short = first.signature.slice(0, 130);
  await expectRevert(TRANSFER, [...first.args, short], "ECRecover: invalid signature length");
}
assert.equal(await read("authorizationState", [payer.address, first.message.nonce]), false);
const firstLogs = await send(relayer, TRANSFER, [...first.args, ...vrs(first.signature)]);
assert.deepEqual(firstLogs.map((l) => l.eventName), ["AuthorizationUsed", "Transfer"]);
assert.deepEqual(firstLogs[1].args, { from: payer.address, to: payee.account.address, value: 1_000_000n });
assert.equal(await read("authorizationState", [payer.address, first.message.nonce]), true);
const replay = [...first.args, ...vrs(first.signature)];
await expectRevert(TRANSFER, replay, "FiatTokenV2: authorization is used or canceled");
console.log("eip3009: transferWithAuthorization (v, r, s) settled; replay, tampering, high s, bad v refused");

// 2. transferWithAuthorization, bytes overload; validity window; balance.
const second = await authorize("TransferWithAuthorization");
await send(relayer, TRANSFER, [...second.args, second.signature]);
const expired = await authorize("TransferWithAuthorization", { validBefore: 1n });
await expectRevert(TRANSFER, [...expired.args, expired.signature], "FiatTokenV2: authorization is expired");
const inAnHour = BigInt(Math.floor(Date.now() / 1000)) + 3600n;
const early = await authorize("TransferWithAuthorization", { validAfter: inAnHour });
await expectRevert(TRANSFER, [...early.args, early.signature], "FiatTokenV2: authorization is not yet valid");
const tooMuch = await authorize("TransferWithAuthorization", { value: 10n ** 12n });
await expectRevert(TRANSFER, [...tooMuch.args, tooMuch.signature], "ERC20: transfer amount exceeds balance");
console.log("eip3009: transferWithAuthorization (bytes) settled; expired, not-yet-valid, over-balance refused");

// 3. receiveWithAuthorization: only the payee may submit; the signature does not pass as a transfer authorization.
const receive = await authorize("ReceiveWithAuthorization");
await expectRevert(RECEIVE, [...receive.args, receive.signature], "FiatTokenV2: caller must be the payee");
await expectRevert(TRANSFER, [...receive.args, receive.signature], "FiatTokenV2: invalid signature");
await send(payee, RECEIVE, [...receive.args, ...vrs(receive.signature)]);
const receiveBytes = await authorize("ReceiveWithAuthorization");
await send(payee, RECEIVE, [...receiveBytes.args, receiveBytes.signature]);
console.log("eip3009: receiveWithAuthorization (v, r, s and bytes) settled by the payee; others refused");

// 4. cancelAuthorization, both overloads.
const cancelTypes = {
  CancelAuthorization: [
    { name: "authorizer", type: "address" },
    { name: "nonce", type: "bytes32" },
  ],
};
for (const overload of ["vrs", "bytes"]) {
  const unused = await authorize("TransferWithAuthorization");
  const nonce = unused.message.nonce;
  const cancelSignature = await payer.signTypedData({
    domain,
    types: cancelTypes,
    primaryType: "CancelAuthorization",
    message: { authorizer: payer.address, nonce },
  });
  const sig = overload === "vrs" ? vrs(cancelSignature) : [cancelSignature];
  await expectRevert(CANCEL, [payee.account.address, nonce, ...sig], "FiatTokenV2: invalid signature");
  const logs = await send(relayer, CANCEL, [payer.address, nonce, ...sig]);
  assert.deepEqual(logs.map((l) => l.eventName), ["AuthorizationCanceled"]);
  const used = "FiatTokenV2: authorization is used or canceled";
  await expectRevert(TRANSFER, [...unused.args, unused.signature], used);
  await expectRevert(CANCEL, [payer.address, nonce, ...sig], used);
}
console.log("eip3009: cancelAuthorization (v, r, s and bytes) canceled unused nonces");

assert.equal(await balance(payer.address), payerStart - 4_000_000n);
assert.equal(await balance(payee.account.address), payeeStart + 4_000_000n);
console.log("eip3009: balances add up; all checks passed");
