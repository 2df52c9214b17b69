// The x402 reference resource server (@x402/express) in front of an upstream quoter, paid through either the
// reference facilitator (@x402/core + @x402/evm, run here against the devnet RPC) or an external one.
//
//   node reference-server.mjs --rpc URL --chain-id N --upstream URL --pay-to ADDRESS --amount RAW --asset ADDRESS
//                             [--facilitator URL] [--facilitator-key 0x…]
//
// The price is an AssetAmount (raw units of the EIP-3009 token at --asset, named "USD Coin" version 2): the
// reference server converts a '$0.01' price only on the public networks it knows, and the devnet is none of them.
//
// Prints {"ready":true,"port":N,"facilitator":URL} once both are listening: the facilitator first, because the
// resource server reads its /supported once at start-up.
import { announce, args, chainIdArg, devnetChain, exitWithParent, listen, load } from "./lib.mjs";

const opts = args();
exitWithParent();
const express = load("express");
const { paymentMiddleware, x402ResourceServer } = load("@x402/express");
const { HTTPFacilitatorClient } = load("@x402/core/server");
const { ExactEvmScheme: ExactEvmServerScheme } = load("@x402/evm/exact/server");
const CHAIN_ID = chainIdArg(opts);
const NETWORK = `eip155:${CHAIN_ID}`;

let facilitatorUrl = opts.facilitator;
if (!facilitatorUrl) {
  const { x402Facilitator } = load("@x402/core/facilitator");
  const { registerExactEvmScheme } = load("@x402/evm/exact/facilitator");
  const { toFacilitatorEvmSigner } = load("@x402/evm");
  const { createWalletClient, http, publicActions } = load("viem");
  const { privateKeyToAccount } = load("viem/accounts");
  const account = privateKeyToAccount(opts["facilitator-key"]);
  const client = createWalletClient({ account, chain: devnetChain(opts.rpc, CHAIN_ID), transport: http(opts.rpc) }).extend(
    publicActions,
  );
  const facilitator = new x402Facilitator();
  registerExactEvmScheme(facilitator, {
    signer: toFacilitatorEvmSigner({ ...client, address: account.address }),
    networks: NETWORK,
  });
  const app = express();
  app.use(express.json());
  const guard = (fn) => async (req, res) => {
    try {
      res.json(await fn(req.body ?? {}));
    } catch (err) {
      res.status(500).json({ error: String(err?.message ?? err) });
    }
  };
  app.post("/verify", guard((b) => facilitator.verify(b.paymentPayload, b.paymentRequirements)));
  app.post("/settle", guard((b) => facilitator.settle(b.paymentPayload, b.paymentRequirements)));
  app.get("/supported", (_req, res) => res.json(facilitator.getSupported()));
  const port = await listen(app);
  facilitatorUrl = `http://127.0.0.1:${port}`;
}

const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorUrl })).register(
  NETWORK,
  new ExactEvmServerScheme(),
);
await resourceServer.initialize();

const app = express();
const price = { amount: opts.amount, asset: opts.asset, extra: { name: "USD Coin", version: "2" } };
const accepts = { scheme: "exact", price, network: NETWORK, payTo: opts["pay-to"], maxTimeoutSeconds: 60 };
const paid = { accepts, description: "swap quote", mimeType: "application/json" };
app.use(paymentMiddleware({ "GET /swap/allowance-holder/quote": paid, "GET /price/token": paid }, resourceServer));
const proxy = async (req, res) => {
  const upstream = await fetch(new URL(req.originalUrl, opts.upstream));
  res.status(upstream.status).type("application/json").send(await upstream.text());
};
app.get("/swap/allowance-holder/quote", proxy);
app.get("/price/token", proxy);
const port = await listen(app);
announce({ ready: true, port, facilitator: facilitatorUrl });
