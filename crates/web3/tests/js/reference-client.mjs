// The x402 reference client (@x402/fetch + @x402/evm) paying one URL with the key in $PAYER_KEY.
//
//   PAYER_KEY=0x… node reference-client.mjs --url URL
//
// Prints {"status", "body", "paymentResponse"} (the decoded PAYMENT-RESPONSE, or null).
import { announce, args, load } from "./lib.mjs";

const opts = args();
const { wrapFetchWithPaymentFromConfig, decodePaymentResponseHeader } = load("@x402/fetch");
const { ExactEvmScheme } = load("@x402/evm");
const { privateKeyToAccount } = load("viem/accounts");

const account = privateKeyToAccount(process.env.PAYER_KEY);
const fetchWithPayment = wrapFetchWithPaymentFromConfig(fetch, {
  schemes: [{ network: "eip155:8453", client: new ExactEvmScheme(account) }],
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
