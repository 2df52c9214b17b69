// Shared by the interop peers: loads the pinned npm packages from devnet/node_modules (CommonJS builds, so every
// package shares one copy of @x402/core), defines the devnet chain for viem, and prints one JSON line to announce
// readiness to the Rust test that started the script.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
/** The devnet folder holding node_modules (HOLDFAST_DEVNET_DIR, else the repository's devnet/). */
export const devnetDir = process.env.HOLDFAST_DEVNET_DIR || path.resolve(here, "../../../../devnet");
/** `require` resolving from devnet/node_modules. */
export const load = createRequire(path.join(devnetDir, "package.json"));

const { defineChain } = load("viem");

/** The devnet chain (its own chain id, `chainId`; Base's contract addresses) at `rpcUrl`. */
export function devnetChain(rpcUrl, chainId) {
  return defineChain({
    id: chainId,
    name: "holdfast devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

/** The `--chain-id` argument as a number (the devnet's chain id, passed by the Rust test). */
export function chainIdArg(opts) {
  const id = Number(opts["chain-id"]);
  if (!Number.isSafeInteger(id) || id <= 0) {
    throw new Error(`--chain-id must be a positive integer, got ${opts["chain-id"]}`);
  }
  return id;
}

/** `--name value` pairs from argv. */
export function args() {
  const out = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || argv[i + 1] === undefined) {
      throw new Error(`bad arguments near ${argv[i]}`);
    }
    out[argv[i].slice(2)] = argv[i + 1];
  }
  return out;
}

/** Announces one JSON object on stdout (the Rust side reads the first line). */
export function announce(obj) {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

/** Listens on 127.0.0.1 on a free port; resolves to the port. */
export function listen(app) {
  return new Promise((resolve, reject) => {
    const server = app.listen(0, "127.0.0.1", () => resolve(server.address().port));
    server.on("error", reject);
  });
}

// Exit when the parent closes our stdin (the test finished or died), so no peer outlives its test.
export function exitWithParent() {
  process.stdin.resume();
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("close", () => process.exit(0));
}
