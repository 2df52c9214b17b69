#!/usr/bin/env node
// Regenerates devnet/vendor/ (see devnet/vendor/README.md). Needs the npm registry; run from devnet/:
//   node scripts/vendor.mjs            # writes the JSON files
//   node scripts/vendor.mjs --check    # recompiles and compares, writes nothing
// Safe 1.4.1 comes from npm @safe-global/safe-contracts@1.4.1 (its code hashes checked against
// @safe-global/safe-deployments); the AllowanceModule is compiled from vendor/allowance-module-0.1.1/contracts with
// solc-js 0.7.6, optimizer disabled (its official build's settings).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const vendor = path.resolve(here, '..', 'vendor');
const check = process.argv.includes('--check');
const work = mkdtempSync(path.join(tmpdir(), 'holdfast-vendor-'));
const run = (cmd, args, cwd = work) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'] }).toString();

run('npm', ['init', '-y']);
run('npm', ['install', '--no-audit', '--no-fund', 'solc@0.7.6', '@safe-global/safe-contracts@1.4.1',
  '@safe-global/safe-deployments@1.37.63', 'viem']);
const require = createRequire(path.join(work, 'package.json'));
const solc = require('solc');
const { keccak256 } = require('viem');
const modules = path.join(work, 'node_modules', '@safe-global');
let failed = false;
const write = (file, value) => {
  const text = `${JSON.stringify(value, null, 1)}\n`;
  if (check) {
    const old = JSON.parse(readFileSync(file, 'utf8'));
    if (old.deployedBytecode !== value.deployedBytecode) {
      console.error(`${file}: the committed code differs from the regenerated one`);
      failed = true;
    }
  } else {
    writeFileSync(file, text);
  }
};

for (const [name, artifact, deployment] of [
  ['SafeL2', 'contracts/SafeL2.sol/SafeL2.json', 'safe_l2'],
  ['SafeProxyFactory', 'contracts/proxies/SafeProxyFactory.sol/SafeProxyFactory.json', 'safe_proxy_factory'],
  ['CompatibilityFallbackHandler', 'contracts/handler/CompatibilityFallbackHandler.sol/CompatibilityFallbackHandler.json',
    'compatibility_fallback_handler'],
]) {
  const a = JSON.parse(readFileSync(path.join(modules, 'safe-contracts/build/artifacts', artifact), 'utf8'));
  const d = JSON.parse(readFileSync(path.join(modules, `safe-deployments/dist/assets/v1.4.1/${deployment}.json`), 'utf8'));
  const codeHash = keccak256(a.deployedBytecode);
  if (codeHash !== d.deployments.canonical.codeHash) throw new Error(`${name}: code hash ${codeHash} is not the canonical one`);
  write(path.join(vendor, 'safe-1.4.1', `${name}.json`), {
    contractName: name,
    source: `npm @safe-global/safe-contracts@1.4.1, build/artifacts/${artifact}`,
    canonicalAddress: d.deployments.canonical.address,
    codeHash,
    codeHashSource: `npm @safe-global/safe-deployments@1.37.63, dist/assets/v1.4.1/${deployment}.json (deployments.canonical.codeHash)`,
    abi: a.abi,
    deployedBytecode: a.deployedBytecode,
  });
}

const dir = path.join(vendor, 'allowance-module-0.1.1', 'contracts');
const sources = {};
for (const f of readdirSync(dir).sort()) sources[`contracts/${f}`] = { content: readFileSync(path.join(dir, f), 'utf8') };
const settings = { optimizer: { enabled: false, runs: 200 }, outputSelection: { '*': { '*': ['abi', 'evm.deployedBytecode.object'] } } };
const out = JSON.parse(solc.compile(JSON.stringify({ language: 'Solidity', sources, settings })));
for (const e of out.errors ?? []) if (e.severity === 'error') throw new Error(e.formattedMessage);
const module = out.contracts['contracts/AllowanceModule.sol'].AllowanceModule;
const deployedBytecode = `0x${module.evm.deployedBytecode.object}`;
write(path.join(vendor, 'allowance-module-0.1.1', 'AllowanceModule.json'), {
  contractName: 'AllowanceModule',
  version: '0.1.1',
  source: 'https://github.com/safe-global/safe-modules, tag allowance/v0.1.1 (commit edf7af00279b3af223b012d24064da62247ee843), modules/allowances/contracts/{AllowanceModule,Enum,SignatureDecoder}.sol, unmodified (copies in contracts/)',
  compiler: solc.version(),
  settings: { optimizer: { enabled: false, runs: 200 }, evmVersion: 'istanbul (the default of 0.7.6)', sourcePaths: 'contracts/<file>.sol' },
  canonicalAddress: '0xAA46724893dedD72658219405185Fb0Fc91e091C',
  codeHash: keccak256(deployedBytecode),
  abi: module.abi,
  deployedBytecode,
});
run('rm', ['-rf', work], tmpdir());
if (failed) process.exit(1);
console.log(check ? 'vendor: the committed contracts are what their sources build' : 'vendor: written');
