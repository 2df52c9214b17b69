// The x402 reference client (@x402/fetch + @x402/evm) paying one URL with the key in $PAYER_KEY.
//
//   PAYER_KEY=0x… node reference-client.mjs --url URL --chain-id N --asset ADDRESS --max-amount RAW
//
// The devnet's USDC is not one of the client's default assets (the devnet is no public network), so the client's
// spend controls allow exactly that asset on that chain, at most RAW units per payment.
//
// Prints {"status", "body", "paymentResponse"} (the decoded PAYMENT-RESPONSE, or null).
import { announce, args, chainIdArg, load } from "./lib.mjs";

const opts = args();
const { wrapFetchWithPaymentFromConfig, decodePaymentResponseHeader } = load("@x402/fetch");
const { ExactEvmScheme } = load("@x402/evm");
const { privateKeyToAccount } = load("viem/accounts");

const account = privateKeyToAccount(process.env.PAYER_KEY);
const network = `eip155:${chainIdArg(opts)}`;
const fetchWithPayment = wrapFetchWithPaymentFromConfig(fetch, {
  schemes: [{ network, client: new ExactEvmScheme(account) }],
  spendControls: { allowedAssets: [{ network, asset: opts.asset, maxAmountPerPayment: opts["max-amount"] }] },
});
try {
  const response = await fetchWithPayment(opts.url, { method: "GET" });
  const text = await response.text();
  const header = response.headers.get("PAYMENT-RESPONSE");
  announce({
    status: response.status,
    body: (() => {
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    })(),
    paymentResponse: header ? decodePaymentResponseHeader(header) : null,
  });
} catch (err) {
  announce({ status: 0, error: String(err?.message ?? err) });
  process.exitCode = 1;
}
