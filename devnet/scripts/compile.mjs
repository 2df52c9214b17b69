#!/usr/bin/env node
// Compiles devnet/contracts/<Name>.sol with solc-js and writes devnet/artifacts/<Name>.json holding the contract
// <Name> of each file: {contractName, abi, bytecode, deployedBytecode, solcVersion, sourceSha256}.
//
//   node devnet/scripts/compile.mjs          (from the repo root; or `npm run compile` inside devnet/)
//   node devnet/scripts/compile.mjs --check  exits 1 if a committed artifact differs from a fresh build
//
// Output is deterministic: source unit names are relative paths, keys keep a fixed order, JSON is pretty-printed.
// Any compiler warning fails the build, so the contracts stay warning-free.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import solc from "solc";

const devnetDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const contractsDir = join(devnetDir, "contracts");
const artifactsDir = join(devnetDir, "artifacts");
const check = process.argv.includes("--check");

const files = readdirSync(contractsDir).filter((f) => f.endsWith(".sol")).sort();
const sources = Object.fromEntries(
  files.map((f) => [`contracts/${f}`, { content: readFileSync(join(contractsDir, f), "utf8") }]),
);

const input = {
  language: "Solidity",
  sources,
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: "cancun",
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
  },
};

const output = JSON.parse(solc.compile(JSON.stringify(input)));
const problems = (output.errors ?? []).filter((e) => e.severity !== "info");
for (const p of problems) console.error(p.formattedMessage);
if (problems.length > 0) {
  console.error(`compile: ${problems.length} error(s)/warning(s)`);
  process.exit(1);
}

mkdirSync(artifactsDir, { recursive: true });
let stale = 0;
for (const file of files) {
  const contractName = file.slice(0, -".sol".length);
  const unit = `contracts/${file}`;
  const compiled = output.contracts[unit]?.[contractName];
  if (!compiled) {
    console.error(`compile: ${unit} does not define contract ${contractName}`);
    process.exit(1);
  }
  const artifact = {
    contractName,
    abi: compiled.abi,
    bytecode: `0x${compiled.evm.bytecode.object}`,
    deployedBytecode: `0x${compiled.evm.deployedBytecode.object}`,
    solcVersion: solc.version(),
    sourceSha256: createHash("sha256").update(sources[unit].content).digest("hex"),
  };
  const text = `${JSON.stringify(artifact, null, 2)}\n`;
  const path = join(artifactsDir, `${contractName}.json`);
  if (check) {
    if (!existsSync(path) || readFileSync(path, "utf8") !== text) {
      console.error(`compile: artifacts/${contractName}.json is out of date; run npm run compile in devnet/`);
      stale += 1;
    }
  } else {
    writeFileSync(path, text);
    console.log(`compile: artifacts/${contractName}.json (${(artifact.deployedBytecode.length - 2) / 2} bytes of code)`);
  }
}
if (stale > 0) process.exit(1);
if (check) console.log(`compile: ${files.length} artifacts up to date`);
