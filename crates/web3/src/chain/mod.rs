//! One network's chain access: reads, the exact simulation of a transaction about to be signed ([`simulate`]), the
//! nonce and what the chain shows about it ([`nonce`]), and signing/broadcast.
//!
//! The chain decides gas, fees and nonce (invariant 4): nothing here takes them from a caller. Sends are serialised
//! per wallet ([`crate::journal::Journal::lock_wallet`], held by the kernel from the nonce's choice through the
//! simulation, the journal write and the broadcast, across instances when the journal is in PostgreSQL), and a
//! broadcast's answer is classified ([`Broadcast`]); the kernel releases nothing on a node's answer alone.

pub mod nonce;
pub mod simulate;

pub use nonce::{MinedCount, NonceUse};
pub use simulate::{Read, Simulated};

use alloy::consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy::eips::Encodable2718;
use alloy::network::TxSignerSync;
use alloy::primitives::{Address, B256, Bytes, TxKind, U256};
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
        function transfer(address to, uint256 amount) external returns (bool);
        event Transfer(address indexed from, address indexed to, uint256 value);
    }

    /// The EIP-3009 read the x402 client makes to learn whether a payment authorization was settled.
    interface IERC3009 {
        function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
    }
}

/// The longest one JSON-RPC request may take (shorter than `kernel::reconcile::IN_FLIGHT`).
pub const RPC_TIMEOUT: Duration = Duration::from_secs(20);

/// Of the nodes' answers, the one `keep` keeps (the lowest, the highest) among the nodes that answered, with the first
/// error of one that did not; the first error when none answered.
fn kept_answer<T>(
    answers: Vec<Result<T, ToolError>>,
    keep: fn(T, T) -> T,
) -> Result<(T, Option<ToolError>), ToolError> {
    let (mut kept, mut failed) = (None::<T>, None);
    for answer in answers {
        match answer {
            Ok(v) => {
                kept = Some(match kept.take() {
                    Some(k) => keep(k, v),
                    None => v,
                })
            }
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    match (kept, failed) {
        (Some(v), unanswered) => Ok((v, unanswered)),
        (None, Some(e)) => Err(e),
        (None, None) => Err(ToolError::internal("no RPC node is configured")),
    }
}

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

/// The node's answers that mean it did not take the transaction and never will (geth, reth and anvil wording).
/// Any other error answer leaves the outcome unknown.
const DEFINITE_REJECTIONS: &[&str] = &[
    "nonce too low",
    "insufficient funds",
    "underpriced",
    "intrinsic gas too low",
    "exceeds block gas limit",
    "gas limit reached",
    "invalid sender",
    "invalid chain id",
    "fee cap less than block base fee",
    "max fee per gas less than block base fee",
    "tx fee",
    "oversized data",
    "transaction type not supported",
];

/// How the node answered a broadcast.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Broadcast {
    /// The node took the transaction (or already had it).
    Accepted,
    /// The node answered with an error: it did not take it.
    Rejected(String),
    /// No usable answer: the node may or may not have taken it.
    Unknown(String),
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

/// One network's client.
#[derive(Debug)]
pub struct Chain {
    network: NetworkConfig,
    provider: DynProvider,
    /// One client per configured RPC URL (the first is `provider`'s): independent reads, such as the price feeds,
    /// are asked of each.
    readers: Vec<(String, DynProvider)>,
    /// Per reader: its chain id was checked ([`Chain::verify_reader`]).
    verified_readers: Vec<tokio::sync::OnceCell<()>>,
}

fn upstream(network: &str, what: &str, e: impl std::fmt::Display) -> ToolError {
    ToolError::new(ErrorCode::UpstreamError, format!("{network}: {what}: {e}"))
}

impl Chain {
    /// A client for `network` over its first RPC URL (and one reader per configured URL).
    pub fn new(network: &NetworkConfig) -> Result<Self, ToolError> {
        if network.rpc_urls.is_empty() {
            return Err(ToolError::new(
                ErrorCode::ConfigInvalid,
                format!("network `{}` has no rpc_urls configured", network.name),
            ));
        }
        let mut readers = Vec::with_capacity(network.rpc_urls.len());
        // Every request is bounded: a node that never answers cannot hold the wallet's send lock (or a broadcast)
        // longer than this, and the background reconciliation leaves a send alone for longer than this.
        let http = reqwest::Client::builder()
            .timeout(RPC_TIMEOUT)
            .build()
            .map_err(|e| ToolError::internal(format!("network `{}`: http client: {e}", network.name)))?;
        for url in &network.rpc_urls {
            let parsed = url.parse().map_err(|e| {
                ToolError::new(ErrorCode::ConfigInvalid, format!("network `{}`: bad rpc url: {e}", network.name))
            })?;
            let transport = alloy::transports::http::Http::with_client(http.clone(), parsed);
            let client = alloy::rpc::client::RpcClient::new(transport, false);
            let provider = ProviderBuilder::new().disable_recommended_fillers().connect_client(client).erased();
            readers.push((holdfast_core::redact_urls(url).into_owned(), provider));
        }
        let provider = readers[0].1.clone();
        let verified_readers = readers.iter().map(|_| tokio::sync::OnceCell::new()).collect();
        Ok(Self { network: network.clone(), provider, readers, verified_readers })
    }

    /// `eth_call` of `data` on `to` at the latest block of every configured RPC node, each answer with the node's
    /// redacted URL. Each node's chain id is checked first ([`Self::verify_reader`]); a node on another chain answers
    /// an error.
    pub(crate) async fn call_each(&self, to: Address, data: Bytes) -> Vec<(String, Result<Bytes, ToolError>)> {
        let calls = self.readers.iter().enumerate().map(|(i, (url, provider))| {
            let data = data.clone();
            async move {
                let answer = async {
                    self.verify_reader(i).await?;
                    let req = alloy::rpc::types::TransactionRequest::default().to(to).input(data.into());
                    provider.call(req).await.map_err(|e| upstream(url, "eth_call", e))
                }
                .await;
                (url.clone(), answer)
            }
        });
        futures::future::join_all(calls).await
    }

    /// The code at `at` on every configured RPC node, each answer with the node's redacted URL (after its chain id
    /// check, as [`Self::call_each`]).
    pub(crate) async fn code_each(&self, at: Address) -> Vec<(String, Result<Bytes, ToolError>)> {
        let reads = self.readers.iter().enumerate().map(|(i, (url, provider))| async move {
            let answer = async {
                self.verify_reader(i).await?;
                provider.get_code_at(at).await.map_err(|e| upstream(url, "eth_getCode", e))
            }
            .await;
            (url.clone(), answer)
        });
        futures::future::join_all(reads).await
    }

    /// The network.
    pub fn network(&self) -> &NetworkConfig {
        &self.network
    }

    /// Fails closed when the (first) node serves another chain than the configured one. Checked once per client.
    pub async fn verify(&self) -> Result<(), ToolError> {
        self.verify_reader(0).await
    }

    /// Checks that the node answers `eth_simulateV1` (after the chain id check) the way every swap and transfer is
    /// simulated before it is signed: one simulated balance read. `holdfast doctor` reports it.
    pub async fn check_simulation(&self) -> Result<(), ToolError> {
        self.verify().await?;
        let read = json!({"from": Address::ZERO, "to": NATIVE_TOKEN_ADDRESS, "data": "0x"});
        self.simulate(vec![read]).await.map(|_| ())
    }

    /// Native balance.
    pub async fn native_balance(&self, owner: Address) -> Result<U256, ToolError> {
        self.verify().await?;
        self.provider.get_balance(owner).await.map_err(|e| upstream(&self.network.name, "eth_getBalance", e))
    }

    /// The code deployed at `at` (empty for an account without code).
    pub async fn code(&self, at: Address) -> Result<Bytes, ToolError> {
        self.verify().await?;
        self.provider.get_code_at(at).await.map_err(|e| upstream(&self.network.name, "eth_getCode", e))
    }

    /// Balance of `token` (the native placeholder reads the native balance).
    pub async fn balance(&self, token: Address, owner: Address) -> Result<U256, ToolError> {
        if token == NATIVE_TOKEN_ADDRESS {
            return self.native_balance(owner).await;
        }
        let out = self.call(token, IERC20::balanceOfCall { owner }.abi_encode().into()).await?;
        IERC20::balanceOfCall::abi_decode_returns(&out).map_err(|e| upstream(&self.network.name, "balanceOf", e))
    }

    /// `owner`'s balance of `token` (the native placeholder: ether) as the highest any configured node shows, among
    /// those that answer (the first error when none does): a node that hides a balance cannot make it look smaller.
    /// For what the signer already holds before the account's funds are moved to it: a balance read too low would
    /// have them moved again.
    pub async fn balance_highest(&self, token: Address, owner: Address) -> Result<U256, ToolError> {
        let asks = self.readers.iter().enumerate().map(|(i, (url, provider))| async move {
            self.verify_reader(i).await?;
            if token == NATIVE_TOKEN_ADDRESS {
                return provider.get_balance(owner).await.map_err(|e| upstream(url, "eth_getBalance", e));
            }
            let data: Bytes = IERC20::balanceOfCall { owner }.abi_encode().into();
            let req = alloy::rpc::types::TransactionRequest::default().to(token).input(data.into());
            let out = provider.call(req).await.map_err(|e| upstream(url, "eth_call", e))?;
            IERC20::balanceOfCall::abi_decode_returns(&out).map_err(|e| upstream(url, "balanceOf", e))
        });
        Ok(kept_answer(futures::future::join_all(asks).await, Ord::max)?.0)
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

    /// Whether `authorizer`'s EIP-3009 authorization `nonce` on `token` was used or canceled, as every configured node
    /// shows it: true when any node shows it used (counting a payment as made is the safe side), false when every
    /// node shows it unused, and the first node's error when one could not answer (nor showed it used).
    pub async fn authorization_state_everywhere(
        &self,
        token: Address,
        authorizer: Address,
        nonce: B256,
    ) -> Result<bool, ToolError> {
        let data: Bytes = IERC3009::authorizationStateCall { authorizer, nonce }.abi_encode().into();
        let mut failed = None;
        for (url, answer) in self.call_each(token, data).await {
            let state = answer.and_then(|out| {
                IERC3009::authorizationStateCall::abi_decode_returns(&out)
                    .map_err(|e| upstream(&url, "authorizationState", e))
            });
            match state {
                Ok(true) => return Ok(true),
                Ok(false) => {}
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        failed.map_or(Ok(false), Err)
    }

    /// The latest block's timestamp on each configured node, the lowest of them: the chain's clock as far as every
    /// node agrees it has come ([`Self::latest_block_timestamp`] asks the first node only). The nodes are asked at once.
    pub async fn latest_block_timestamp_everywhere(&self) -> Result<u64, ToolError> {
        let asks = self.readers.iter().enumerate().map(|(i, (url, provider))| async move {
            self.verify_reader(i).await?;
            let block = provider
                .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
                .await
                .map_err(|e| upstream(url, "eth_getBlockByNumber", e))?
                .ok_or_else(|| upstream(url, "eth_getBlockByNumber", "the node has no latest block"))?;
            Ok::<_, ToolError>(block.header.timestamp)
        });
        let mut lowest = u64::MAX;
        for answer in futures::future::join_all(asks).await {
            lowest = lowest.min(answer?);
        }
        Ok(lowest)
    }

    /// `eth_call` on the latest block, after the chain id check.
    pub(crate) async fn call(&self, to: Address, data: Bytes) -> Result<Bytes, ToolError> {
        self.verify().await?;
        let req = alloy::rpc::types::TransactionRequest::default().to(to).input(data.into());
        self.provider.call(req).await.map_err(|e| upstream(&self.network.name, "eth_call", e))
    }

    fn sim_err(&self, why: &str) -> ToolError {
        ToolError::new(ErrorCode::SimulationFailed, format!("{}: {why}", self.network.name))
    }

    /// `eth_simulateV1` of plain calls on the latest state, without validation: only `holdfast doctor`'s check that
    /// the node answers it. Every transaction is simulated exactly as signed instead ([`simulate`]).
    async fn simulate(&self, calls: Vec<Value>) -> Result<Vec<Value>, ToolError> {
        let n = calls.len();
        let payload = json!({
            "blockStateCalls": [{"calls": calls}],
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

    /// Gas limit (estimate + margin) and EIP-1559 fees for `plan`, from the chain. The fees come first, and the gas
    /// is estimated with them: a contract sees the real gas price in the estimate too, not zero.
    pub async fn fees(&self, from: Address, plan: &TxPlan) -> Result<FeeQuote, ToolError> {
        self.verify().await?;
        let fees = self
            .provider
            .estimate_eip1559_fees()
            .await
            .map_err(|e| upstream(&self.network.name, "fee estimation", e))?;
        let req = alloy::rpc::types::TransactionRequest::default()
            .from(from)
            .to(plan.to)
            .value(plan.value)
            .input(plan.data.clone().into())
            .max_fee_per_gas(fees.max_fee_per_gas)
            .max_priority_fee_per_gas(fees.max_priority_fee_per_gas);
        let estimate = self.provider.estimate_gas(req).await.map_err(|e| match e {
            alloy::transports::RpcError::ErrorResp(_) => ToolError::new(
                ErrorCode::SimulationFailed,
                format!("{}: gas estimation failed: {e}", self.network.name),
            ),
            _ => upstream(&self.network.name, "eth_estimateGas", e),
        })?;
        Ok(FeeQuote {
            gas_limit: estimate.saturating_add(estimate * GAS_MARGIN_PERCENT / 100),
            max_fee_per_gas: fees.max_fee_per_gas,
            max_priority_fee_per_gas: fees.max_priority_fee_per_gas,
        })
    }

    /// The nonce to sign with: the count of the account's *mined* transactions, as the answering node that shows the
    /// fewest shows it ([`Chain::mined_count`]), or one past the highest nonce the journal still holds live
    /// (`journaled`), whichever is higher. Not a node's pending count, nor the highest count any node shows: a
    /// transaction a node took (and counts) but reported as rejected must not push the next one to a fresh nonce —
    /// reusing its nonce means at most one of the two can ever be mined. (The kernel reads [`Chain::mined_count`]
    /// itself, to check the nodes that did not answer and what the journal lost; this is for callers without one.)
    pub async fn next_nonce(&self, from: Address, journaled: Option<u64>) -> Result<u64, ToolError> {
        self.verify().await?;
        Ok(self.mined_count(from).await?.next_nonce(journaled))
    }

    /// The EIP-1559 transaction `plan` becomes on this chain with `nonce` and `fees`: what the kernel simulates
    /// ([`Chain::simulate_exact`]) and then signs, unchanged.
    pub fn build(&self, plan: &TxPlan, fees: FeeQuote, nonce: u64) -> TxEip1559 {
        TxEip1559 {
            chain_id: self.network.chain_id,
            nonce,
            gas_limit: fees.gas_limit,
            max_fee_per_gas: fees.max_fee_per_gas,
            max_priority_fee_per_gas: fees.max_priority_fee_per_gas,
            to: TxKind::Call(plan.to),
            value: plan.value,
            access_list: Default::default(),
            input: plan.data.clone(),
        }
    }

    /// Signs `plan` as an EIP-1559 transaction on this chain with `nonce` and `fees`. Nothing leaves the process.
    pub fn sign(
        &self,
        signer: &alloy::signers::local::PrivateKeySigner,
        plan: &TxPlan,
        fees: FeeQuote,
        nonce: u64,
    ) -> Result<SignedTx, ToolError> {
        self.sign_tx(signer, self.build(plan, fees, nonce))
    }

    /// Signs `tx` exactly as given. Nothing leaves the process.
    pub fn sign_tx(
        &self,
        signer: &alloy::signers::local::PrivateKeySigner,
        mut tx: TxEip1559,
    ) -> Result<SignedTx, ToolError> {
        let signature = signer
            .sign_transaction_sync(&mut tx)
            .map_err(|_| ToolError::internal(format!("{}: signing failed", self.network.name)))?;
        let (nonce, gas_limit, max_fee_per_gas, max_priority_fee_per_gas) =
            (tx.nonce, tx.gas_limit, tx.max_fee_per_gas, tx.max_priority_fee_per_gas);
        let envelope = TxEnvelope::from(tx.into_signed(signature));
        Ok(SignedTx {
            hash: *envelope.tx_hash(),
            raw: envelope.encoded_2718().into(),
            nonce,
            gas_limit,
            max_fee_per_gas,
            max_priority_fee_per_gas,
        })
    }

    /// Sends signed bytes and classifies the answer. Only a JSON-RPC error answer from the node is a rejection
    /// (except "already known", which means the node has it); anything else that is not an acceptance — a timeout,
    /// a reset connection, an HTTP 5xx, an unreadable reply — leaves the outcome unknown: the node may have taken it.
    pub async fn broadcast(&self, raw: &Bytes) -> Broadcast {
        if let Err(e) = self.verify().await {
            return Broadcast::Rejected(e.message);
        }
        match self.provider.send_raw_transaction(raw).await {
            Ok(_) => Broadcast::Accepted,
            Err(alloy::transports::RpcError::ErrorResp(payload)) => {
                let message = payload.message.to_lowercase();
                if message.contains("already known") || message.contains("known transaction") {
                    Broadcast::Accepted
                } else if DEFINITE_REJECTIONS.iter().any(|r| message.contains(r)) {
                    Broadcast::Rejected(format!(
                        "{}: the node rejected the transaction: {}",
                        self.network.name, payload
                    ))
                } else {
                    // An error a gateway can give after forwarding (internal error, rate limit, timeout…).
                    Broadcast::Unknown(format!(
                        "{}: the broadcast's outcome is unknown: {}",
                        self.network.name, payload
                    ))
                }
            }
            Err(e) => Broadcast::Unknown(format!("{}: the broadcast's outcome is unknown: {e}", self.network.name)),
        }
    }

    /// Whether the node knows the transaction (in its pool or mined), by `eth_getTransactionByHash`.
    pub async fn is_known(&self, hash: B256) -> Result<bool, ToolError> {
        let found: Option<Value> = self
            .provider
            .raw_request("eth_getTransactionByHash".into(), (hash,))
            .await
            .map_err(|e| upstream(&self.network.name, "eth_getTransactionByHash", e))?;
        Ok(found.is_some_and(|v| !v.is_null()))
    }

    /// The receipt of `hash`, if mined, as far as it can be relied on.
    ///
    /// A receipt that shows success is one node's word, the first that shows one: taking the amount as spent is the
    /// safe side (a node hiding a receipt another shows cannot keep it from counting). One that shows a revert
    /// releases the amount from the day's caps, so one node's word is not enough: every configured node must show
    /// the revert. While a node shows no receipt, shows success instead (the nodes disagree), errs or serves another
    /// chain, it is undecided (`None`, asked again later; the entry stays live). With one configured node there is
    /// no other to ask. A receipt for another hash is no receipt.
    pub async fn receipt(&self, hash: B256) -> Result<Option<TransactionReceipt>, ToolError> {
        let first = self
            .provider
            .get_transaction_receipt(hash)
            .await
            .map_err(|e| upstream(&self.network.name, "eth_getTransactionReceipt", e))?
            .filter(|r| r.transaction_hash == hash);
        match first {
            Some(success) if success.status() => Ok(Some(success)),
            None => {
                for i in 1..self.readers.len() {
                    if let Ok(Some(other)) = self.reader_receipt(i, hash).await
                        && other.status()
                    {
                        return Ok(Some(other));
                    }
                }
                Ok(None)
            }
            Some(revert) => {
                for i in 1..self.readers.len() {
                    let url = &self.readers[i].0;
                    match self.reader_receipt(i, hash).await {
                        Ok(Some(other)) if !other.status() => {}
                        Ok(Some(_)) => {
                            tracing::warn!(%hash, node = %url, "the nodes disagree on a transaction's outcome (revert or success): left pending");
                            return Ok(None);
                        }
                        Ok(None) => return Ok(None),
                        Err(e) => {
                            tracing::warn!(%hash, node = %url, error = %e.message, "a revert cannot be confirmed: left pending");
                            return Ok(None);
                        }
                    }
                }
                Ok(Some(revert))
            }
        }
    }

    /// Reader `i`'s receipt of `hash`, after its chain id check.
    async fn reader_receipt(&self, i: usize, hash: B256) -> Result<Option<TransactionReceipt>, ToolError> {
        self.verify_reader(i).await?;
        let (url, provider) = &self.readers[i];
        let shown =
            provider.get_transaction_receipt(hash).await.map_err(|e| upstream(url, "eth_getTransactionReceipt", e))?;
        Ok(shown.filter(|r| r.transaction_hash == hash))
    }

    /// Checks, once per client, that reader `i` (0: the first node, [`Self::verify`]) serves this network's chain id:
    /// a node on another chain is refused, and is no witness for this one.
    pub(crate) async fn verify_reader(&self, i: usize) -> Result<(), ToolError> {
        let (Some((url, provider)), Some(cell)) = (self.readers.get(i), self.verified_readers.get(i)) else {
            return Err(ToolError::internal(format!("no RPC reader {i}")));
        };
        // The first node is named by its network, as in every other error about it.
        let node = if i == 0 { self.network.name.as_str() } else { url.as_str() };
        cell.get_or_try_init(|| async {
            let id = provider.get_chain_id().await.map_err(|e| upstream(node, "eth_chainId", e))?;
            if id == self.network.chain_id {
                Ok(())
            } else {
                let which = if i == 0 { String::new() } else { format!(" {url}") };
                Err(ToolError::new(
                    ErrorCode::UnknownNetwork,
                    format!(
                        "the RPC node{which} for `{}` serves chain id {id}, not the configured {}; refusing to use it",
                        self.network.name, self.network.chain_id
                    ),
                ))
            }
        })
        .await?;
        Ok(())
    }

    /// Waits for the receipt of `hash` ([`Self::receipt`]), up to `timeout` (each round's requests included). A node's
    /// error while waiting is asked again, as a missing receipt is: the transaction was sent, and only the chain's
    /// answer ends the wait. `None` when none was shown by the deadline (whatever the last error).
    pub async fn wait_receipt(&self, hash: B256, timeout: Duration) -> Option<TransactionReceipt> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut delay = Duration::from_millis(20);
        loop {
            // The deadline bounds each round too: a slow node (each request may take up to 20 s) cannot stretch it.
            match tokio::time::timeout_at(deadline, self.receipt(hash)).await {
                Ok(Ok(Some(r))) => return Some(r),
                Ok(Ok(None)) => {}
                Ok(Err(e)) => tracing::debug!(%hash, error = %e.message, "receipt: asked again"),
                Err(_) => return None,
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(delay.min(deadline.saturating_duration_since(tokio::time::Instant::now()))).await;
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

    /// The hash of the genesis block the node shows now (never cached): the chain's identity, journaled with each
    /// transaction signed on a local development chain ([`crate::journal::JournalEntry::genesis`]), and asked again
    /// when such an entry is reconciled.
    pub async fn genesis_now(&self) -> Result<B256, ToolError> {
        self.verify().await?;
        let block = self
            .provider
            .get_block_by_number(alloy::eips::BlockNumberOrTag::Number(0))
            .await
            .map_err(|e| upstream(&self.network.name, "eth_getBlockByNumber(0)", e))?
            .ok_or_else(|| upstream(&self.network.name, "eth_getBlockByNumber(0)", "the node has no genesis block"))?;
        Ok(block.header.hash)
    }

    /// The genesis block's hash every configured node shows, when none of them shows `recorded` (the chain the
    /// caller's transaction was sent on is gone everywhere): the first node's. `None` when any other node still
    /// shows `recorded`, or cannot show its genesis; the first node's error when it cannot.
    pub async fn genesis_other_than(&self, recorded: B256) -> Result<Option<B256>, ToolError> {
        let first = self.genesis_now().await?;
        if first == recorded {
            return Ok(None);
        }
        for (i, (url, provider)) in self.readers.iter().enumerate().skip(1) {
            // A node that cannot show its genesis (or serves another chain) is no proof of a reset.
            let shown = match self.verify_reader(i).await {
                Ok(()) => provider.get_block_by_number(alloy::eips::BlockNumberOrTag::Number(0)).await.ok().flatten(),
                Err(_) => None,
            };
            match shown {
                Some(block) if block.header.hash != recorded => {}
                _ => {
                    tracing::debug!(node = %url, "a node does not show another genesis: no reset");
                    return Ok(None);
                }
            }
        }
        Ok(Some(first))
    }

    /// The latest block's timestamp (seconds): the chain's own clock, which is what `eth_call` at `latest` (a
    /// facilitator's simulation) runs with — behind the wall clock on an idle chain or a lagging node.
    pub async fn latest_block_timestamp(&self) -> Result<u64, ToolError> {
        self.verify().await?;
        let block = self
            .provider
            .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
            .await
            .map_err(|e| upstream(&self.network.name, "eth_getBlockByNumber", e))?
            .ok_or_else(|| upstream(&self.network.name, "eth_getBlockByNumber", "the node has no latest block"))?;
        Ok(block.header.timestamp)
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
