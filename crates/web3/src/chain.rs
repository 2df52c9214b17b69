//! One network's chain access: reads, simulation with balance deltas, and signing/broadcast with a nonce manager.
//!
//! The chain decides gas, fees and nonce (invariant 4): nothing here takes them from a caller. Every send is
//! serialised per account (the nonce lock is held from nonce choice through journal write to broadcast), and the
//! caller's `journal` step runs after signing and before the transaction leaves the process (invariant 9).

use alloy::consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy::eips::Encodable2718;
use alloy::network::TxSignerSync;
use alloy::primitives::{Address, B256, Bytes, TxKind, U256, address};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::rpc::types::TransactionReceipt;
use alloy::sol;
use alloy::sol_types::SolCall;
use holdfast_core::config::{NATIVE_TOKEN_ADDRESS, NetworkConfig};
use holdfast_core::{ErrorCode, ToolError};
use serde_json::{Value, json};
use std::time::Duration;

sol! {
    /// The ERC-20 calls holdfast makes.
    interface IERC20 {
        function balanceOf(address owner) external view returns (uint256);
        function allowance(address owner, address spender) external view returns (uint256);
        function approve(address spender, uint256 amount) external returns (bool);
    }

    /// The EIP-3009 read the x402 client makes to learn whether a payment authorization was settled.
    interface IERC3009 {
        function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
    }
}

/// Where the simulation places its balance reader (code: `BALANCE(calldata[0:32])`, returned as 32 bytes).
const BALANCE_READER: Address = address!("0x00000000000000000000000000000000000ba1a9");
const BALANCE_READER_CODE: &str = "0x6000353160005260206000f3";

/// Head-room added to the node's gas estimate.
const GAS_MARGIN_PERCENT: u64 = 20;

/// A transaction to send: everything except gas, fees and nonce, which the chain decides.
#[derive(Debug, Clone)]
pub struct TxPlan {
    /// Call target.
    pub to: Address,
    /// Calldata.
    pub data: Bytes,
    /// Native value.
    pub value: U256,
}

/// A signed transaction, ready to broadcast.
#[derive(Debug, Clone)]
pub struct SignedTx {
    /// Its hash.
    pub hash: B256,
    /// The EIP-2718 encoding (public once broadcast; kept in the journal to re-broadcast the identical bytes).
    pub raw: Bytes,
    /// The nonce it uses.
    pub nonce: u64,
    /// Gas limit.
    pub gas_limit: u64,
    /// Max fee per gas.
    pub max_fee_per_gas: u128,
    /// Max priority fee per gas.
    pub max_priority_fee_per_gas: u128,
}

/// Gas and fee figures for a summary.
#[derive(Debug, Clone, Copy)]
pub struct FeeQuote {
    /// Gas limit (estimate plus margin).
    pub gas_limit: u64,
    /// Max fee per gas.
    pub max_fee_per_gas: u128,
    /// Max priority fee per gas.
    pub max_priority_fee_per_gas: u128,
}

impl FeeQuote {
    /// Most the transaction can cost in native base units.
    pub fn max_cost(&self) -> U256 {
        U256::from(self.gas_limit) * U256::from(self.max_fee_per_gas)
    }
}

/// The wallet's balances around a simulated transaction.
#[derive(Debug, Clone)]
pub struct SimulatedSwap {
    /// Sell-token balance before.
    pub sell_before: U256,
    /// Sell-token balance after.
    pub sell_after: U256,
    /// Buy-token balance before.
    pub buy_before: U256,
    /// Buy-token balance after.
    pub buy_after: U256,
    /// Gas the transaction used.
    pub gas_used: u64,
}

/// One network's client.
#[derive(Debug)]
pub struct Chain {
    network: NetworkConfig,
    provider: DynProvider,
    nonce: tokio::sync::Mutex<Option<u64>>,
    verified_chain_id: tokio::sync::OnceCell<()>,
}

fn upstream(network: &str, what: &str, e: impl std::fmt::Display) -> ToolError {
    ToolError::new(ErrorCode::UpstreamError, format!("{network}: {what}: {e}"))
}

impl Chain {
    /// A client for `network` over its first RPC URL.
    pub fn new(network: &NetworkConfig) -> Result<Self, ToolError> {
        let url = network.rpc_urls.first().ok_or_else(|| {
            ToolError::new(ErrorCode::ConfigInvalid, format!("network `{}` has no rpc_urls configured", network.name))
        })?;
        let url = url.parse().map_err(|e| {
            ToolError::new(ErrorCode::ConfigInvalid, format!("network `{}`: bad rpc url: {e}", network.name))
        })?;
        let provider = ProviderBuilder::new().disable_recommended_fillers().connect_http(url).erased();
        Ok(Self {
            network: network.clone(),
            provider,
            nonce: tokio::sync::Mutex::new(None),
            verified_chain_id: tokio::sync::OnceCell::new(),
        })
    }

    /// The network.
    pub fn network(&self) -> &NetworkConfig {
        &self.network
    }

    /// Fails closed when the node serves another chain than the configured one. Checked once per client.
    pub async fn verify(&self) -> Result<(), ToolError> {
        self.verified_chain_id
            .get_or_try_init(|| async {
                let id =
                    self.provider.get_chain_id().await.map_err(|e| upstream(&self.network.name, "eth_chainId", e))?;
                if id == self.network.chain_id {
                    Ok(())
                } else {
                    Err(ToolError::new(
                        ErrorCode::UnknownNetwork,
                        format!(
                            "the RPC node for `{}` serves chain id {id}, not the configured {}; refusing to use it",
                            self.network.name, self.network.chain_id
                        ),
                    ))
                }
            })
            .await
            .map(|_| ())
    }

    /// Native balance.
    pub async fn native_balance(&self, owner: Address) -> Result<U256, ToolError> {
        self.verify().await?;
        self.provider.get_balance(owner).await.map_err(|e| upstream(&self.network.name, "eth_getBalance", e))
    }

    /// Balance of `token` (the native placeholder reads the native balance).
    pub async fn balance(&self, token: Address, owner: Address) -> Result<U256, ToolError> {
        if token == NATIVE_TOKEN_ADDRESS {
            return self.native_balance(owner).await;
        }
        let out = self.call(token, IERC20::balanceOfCall { owner }.abi_encode().into()).await?;
        IERC20::balanceOfCall::abi_decode_returns(&out).map_err(|e| upstream(&self.network.name, "balanceOf", e))
    }

    /// ERC-20 allowance.
    pub async fn allowance(&self, token: Address, owner: Address, spender: Address) -> Result<U256, ToolError> {
        let out = self.call(token, IERC20::allowanceCall { owner, spender }.abi_encode().into()).await?;
        IERC20::allowanceCall::abi_decode_returns(&out).map_err(|e| upstream(&self.network.name, "allowance", e))
    }

    /// Whether `authorizer`'s EIP-3009 authorization `nonce` on `token` was used (settled) or canceled.
    pub async fn authorization_state(
        &self,
        token: Address,
        authorizer: Address,
        nonce: B256,
    ) -> Result<bool, ToolError> {
        let out = self.call(token, IERC3009::authorizationStateCall { authorizer, nonce }.abi_encode().into()).await?;
        IERC3009::authorizationStateCall::abi_decode_returns(&out)
            .map_err(|e| upstream(&self.network.name, "authorizationState", e))
    }

    async fn call(&self, to: Address, data: Bytes) -> Result<Bytes, ToolError> {
        self.verify().await?;
        let req = alloy::rpc::types::TransactionRequest::default().to(to).input(data.into());
        self.provider.call(req).await.map_err(|e| upstream(&self.network.name, "eth_call", e))
    }

    fn balance_read(token: Address, owner: Address, from: Address) -> Value {
        if token == NATIVE_TOKEN_ADDRESS {
            json!({"from": from, "to": BALANCE_READER, "data": Bytes::from(owner.into_word().to_vec())})
        } else {
            json!({"from": from, "to": token, "data": Bytes::from(IERC20::balanceOfCall { owner }.abi_encode())})
        }
    }

    /// Simulates `plan` from `from` on the latest state with `eth_simulateV1`, reading `from`'s balances of the sell
    /// and buy tokens before and after in the same simulated block. A revert → `simulation_failed`.
    pub async fn simulate_swap(
        &self,
        from: Address,
        plan: &TxPlan,
        sell_token: Address,
        buy_token: Address,
    ) -> Result<SimulatedSwap, ToolError> {
        self.verify().await?;
        let tx = json!({"from": from, "to": plan.to, "data": plan.data, "value": plan.value});
        let calls = vec![
            Self::balance_read(sell_token, from, from),
            Self::balance_read(buy_token, from, from),
            tx,
            Self::balance_read(sell_token, from, from),
            Self::balance_read(buy_token, from, from),
        ];
        let results = self.simulate(calls).await?;
        let word = |i: usize| -> Result<U256, ToolError> {
            let bytes = results[i].get("returnData").and_then(Value::as_str).unwrap_or("0x");
            let bytes: Bytes = bytes.parse().map_err(|_| self.sim_err("unreadable balance in the simulation"))?;
            if bytes.len() != 32 {
                return Err(self.sim_err("unreadable balance in the simulation"));
            }
            Ok(U256::from_be_slice(&bytes))
        };
        let gas_used = results[2]
            .get("gasUsed")
            .and_then(Value::as_str)
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .unwrap_or_default();
        Ok(SimulatedSwap {
            sell_before: word(0)?,
            buy_before: word(1)?,
            sell_after: word(3)?,
            buy_after: word(4)?,
            gas_used,
        })
    }

    /// Simulates one call; a revert → `simulation_failed`. Returns the gas used.
    pub async fn simulate_call(&self, from: Address, plan: &TxPlan) -> Result<u64, ToolError> {
        self.verify().await?;
        let results =
            self.simulate(vec![json!({"from": from, "to": plan.to, "data": plan.data, "value": plan.value})]).await?;
        Ok(results[0]
            .get("gasUsed")
            .and_then(Value::as_str)
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .unwrap_or_default())
    }

    fn sim_err(&self, why: &str) -> ToolError {
        ToolError::new(ErrorCode::SimulationFailed, format!("{}: {why}", self.network.name))
    }

    async fn simulate(&self, calls: Vec<Value>) -> Result<Vec<Value>, ToolError> {
        let n = calls.len();
        let payload = json!({
            "blockStateCalls": [{
                "stateOverrides": {BALANCE_READER.to_string(): {"code": BALANCE_READER_CODE}},
                "calls": calls,
            }],
            "validation": false,
            "traceTransfers": false,
        });
        let blocks: Value = self
            .provider
            .raw_request("eth_simulateV1".into(), (payload, "latest"))
            .await
            .map_err(|e| self.sim_err(&format!("eth_simulateV1 failed (the node must support it): {e}")))?;
        let results = blocks
            .get(0)
            .and_then(|b| b.get("calls"))
            .and_then(Value::as_array)
            .filter(|c| c.len() == n)
            .cloned()
            .ok_or_else(|| self.sim_err("eth_simulateV1 returned an unexpected shape"))?;
        for (i, r) in results.iter().enumerate() {
            if r.get("status").and_then(Value::as_str) != Some("0x1") {
                let data = r.get("returnData").and_then(Value::as_str).unwrap_or("0x");
                let message =
                    r.get("error").and_then(|e| e.get("message")).and_then(Value::as_str).unwrap_or("reverted");
                return Err(self.sim_err(&format!(
                    "call {} of the simulation reverted: {message} ({})",
                    i + 1,
                    revert_reason(data)
                )));
            }
        }
        Ok(results)
    }

    /// Gas limit (estimate + margin) and EIP-1559 fees for `plan`, from the chain.
    pub async fn fees(&self, from: Address, plan: &TxPlan) -> Result<FeeQuote, ToolError> {
        self.verify().await?;
        let req = alloy::rpc::types::TransactionRequest::default()
            .from(from)
            .to(plan.to)
            .value(plan.value)
            .input(plan.data.clone().into());
        let estimate = self.provider.estimate_gas(req).await.map_err(|e| {
            ToolError::new(ErrorCode::SimulationFailed, format!("{}: gas estimation failed: {e}", self.network.name))
        })?;
        let fees = self
            .provider
            .estimate_eip1559_fees()
            .await
            .map_err(|e| upstream(&self.network.name, "fee estimation", e))?;
        Ok(FeeQuote {
            gas_limit: estimate.saturating_add(estimate * GAS_MARGIN_PERCENT / 100),
            max_fee_per_gas: fees.max_fee_per_gas,
            max_priority_fee_per_gas: fees.max_priority_fee_per_gas,
        })
    }

    /// Signs `plan` with the chain's nonce and `fees`, hands the signed transaction to `journal` (which must store it
    /// durably), then broadcasts it. The nonce lock is held throughout, so concurrent sends get distinct nonces.
    ///
    /// Returns the signed transaction and the journal step's value. When the node rejects the broadcast, the error
    /// carries the journal step's value too, so the caller can mark the entry failed.
    pub async fn sign_journal_broadcast<F, Fut, J>(
        &self,
        signer: &alloy::signers::local::PrivateKeySigner,
        plan: &TxPlan,
        fees: FeeQuote,
        journal: F,
    ) -> Result<(SignedTx, J), (ToolError, Option<J>)>
    where
        F: FnOnce(SignedTx) -> Fut,
        Fut: std::future::Future<Output = Result<J, ToolError>>,
    {
        self.verify().await.map_err(|e| (e, None))?;
        let from = signer.address();
        let mut cached = self.nonce.lock().await;
        let chain_nonce = self
            .provider
            .get_transaction_count(from)
            .pending()
            .await
            .map_err(|e| (upstream(&self.network.name, "eth_getTransactionCount", e), None))?;
        let nonce = cached.map_or(chain_nonce, |n| n.max(chain_nonce));
        let mut tx = TxEip1559 {
            chain_id: self.network.chain_id,
            nonce,
            gas_limit: fees.gas_limit,
            max_fee_per_gas: fees.max_fee_per_gas,
            max_priority_fee_per_gas: fees.max_priority_fee_per_gas,
            to: TxKind::Call(plan.to),
            value: plan.value,
            access_list: Default::default(),
            input: plan.data.clone(),
        };
        let signature = signer
            .sign_transaction_sync(&mut tx)
            .map_err(|_| (ToolError::internal(format!("{}: signing failed", self.network.name)), None))?;
        let envelope = TxEnvelope::from(tx.into_signed(signature));
        let signed = SignedTx {
            hash: *envelope.tx_hash(),
            raw: envelope.encoded_2718().into(),
            nonce,
            gas_limit: fees.gas_limit,
            max_fee_per_gas: fees.max_fee_per_gas,
            max_priority_fee_per_gas: fees.max_priority_fee_per_gas,
        };
        let journaled = journal(signed.clone()).await.map_err(|e| (e, None))?;
        match self.provider.send_raw_transaction(&signed.raw).await {
            Ok(_) => {
                *cached = Some(nonce + 1);
                Ok((signed, journaled))
            }
            Err(e) => {
                // The node rejected it: forget the cached nonce so the next send asks the chain again.
                *cached = None;
                Err((
                    ToolError::new(
                        ErrorCode::TransactionFailed,
                        format!("{}: the node rejected the transaction: {e}", self.network.name),
                    ),
                    Some(journaled),
                ))
            }
        }
    }

    /// Re-broadcasts identical signed bytes (safe: same hash and nonce). "already known" counts as success.
    pub async fn rebroadcast(&self, raw: &Bytes) -> Result<(), ToolError> {
        self.verify().await?;
        match self.provider.send_raw_transaction(raw).await {
            Ok(_) => Ok(()),
            Err(e) if e.to_string().to_lowercase().contains("already") => Ok(()),
            Err(e) => {
                Err(ToolError::new(ErrorCode::TransactionFailed, format!("{}: re-broadcast: {e}", self.network.name)))
            }
        }
    }

    /// The receipt of `hash`, if mined.
    pub async fn receipt(&self, hash: B256) -> Result<Option<TransactionReceipt>, ToolError> {
        self.provider
            .get_transaction_receipt(hash)
            .await
            .map_err(|e| upstream(&self.network.name, "eth_getTransactionReceipt", e))
    }

    /// Waits for the receipt of `hash`, up to `timeout`.
    pub async fn wait_receipt(&self, hash: B256, timeout: Duration) -> Result<Option<TransactionReceipt>, ToolError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut delay = Duration::from_millis(20);
        loop {
            if let Some(r) = self.receipt(hash).await? {
                return Ok(Some(r));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_millis(500));
        }
    }

    /// The account's mined nonce (transactions confirmed so far).
    pub async fn mined_nonce(&self, account: Address) -> Result<u64, ToolError> {
        self.provider
            .get_transaction_count(account)
            .latest()
            .await
            .map_err(|e| upstream(&self.network.name, "eth_getTransactionCount", e))
    }
}

/// Decodes a revert payload: `Error(string)` → its text; anything else → the 4-byte selector.
pub fn revert_reason(data: &str) -> String {
    let Ok(bytes) = data.parse::<Bytes>() else { return "no revert data".into() };
    if bytes.len() >= 4
        && bytes[..4] == [0x08, 0xc3, 0x79, 0xa0]
        && let Ok(s) = <alloy::sol_types::sol_data::String as alloy::sol_types::SolType>::abi_decode(&bytes[4..])
    {
        return format!("reason: {s}");
    }
    if bytes.len() >= 4 {
        format!("custom error 0x{}", alloy::primitives::hex::encode(&bytes[..4]))
    } else {
        "no revert data".into()
    }
}
