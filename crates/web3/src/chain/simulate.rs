//! The exact simulation: the transaction about to be signed — same sender, nonce, gas limit and fee fields — run
//! with `eth_simulateV1` and validation on, in a block that looks like the next real one, and the balances and
//! allowances the kernel checks read before and after it.
//!
//! What a contract inside the transaction can observe is what it would observe on chain: `tx.gasprice` is the real
//! effective gas price and `block.basefee` the next block's base fee (validation on: the node computes it from the
//! parent, as for a real block, and refuses fees below it), `block.number` is the next block's, the timestamp is not
//! before the latest block's, `block.prevrandao` is random as on chain (not zero), and the fee recipient and gas
//! limit are the latest block's. No helper code is placed
//! at any address the transaction could look at: the state overrides of its block touch only the sender's nonce
//! (which no contract can read). The balances after it are read in a second simulated block (with a balance reader
//! placed there, after the transaction has run); the balances before it by plain calls on the same base block.
//!
//! A node that does not implement `eth_simulateV1` (it is in geth ≥ 1.14.9, op-geth, reth and anvil) fails the
//! action with `simulation_failed`: nothing is signed without it. The one node asked is trusted for this
//! simulation (see `docs/safety-model.md`); the calldata is decoded and checked independently of it
//! (`kernel::calldata`).

use super::{Chain, IERC20, revert_reason, upstream};
use alloy::consensus::TxEip1559;
use alloy::eips::BlockId;
use alloy::primitives::{Address, Bytes, U256, address};
use alloy::providers::Provider;
use alloy::sol_types::SolCall;
use holdfast_core::config::NATIVE_TOKEN_ADDRESS;
use holdfast_core::{ErrorCode, ToolError};
use serde_json::{Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where the second simulated block places its balance reader (code: `BALANCE(calldata[0:32])`, returned as 32
/// bytes). Placed only in that block, after the simulated transaction ran.
const BALANCE_READER: Address = address!("0x00000000000000000000000000000000000ba1a9");
const BALANCE_READER_CODE: &str = "0x6000353160005260206000f3";
/// The sender of the reads in the second block: an address without code (EIP-3607), with fees of zero.
const READ_SENDER: Address = address!("0x00000000000000000000000000000000000ba1a8");
/// Gas for one read.
const READ_GAS: u64 = 100_000;

/// A value read before and after the simulated transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// `owner`'s balance of `token` (the native placeholder: the native balance).
    Balance {
        /// Token.
        token: Address,
        /// Holder.
        owner: Address,
    },
    /// `owner`'s ERC-20 allowance of `token` for `spender`.
    Allowance {
        /// Token.
        token: Address,
        /// Owner.
        owner: Address,
        /// Spender.
        spender: Address,
    },
}

/// What the exact simulation showed.
#[derive(Debug, Clone)]
pub struct Simulated {
    /// Each [`Read`] before the transaction, in the order asked.
    pub before: Vec<U256>,
    /// Each [`Read`] after it.
    pub after: Vec<U256>,
    /// Gas the transaction used.
    pub gas_used: u64,
    /// What the sender paid for gas: `gas_used` times the effective gas price (native base units).
    pub fee: U256,
    /// The block the simulation built on.
    pub base_block: u64,
}

impl Simulated {
    /// How much `i`'s value fell (0 when it rose).
    pub fn fell(&self, i: usize) -> U256 {
        self.before[i].saturating_sub(self.after[i])
    }

    /// How much `i`'s value rose (0 when it fell).
    pub fn rose(&self, i: usize) -> U256 {
        self.after[i].saturating_sub(self.before[i])
    }
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

fn hex_u64(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_str).and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
}

fn hex_u256(v: Option<&Value>) -> Option<U256> {
    v.and_then(Value::as_str).and_then(|s| U256::from_str_radix(s.trim_start_matches("0x"), 16).ok())
}

impl Chain {
    fn sim_failed(&self, why: impl std::fmt::Display) -> ToolError {
        ToolError::new(ErrorCode::SimulationFailed, format!("{}: {why}", self.network.name))
    }

    /// The call a read makes after the transaction (second block), as the `nonce`-th call of [`READ_SENDER`].
    fn read_call(read: &Read, nonce: usize) -> Value {
        let (to, data): (Address, Bytes) = match *read {
            Read::Balance { token, owner } if token == NATIVE_TOKEN_ADDRESS => {
                (BALANCE_READER, Bytes::from(owner.into_word().to_vec()))
            }
            Read::Balance { token, owner } => (token, IERC20::balanceOfCall { owner }.abi_encode().into()),
            Read::Allowance { token, owner, spender } => {
                (token, IERC20::allowanceCall { owner, spender }.abi_encode().into())
            }
        };
        json!({
            "from": READ_SENDER, "to": to, "data": data, "nonce": format!("{nonce:#x}"),
            "gas": format!("{READ_GAS:#x}"), "maxFeePerGas": "0x0", "maxPriorityFeePerGas": "0x0", "type": "0x2",
        })
    }

    /// A read on block `block` (before the transaction).
    async fn read_at(&self, read: &Read, block: u64) -> Result<U256, ToolError> {
        let at = BlockId::number(block);
        let name = &self.network.name;
        let (to, data): (Address, Bytes) = match *read {
            Read::Balance { token, owner } if token == NATIVE_TOKEN_ADDRESS => {
                return self
                    .provider
                    .get_balance(owner)
                    .block_id(at)
                    .await
                    .map_err(|e| upstream(name, "eth_getBalance", e));
            }
            Read::Balance { token, owner } => (token, IERC20::balanceOfCall { owner }.abi_encode().into()),
            Read::Allowance { token, owner, spender } => {
                (token, IERC20::allowanceCall { owner, spender }.abi_encode().into())
            }
        };
        let req = alloy::rpc::types::TransactionRequest::default().to(to).input(data.into());
        let out = self.provider.call(req).block(at).await.map_err(|e| upstream(name, "eth_call", e))?;
        if out.len() != 32 {
            return Err(upstream(name, "eth_call", format!("{to} answered {} bytes, not one word", out.len())));
        }
        Ok(U256::from_be_slice(&out))
    }

    /// Simulates `tx` from `from` exactly as it will be signed, reading each of `reads` before and after it. A
    /// revert, a failed validation (fees below the base fee, too little for gas, a wrong nonce) or an unreadable
    /// answer → `simulation_failed`.
    pub async fn simulate_exact(&self, from: Address, tx: &TxEip1559, reads: &[Read]) -> Result<Simulated, ToolError> {
        self.verify().await?;
        let name = &self.network.name;
        let latest = self
            .provider
            .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
            .await
            .map_err(|e| upstream(name, "eth_getBlockByNumber", e))?
            .ok_or_else(|| upstream(name, "eth_getBlockByNumber", "the node has no latest block"))?;
        let header = &latest.header;
        let base = header.number;
        let time = (header.timestamp + 1).max(now_secs());
        // `prevRandao` is unknowable before the block exists: a fresh random value, never the zero a simulator
        // would otherwise leave there.
        let next = json!({
            "number": format!("{:#x}", base + 1),
            "time": format!("{time:#x}"),
            "feeRecipient": header.beneficiary,
            "gasLimit": format!("{:#x}", header.gas_limit),
            "prevRandao": alloy::primitives::B256::random(),
        });
        let after_block = json!({
            "number": format!("{:#x}", base + 2),
            "time": format!("{:#x}", time + 1),
            "feeRecipient": header.beneficiary,
            "gasLimit": format!("{:#x}", header.gas_limit),
            "baseFeePerGas": "0x0",
        });
        let to = match tx.to {
            alloy::primitives::TxKind::Call(to) => to,
            alloy::primitives::TxKind::Create => return Err(self.sim_failed("a contract creation is never sent")),
        };
        let call = json!({
            "from": from, "to": to, "data": tx.input, "value": tx.value,
            "nonce": format!("{:#x}", tx.nonce), "gas": format!("{:#x}", tx.gas_limit),
            "maxFeePerGas": format!("{:#x}", tx.max_fee_per_gas),
            "maxPriorityFeePerGas": format!("{:#x}", tx.max_priority_fee_per_gas),
            "type": "0x2", "chainId": format!("{:#x}", tx.chain_id),
        });
        let reads_after: Vec<Value> = reads.iter().enumerate().map(|(i, r)| Self::read_call(r, i)).collect();
        let payload = json!({
            "blockStateCalls": [
                // The sender's nonce is set to the transaction's: journaled transactions of this wallet may still be
                // in the pool. No contract can read an account's nonce.
                {"blockOverrides": next, "stateOverrides": {from.to_string(): {"nonce": format!("{:#x}", tx.nonce)}}, "calls": [call]},
                {"blockOverrides": after_block, "stateOverrides": {BALANCE_READER.to_string(): {"code": BALANCE_READER_CODE}}, "calls": reads_after},
            ],
            "validation": true,
            "traceTransfers": false,
        });
        let simulate = async {
            self.provider
                .raw_request::<_, Value>("eth_simulateV1".into(), (payload, format!("{base:#x}")))
                .await
                .map_err(|e| match e {
                    // The node answered: the transaction cannot run as signed (or the node lacks the method).
                    alloy::transports::RpcError::ErrorResp(_) => {
                        self.sim_failed(format!("eth_simulateV1 refused it (the node must support it): {e}"))
                    }
                    // No answer: nothing is known about the transaction.
                    _ => upstream(name, "eth_simulateV1", e),
                })
        };
        let before = futures::future::try_join_all(reads.iter().map(|r| self.read_at(r, base)));
        let (blocks, before) = tokio::join!(simulate, before);
        let (blocks, before) = (blocks?, before?);
        let block_calls = |i: usize, n: usize| {
            blocks
                .get(i)
                .and_then(|b| b.get("calls"))
                .and_then(Value::as_array)
                .filter(|c| c.len() == n)
                .ok_or_else(|| self.sim_failed("eth_simulateV1 returned an unexpected shape"))
        };
        let sent = block_calls(0, 1)?;
        let result = &sent[0];
        if result.get("status").and_then(Value::as_str) != Some("0x1") {
            let data = result.get("returnData").and_then(Value::as_str).unwrap_or("0x");
            let message =
                result.get("error").and_then(|e| e.get("message")).and_then(Value::as_str).unwrap_or("reverted");
            return Err(self.sim_failed(format!(
                "the transaction reverts in the simulation: {message} ({})",
                revert_reason(data)
            )));
        }
        let gas_used = hex_u64(result.get("gasUsed")).ok_or_else(|| self.sim_failed("no gasUsed in the simulation"))?;
        let block_base_fee = hex_u256(blocks.get(0).and_then(|b| b.get("baseFeePerGas")))
            .ok_or_else(|| self.sim_failed("no baseFeePerGas in the simulated block"))?;
        let price =
            U256::from(tx.max_fee_per_gas).min(block_base_fee.saturating_add(U256::from(tx.max_priority_fee_per_gas)));
        let mut after = Vec::with_capacity(reads.len());
        for r in block_calls(1, reads.len())? {
            let word = r
                .get("returnData")
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<Bytes>().ok())
                .filter(|b| b.len() == 32 && r.get("status").and_then(Value::as_str) == Some("0x1"))
                .ok_or_else(|| self.sim_failed("a balance read after the transaction failed"))?;
            after.push(U256::from_be_slice(&word));
        }
        Ok(Simulated { before, after, gas_used, fee: U256::from(gas_used).saturating_mul(price), base_block: base })
    }
}
