//! The wallet as a smart account's limited signer (`[wallet] account`): the funds sit in a Safe, and holdfast's key
//! is a delegate of the Safe's `AllowanceModule` (Safe's audited module, `0xAA46…091C` on Base), which lets the key
//! move at most a per-asset amount per period out of the account — whoever holds the key.
//!
//! What the kernel does with it:
//! - **a transfer** is the module's `executeAllowanceTransfer(account, token, to, amount, …)`, sent and paid for (gas)
//!   by the signer: the account's balance moves, and the module refuses anything beyond what remains of the limit;
//! - **the chain's limit is a cap of record**: before signing (under the wallet's send lock, once earlier sends are
//!   settled), the kernel reads what remains of the limit (`getTokenAllowance`) and refuses a move beyond it with
//!   `policy_denied`, naming the on-chain limit; the smaller of holdfast's cap and the chain's remainder binds;
//! - **a swap and an x402 payment** need the signer itself to hold the funds (a venue pulls from its caller; EIP-3009
//!   needs the holder's own signature, which the module cannot give): the kernel first *funds* the signer from the
//!   account through the module (`fund`: a journaled transaction of kind `fund`, within the on-chain limit, after
//!   every question to the user known before the simulation was answered), reusing what the signer already holds
//!   for the account; a swap's quote must pay what is bought to the account (checked in the decoded calldata);
//! - **an approval** is the signer's own: it moves nothing (see `docs/safety-model.md`, "The smart account").

use super::pipeline::{self, Limits, Move, Plan, Planned, TxKind, Verdict};
use super::{fingerprint, human};
use crate::Web3;
use crate::chain::{Chain, Read, Simulated, TxPlan};
use crate::journal::EntryKind;
use alloy::primitives::{Address, B256, Bytes, U256, aliases::U96};
use alloy::sol_types::SolCall;
use holdfast_core::config::NetworkConfig;
use holdfast_core::{ErrorCode, ToolContext, ToolError};
use serde::Serialize;

alloy::sol! {
    /// The Safe calls holdfast reads: whether the module is enabled on the account, which modules are, the owners.
    interface ISafeModules {
        function isModuleEnabled(address module) external view returns (bool);
        function getModulesPaginated(address start, uint256 pageSize) external view returns (address[] memory array, address next);
        function getOwners() external view returns (address[] memory);
    }

    /// Safe's AllowanceModule 0.1.1 (the calls holdfast makes).
    interface IAllowanceModule {
        function getTokenAllowance(address safe, address delegate, address token) external view returns (uint256[5] memory);
        function getTokens(address safe, address delegate) external view returns (address[] memory);
        function executeAllowanceTransfer(address safe, address token, address to, uint96 amount, address paymentToken, uint96 payment, address delegate, bytes memory signature) external;
    }
}

/// keccak-256 of Safe's AllowanceModule 0.1.1's executable code: its runtime code without the trailing CBOR
/// metadata (whose source hashes differ between builds of the same source), as compiled from the audited source with
/// its official settings (`devnet/vendor/allowance-module-0.1.1`; the devnet's tests check the two agree).
pub const ALLOWANCE_MODULE_EXECUTABLE_HASH: B256 =
    alloy::primitives::b256!("0xfe1d13450d0cc73a5ead54e4cd7e7e15beccd04e8b434a8c7cde9afe90e5fa91");

/// keccak-256 of `code` without its trailing Solidity metadata (the last two bytes give the metadata's length);
/// code too short to carry that much metadata is hashed whole.
pub fn executable_hash(code: &[u8]) -> B256 {
    let n = code.len();
    let meta = match code.get(n.saturating_sub(2)..) {
        Some([hi, lo]) => usize::from(u16::from_be_bytes([*hi, *lo])) + 2,
        _ => 0,
    };
    let body = code.get(..n.saturating_sub(meta)).filter(|_| meta <= n).unwrap_or(code);
    alloy::primitives::keccak256(body)
}

/// What the front ends' start-up and `holdfast doctor` read about the account on a live node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountState {
    /// The module's code is Safe's AllowanceModule 0.1.1 ([`ALLOWANCE_MODULE_EXECUTABLE_HASH`]); `None`: no code
    /// at the module's address.
    pub module_is_allowance_module: Option<bool>,
    /// The account has code (a Safe is deployed there).
    pub account_deployed: bool,
    /// The module is enabled on the account.
    pub module_enabled: bool,
    /// What the key can do with the account without the module. `None`: not asked (no key given, or no account
    /// deployed).
    pub signer: Option<SignerPower>,
    /// The modules enabled on the account other than its AllowanceModule, as any node lists them (the first 200).
    pub other_modules: Vec<Address>,
    /// Those of [`Self::other_modules`] the configuration does not name as reviewed (`[wallet] reviewed_modules`).
    pub unreviewed_modules: Vec<Address>,
}

/// What the key can do with the account without its AllowanceModule, as any configured node shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignerPower {
    /// Nothing: no node shows it among the owners or the enabled modules of the account, nor of a Safe that owns it.
    Delegate,
    /// One of the owners (of the account, or of a Safe that owns it): it executes what the threshold allows.
    Owner,
    /// An enabled module (of the account, or of a Safe that owns it): it executes anything, with no owner's signature.
    Module,
}

impl AccountState {
    /// Why the on-chain limits would not bind `signer` as holdfast assumes, if they would not: the module's code is not
    /// the audited AllowanceModule's, the key is one of the account's owners or an enabled module of it (whom the
    /// module does not bind), or another module the configuration does not name as reviewed is enabled on the account
    /// (a module moves anything, and holdfast cannot tell what it lets the key do). What the front ends refuse to
    /// start on, and `holdfast doctor` fails.
    pub fn unbound(&self, account: Account, signer: Option<Address>) -> Option<String> {
        if self.module_is_allowance_module == Some(false) {
            return Some(format!(
                "the code at the module {} is not Safe's AllowanceModule 0.1.1 as holdfast knows it: its limits are \
                 not the audited module's",
                account.module
            ));
        }
        let key = signer.map(|a| a.to_checksum(None)).unwrap_or_default();
        match self.signer {
            Some(SignerPower::Owner) => {
                return Some(format!(
                    "the key {key} is an owner of the account {} (directly, or as an owner of a Safe that owns it): \
                     the on-chain limits do not bind an owner; use a key that is only the module's delegate",
                    account.address
                ));
            }
            Some(SignerPower::Module) => {
                return Some(format!(
                    "the key {key} is an enabled module of the account {} (or of a Safe that owns it): a module \
                     moves anything out of the account with no owner's signature, and the on-chain limits do not \
                     bind it; disable that module and use a key that is only the AllowanceModule's delegate",
                    account.address
                ));
            }
            Some(SignerPower::Delegate) | None => {}
        }
        (!self.unreviewed_modules.is_empty()).then(|| {
            let listed = self.unreviewed_modules.iter().map(|m| m.to_checksum(None)).collect::<Vec<_>>().join(", ");
            format!(
                "other modules are enabled on the account {}: {listed}. A module moves anything out of the account \
                 with no owner's signature, and the on-chain limits bind the key only through the AllowanceModule: \
                 check that none of these lets the key (or anyone holding holdfast's configuration) act, then list \
                 them in `[wallet] reviewed_modules`",
                account.address
            )
        })
    }
}

/// Reads [`AccountState`] from `chain`; `signer` is the key's address, when known; `reviewed` the other modules the
/// configuration names as reviewed (`[wallet] reviewed_modules`).
///
/// Every configured node is asked for the code at the module and at the account, for the owners, the key's place
/// among the modules and the other modules: a node that hides what another shows (other code at the module, a
/// deployed account, the key among the owners or the modules, another module) cannot pass the checks of
/// [`AccountState::unbound`]. Every question is asked whatever another one answered: a node that errs on one (on
/// purpose or not) does not skip the others, and what any node shows against the key (an owner, a module, other code
/// at the module, a module not reviewed) is returned even when some answer is missing. Otherwise a missing answer is
/// the first node error.
pub async fn inspect(
    chain: &Chain,
    account: Account,
    signer: Option<Address>,
    reviewed: &[Address],
) -> Result<AccountState, ToolError> {
    let module = module_everywhere(chain, account.module).await;
    let deployed = deployed_anywhere(chain, account.address).await;
    // Asked unless every node showed no account there: a node that errs on the code cannot skip the owners.
    let maybe_deployed = matches!(deployed, Ok(true) | Err(_));
    let power = match signer {
        Some(signer) if maybe_deployed => Some(signer_power(chain, account.address, signer).await),
        _ => None,
    };
    let (other_modules, others_failed) =
        if maybe_deployed { other_modules(chain, account).await } else { (Vec::new(), None) };
    let unreviewed: Vec<Address> = other_modules.iter().filter(|m| !reviewed.contains(m)).copied().collect();
    let enabled = if matches!(deployed, Ok(true)) {
        let ask = ISafeModules::isModuleEnabledCall { module: account.module }.abi_encode().into();
        chain
            .call(account.address, ask)
            .await
            .map(|out| ISafeModules::isModuleEnabledCall::abi_decode_returns(&out).unwrap_or(false))
    } else {
        Ok(false)
    };
    let found = power.as_ref().and_then(|p| p.as_ref().ok().copied()).filter(|p| *p != SignerPower::Delegate);
    let refuted = matches!(module, Ok(Some(false))) || found.is_some() || !unreviewed.is_empty();
    let state = AccountState {
        module_is_allowance_module: module.as_ref().ok().copied().flatten(),
        account_deployed: deployed.as_ref().is_ok_and(|d| *d) || found.is_some() || !other_modules.is_empty(),
        module_enabled: enabled.as_ref().is_ok_and(|e| *e),
        signer: power.as_ref().and_then(|p| p.as_ref().ok().copied()),
        other_modules,
        unreviewed_modules: unreviewed,
    };
    if refuted {
        return Ok(state);
    }
    module?;
    deployed?;
    enabled?;
    power.transpose()?;
    others_failed.map_or(Ok(state), Err)
}

/// The start of a Safe's linked list of modules (and its end).
const SENTINEL: Address = Address::with_last_byte(1);

/// The most modules read from an account, in one page: a Safe with more is reported as not fully checked.
const MODULES_READ: u64 = 200;

/// The modules enabled on `account` other than its AllowanceModule, as any configured node lists them (the first
/// 200, one page from each node: no node's continuation decides what another's list covers), and the first error of
/// a node that did not answer (or that shows more than that): a node that errs may be the one that would show
/// another module, so the list is complete only without it. The on-chain limits bind the key only through the
/// AllowanceModule: another module may give it power of its own.
pub async fn other_modules(chain: &Chain, account: Account) -> (Vec<Address>, Option<ToolError>) {
    let (mut others, mut failed) = (Vec::new(), None);
    let ask = ISafeModules::getModulesPaginatedCall { start: SENTINEL, pageSize: U256::from(MODULES_READ) };
    for (node, answer) in chain.call_each(account.address, ask.abi_encode().into()).await {
        let page = answer.and_then(|out| {
            ISafeModules::getModulesPaginatedCall::abi_decode_returns(&out).map_err(|e| {
                ToolError::new(
                    ErrorCode::UpstreamError,
                    format!("{node}: the modules of {} do not decode: {e}", account.address),
                )
            })
        });
        match page {
            Ok(page) => {
                for m in page.array {
                    if m != account.module && !others.contains(&m) {
                        others.push(m);
                    }
                }
                if page.next != SENTINEL && page.next != Address::ZERO {
                    failed.get_or_insert_with(|| {
                        ToolError::new(
                            ErrorCode::UpstreamError,
                            format!("{node}: the account {} lists more than {MODULES_READ} modules", account.address),
                        )
                    });
                }
            }
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    (others, failed)
}

/// What every configured node answered to a call that lists addresses.
struct Listed {
    /// Every address any node listed, each once, in the order first seen.
    addresses: Vec<Address>,
    /// Whether any node answered.
    answered: bool,
    /// The first node error.
    failed: Option<ToolError>,
}

/// Calls `data` on `to` on every configured node and decodes each answer with `decode` into addresses; `what` names
/// them in an error.
async fn addresses_each(
    chain: &Chain,
    to: Address,
    data: Bytes,
    what: &str,
    decode: impl Fn(&Bytes) -> alloy::sol_types::Result<Vec<Address>>,
) -> Listed {
    let mut listed = Listed { addresses: Vec::new(), answered: false, failed: None };
    for (node, answer) in chain.call_each(to, data).await {
        let decoded = answer.and_then(|out| {
            decode(&out).map_err(|e| {
                ToolError::new(ErrorCode::UpstreamError, format!("{node}: the {what} of {to} do not decode: {e}"))
            })
        });
        match decoded {
            Ok(addresses) => {
                listed.answered = true;
                for a in addresses {
                    if !listed.addresses.contains(&a) {
                        listed.addresses.push(a);
                    }
                }
            }
            Err(e) => {
                listed.failed.get_or_insert(e);
            }
        }
    }
    listed
}

/// Whether the code at `module` is the audited AllowanceModule on every node that has code there (`Some(false)` as
/// soon as one node shows other code); `None` when no node has code there. When no node shows other code and one
/// could not answer, that node's error.
async fn module_everywhere(chain: &Chain, module: Address) -> Result<Option<bool>, ToolError> {
    let (mut audited, mut failed) = (false, None);
    for (_, answer) in chain.code_each(module).await {
        match answer {
            Ok(code) if code.is_empty() => {}
            Ok(code) if executable_hash(&code) == ALLOWANCE_MODULE_EXECUTABLE_HASH => audited = true,
            Ok(_) => return Ok(Some(false)),
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(audited.then_some(true)),
    }
}

/// Whether any configured node shows code at `account`. When none does and one could not answer, that node's error.
async fn deployed_anywhere(chain: &Chain, account: Address) -> Result<bool, ToolError> {
    let mut failed = None;
    for (_, answer) in chain.code_each(account).await {
        match answer {
            Ok(code) if !code.is_empty() => return Ok(true),
            Ok(_) => {}
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    failed.map_or(Ok(false), Err)
}

/// How many levels of owners that are themselves Safes are looked into, and how many such owners at most.
const NESTED_LEVELS: usize = 2;
const NESTED_MAX: usize = 16;

/// What `signer` can do with `account` without its AllowanceModule, as any configured node shows it: whether a node
/// lists it among the owners or says it is an enabled module, of the account or of an owner that is itself a Safe (two
/// levels deep, at most 16 such owners). A node that leaves the key out cannot hide it beside one that shows it, and
/// a key that owns (or is a module of) a Safe owning the account acts as the account too. When the key is nowhere and
/// a node could not answer (the account's owners or modules, whether an owner has code, or a nested Safe's modules),
/// the first such error. An owner contract whose owners no node can read (not a Safe) is not looked into.
async fn signer_power(chain: &Chain, account: Address, signer: Address) -> Result<SignerPower, ToolError> {
    let Listed { addresses: owners, mut failed, .. } = owners_everywhere(chain, account).await;
    if owners.contains(&signer) {
        return Ok(SignerPower::Owner);
    }
    match module_enabled_anywhere(chain, account, signer).await {
        Ok(true) => return Ok(SignerPower::Module),
        Ok(false) => {}
        Err(e) => {
            failed.get_or_insert(e);
        }
    }
    let (mut seen, mut looked) = (vec![account], 0);
    let mut level = owners;
    for _ in 0..NESTED_LEVELS {
        let mut next = Vec::new();
        for owner in level {
            if seen.contains(&owner) || looked >= NESTED_MAX {
                continue;
            }
            seen.push(owner);
            match deployed_anywhere(chain, owner).await {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    failed.get_or_insert(e);
                    continue;
                }
            }
            looked += 1;
            let listed = owners_everywhere(chain, owner).await;
            if !listed.answered {
                // No node reads owners there: a contract of another kind, not looked into.
                continue;
            }
            if listed.addresses.contains(&signer) {
                return Ok(SignerPower::Owner);
            }
            if let Some(e) = listed.failed {
                failed.get_or_insert(e);
            }
            match module_enabled_anywhere(chain, owner, signer).await {
                Ok(true) => return Ok(SignerPower::Module),
                Ok(false) => {}
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
            next.extend(listed.addresses);
        }
        level = next;
    }
    failed.map_or(Ok(SignerPower::Delegate), Err)
}

/// Whether any configured node says `module` is enabled on the Safe `safe`. When none does and one could not answer
/// (or answered what does not decode), that node's error.
async fn module_enabled_anywhere(chain: &Chain, safe: Address, module: Address) -> Result<bool, ToolError> {
    let ask: Bytes = ISafeModules::isModuleEnabledCall { module }.abi_encode().into();
    let mut failed = None;
    for (node, answer) in chain.call_each(safe, ask).await {
        let decoded = answer.and_then(|out| {
            ISafeModules::isModuleEnabledCall::abi_decode_returns(&out).map_err(|e| {
                ToolError::new(
                    ErrorCode::UpstreamError,
                    format!("{node}: isModuleEnabled on {safe} does not decode: {e}"),
                )
            })
        });
        match decoded {
            Ok(true) => return Ok(true),
            Ok(false) => {}
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    failed.map_or(Ok(false), Err)
}

/// The owners any configured node lists for the Safe `safe` (each once), whether any node answered, and the first
/// node's error, if any.
async fn owners_everywhere(chain: &Chain, safe: Address) -> Listed {
    addresses_each(chain, safe, ISafeModules::getOwnersCall {}.abi_encode().into(), "owners", |out| {
        ISafeModules::getOwnersCall::abi_decode_returns(out)
    })
    .await
}

/// The smart account a wallet signs for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Account {
    /// The account (a Safe): whose funds move.
    pub address: Address,
    /// The module that limits the signer: Safe's AllowanceModule.
    pub module: Address,
}

/// What remains of an on-chain limit this period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnchainLimit {
    /// The limit per period, base units (0: none set, nothing may move).
    pub limit: U256,
    /// What remains of it now, base units.
    pub remaining: U256,
    /// The period, in minutes (0: the limit does not reset).
    pub period_minutes: u64,
}

/// The module's token for `asset`: the zero address for the native token.
pub fn module_token(asset: Address) -> Address {
    if asset == holdfast_core::config::NATIVE_TOKEN_ADDRESS { Address::ZERO } else { asset }
}

/// Reads what remains of the signer's limit on `account` for `asset`, as the module computes it now (its view
/// applies a period's reset when the period has passed).
pub async fn read_limit(
    chain: &Chain,
    account: Account,
    signer: Address,
    asset: Address,
) -> Result<OnchainLimit, ToolError> {
    let call =
        IAllowanceModule::getTokenAllowanceCall { safe: account.address, delegate: signer, token: module_token(asset) };
    let out = chain.call(account.module, call.abi_encode().into()).await?;
    let [amount, spent, reset_minutes, _, _] = IAllowanceModule::getTokenAllowanceCall::abi_decode_returns(&out)
        .map_err(|e| {
            ToolError::new(ErrorCode::UpstreamError, format!("the AllowanceModule's answer does not decode: {e}"))
        })?;
    Ok(OnchainLimit {
        limit: amount,
        remaining: amount.saturating_sub(spent),
        period_minutes: u64::try_from(reset_minutes).unwrap_or(u64::MAX),
    })
}

/// Every asset the module holds a limit of the signer's on `account` for, as the module lists it (the zero address:
/// ether): what the key can move, whether or not holdfast's configuration names the token.
pub async fn limited_assets(chain: &Chain, account: Account, signer: Address) -> Result<Vec<Address>, ToolError> {
    let call = IAllowanceModule::getTokensCall { safe: account.address, delegate: signer };
    let out = chain.call(account.module, call.abi_encode().into()).await?;
    IAllowanceModule::getTokensCall::abi_decode_returns(&out).map_err(|e| {
        ToolError::new(ErrorCode::UpstreamError, format!("the AllowanceModule's token list does not decode: {e}"))
    })
}

/// A limit's period as a person reads it: `per day`, `in total` (0: it does not reset), `per N minutes`.
pub fn period_text(minutes: u64) -> String {
    match minutes {
        0 => "in total".to_owned(),
        1440 => "per day".to_owned(),
        m => format!("per {m} minutes"),
    }
}

/// The refusal of a move beyond what remains of the on-chain limit.
pub(crate) fn over_limit(mv: &Move, limit: &OnchainLimit, account: Account) -> ToolError {
    let period = period_text(limit.period_minutes);
    ToolError::new(
        ErrorCode::PolicyDenied,
        format!(
            "the account's on-chain limit allows {} more now ({} {period}, set on chain by the account's owner in the \
             AllowanceModule {}); this moves {}",
            human(limit.remaining, mv.decimals, &mv.symbol),
            human(limit.limit, mv.decimals, &mv.symbol),
            account.module,
            human(mv.amount, mv.decimals, &mv.symbol)
        ),
    )
}

/// The transaction that moves `amount` of `asset` from `account` to `to` through the module, sent by `signer`.
pub fn transfer_tx(
    account: Account,
    signer: Address,
    asset: Address,
    to: Address,
    amount: U256,
) -> Result<TxPlan, ToolError> {
    let amount = u128::try_from(amount).ok().and_then(|a| U96::try_from(a).ok()).ok_or_else(|| {
        ToolError::new(ErrorCode::InvalidAmount, "the amount is beyond what the AllowanceModule can move (96 bits)")
    })?;
    let call = IAllowanceModule::executeAllowanceTransferCall {
        safe: account.address,
        token: module_token(asset),
        to,
        amount,
        paymentToken: Address::ZERO,
        payment: U96::ZERO,
        delegate: signer,
        // Empty: the module takes `msg.sender`, the signer sending the transaction, as the delegate.
        signature: Bytes::new(),
    };
    Ok(TxPlan { to: account.module, data: call.abi_encode().into(), value: U256::ZERO })
}

/// What the fund step shows in the journal.
#[derive(Debug, Clone, Serialize)]
struct FundSummary {
    action: String,
    network: String,
    amount: String,
    from_account: String,
    to_signer: String,
    gas_limit: String,
    max_network_fee: String,
}

impl pipeline::Summary for FundSummary {
    fn set_fees(&mut self, gas_limit: u64, max_network_fee: String) {
        self.gas_limit = gas_limit.to_string();
        self.max_network_fee = max_network_fee;
    }
}

/// Moving `mv` from the account to the signer, for a payment the signer authorizes.
struct Fund {
    mv: Move,
}

impl TxKind for Fund {
    type Summary = FundSummary;
    const KIND: EntryKind = EntryKind::Fund;

    fn tool(&self) -> &str {
        "kernel"
    }

    fn params(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    fn inputs(&self, _web3: &Web3, _ctx: &ToolContext) -> Result<pipeline::Inputs, ToolError> {
        Err(ToolError::internal("the fund step is the kernel's own"))
    }

    async fn plan(
        &self,
        _web3: &Web3,
        _ctx: &ToolContext,
        _inputs: &pipeline::Inputs,
        _chain: &Chain,
    ) -> Result<Planned<FundSummary>, ToolError> {
        Err(ToolError::internal("the fund step is the kernel's own"))
    }

    async fn check(
        &self,
        _web3: &Web3,
        _chain: &Chain,
        plan: &mut Plan<FundSummary>,
        sim: &Simulated,
    ) -> Result<Verdict, ToolError> {
        let moved = sim.fell(0);
        // The signer pays the gas of the fund: in ether, what it received is net of that.
        let fee = if self.mv.native { sim.fee } else { U256::ZERO };
        let received = (sim.after[1] + fee).saturating_sub(sim.before[1]);
        if moved > self.mv.amount || received < self.mv.amount {
            return Ok(Verdict::Refuse(ToolError::new(
                ErrorCode::SimulationFailed,
                format!(
                    "the simulation moves {} out of the account and {} to the signer, not {}",
                    human(moved, self.mv.decimals, &self.mv.symbol),
                    human(received, self.mv.decimals, &self.mv.symbol),
                    human(plan.mv.amount, plan.mv.decimals, &plan.mv.symbol)
                ),
            )));
        }
        Ok(Verdict::Pass)
    }
}

/// The refusal of a fund while an earlier fund `id` of `symbol` is not settled (`status`).
fn unsettled(symbol: &str, id: &str, status: crate::journal::EntryStatus) -> ToolError {
    let way_out = if status == crate::journal::EntryStatus::Stalled {
        " (the node refused it: to give it up, make any other transaction of the key — a transfer from the account, an \
         approval — which takes its nonce)"
    } else {
        ""
    };
    ToolError::new(
        ErrorCode::OutcomeUnknown,
        format!(
            "an earlier move of {symbol} from the account to the signer is not settled yet (journal {id}, {}){way_out}; \
             nothing more is moved until it is — try again once it is mined",
            status.as_str()
        ),
    )
}

/// How long after a payment's `validBefore` (by our clock) the fund decision stops keeping the key's tokens for it:
/// a few blocks' worth of a chain's clock running behind ours.
pub const PAYMENT_FUND_GRACE_SECS: u64 = 10;

/// Makes the signer hold `mv.amount` for the action `occasion` (its fingerprint) that the signer then sends or
/// authorizes, moving what is missing from the account through the module: a journaled transaction of kind `fund`,
/// checked against what remains of the on-chain limit. Only a confirmed fund lets the action go on.
///
/// What the signer already holds for the account is used first, judged and topped up under one lock, so actions
/// that never happen (declined after the simulation, refused by a later check), retries and concurrent calls cannot
/// pile the account's funds up in the signer. The lock is returned: the caller holds it until its action is journaled
/// (or refused), so a concurrent action does not count the same funds as its own. The signer's balance is the highest
/// any node shows (a node that hides it cannot have the funds moved again). What it holds for the account:
/// - a token: its balance of it (the signer holds tokens only for the account), less what the other actions
///   journaled and not yet settled (swaps and payments of it: reserved, signed, pending or unknown) will take — a
///   payment only until its authorization's window closed by our clock ([`PAYMENT_FUND_GRACE_SECS`] after its
///   `validBefore`);
/// - ether: what the funds moved to the signer and its swaps since the first fund have not spent, over every day (at
///   most the signer's balance): the rest of its ether is its gas money, never spent on the account's behalf.
pub(crate) async fn fund(
    web3: &Web3,
    network: &NetworkConfig,
    account: Account,
    mv: &Move,
    occasion: &str,
) -> Result<tokio::sync::OwnedMutexGuard<()>, ToolError> {
    let one_at_a_time = web3.fund_lock(network.chain_id).lock_owned().await;
    let signer = web3.wallet().address();
    let chain = web3.chain(network)?;
    let (from, asset) = (signer.to_checksum(None), mv.asset.to_checksum(None));
    let journal = web3.journal();
    // What other actions will take, read before the balance: one settling in between then leaves the signer funded a
    // little more (reused by the next fund), never less than its own action needs.
    let mut unresolved = journal.unresolved().await?;
    // An earlier fund of this asset is settled first: its receipt recorded, a stalled one's identical bytes sent again
    // (a node that refused them for want of gas or a fee may take them now).
    let earlier_fund = |e: &crate::JournalEntry| {
        e.kind == EntryKind::Fund
            && e.chain_id == network.chain_id
            && e.from == from
            && e.asset == asset
            && e.status != crate::journal::EntryStatus::Reserved
    };
    if unresolved.iter().any(earlier_fund) {
        for e in unresolved.iter().filter(|e| earlier_fund(e)) {
            let _ = super::reconcile::entry(web3, e).await;
        }
        unresolved = journal.unresolved().await?;
    }
    // A fund of this asset not yet mined (its receipt did not come in time, its broadcast is in doubt, or a node refused
    // it) will reach the signer, or never: either way it is not in the signer's balance yet, and funding again beside
    // it would move the account's funds twice. Nothing more is funded until it settles. One a node may hold (signed,
    // pending, unknown) may already show in a node's view of the balance, so nothing runs on that balance either; a
    // stalled one (which no node shows) refuses only a new fund, below.
    let unsettled_fund = unresolved.iter().find(|e| earlier_fund(e)).map(|e| (e.id.clone(), e.status));
    if let Some((id, status)) = &unsettled_fund
        && *status != crate::journal::EntryStatus::Stalled
    {
        return Err(unsettled(&mv.symbol, id, *status));
    }
    let unresolved = if mv.native { Vec::new() } else { unresolved };
    let held = chain.balance_highest(mv.asset, signer).await?;
    let available = if mv.native {
        // Over every day since the signer's first fund: ether funded on an earlier day and not spent is still the
        // account's, used before any more; its swaps before any fund sold its own ether, not the account's.
        let wallet = (network.chain_id, from.as_str(), asset.as_str());
        let funded = journal.sent_since_first(wallet, &[EntryKind::Fund], EntryKind::Fund).await?;
        let spent = journal.sent_since_first(wallet, &[EntryKind::Swap], EntryKind::Fund).await?;
        funded.saturating_sub(spent).min(held)
    } else {
        // A payment is journaled before its fund: its own entry is not another's. A payment whose window closed by
        // our clock is no longer counted here, though reconciliation keeps it unresolved (and in the budget) until the
        // chain's clock passes it on every node: while one node errs or lags, each new payment would otherwise be
        // funded again from the account, and the key would gather a day's payment budget a day. Should a chain far
        // behind our clock still settle it, the payment funded in its place fails to settle: nothing moves twice.
        let now = super::payment::now_secs();
        let closed = |e: &crate::JournalEntry| {
            e.kind == EntryKind::Payment
                && super::payment::authorization_of(e)
                    .is_some_and(|(_, before)| now > before.saturating_add(PAYMENT_FUND_GRACE_SECS))
        };
        let promised = unresolved
            .into_iter()
            .filter(|e| e.chain_id == network.chain_id && e.from == from && e.asset == asset)
            .filter(|e| matches!(e.kind, EntryKind::Swap | EntryKind::Payment) && e.fingerprint() != occasion)
            .filter(|e| !closed(e))
            .fold(U256::ZERO, |sum, e| sum.saturating_add(U256::from_str_radix(&e.amount, 10).unwrap_or_default()));
        held.saturating_sub(promised)
    };
    if available >= mv.amount {
        return Ok(one_at_a_time);
    }
    if let Some((id, status)) = unsettled_fund {
        return Err(unsettled(&mv.symbol, &id, status));
    }
    let mut mv = mv.clone();
    mv.amount -= available;
    let mv = &mv;
    let tx = transfer_tx(account, signer, mv.asset, signer, mv.amount)?;
    let summary = FundSummary {
        action: "fund the signer from the account".into(),
        network: network.name.clone(),
        amount: human(mv.amount, mv.decimals, &mv.symbol),
        from_account: account.address.to_checksum(None),
        to_signer: signer.to_checksum(None),
        gas_limit: String::new(),
        max_network_fee: String::new(),
    };
    let plan = Plan {
        tx,
        mv: mv.clone(),
        limits: Limits::Reset,
        onchain: true,
        funded: false,
        reads: vec![
            Read::Balance { token: mv.asset, owner: account.address },
            Read::Balance { token: mv.asset, owner: signer },
        ],
        summary,
        fingerprint: fingerprint(&["fund", &network.name, &mv.asset.to_string(), &mv.amount.to_string(), occasion]),
        to: account.module,
        confirm: Vec::new(),
    };
    let sent = pipeline::run_kernel(web3, &Fund { mv: mv.clone() }, network, plan).await?;
    if sent.outcome != pipeline::TxOutcome::Confirmed {
        return Err(ToolError::new(
            ErrorCode::UpstreamError,
            format!(
                "moving {} from the account to the signer is {} (journal {}, transaction {}); nothing else was signed \
                 — call it again once it is mined",
                human(mv.amount, mv.decimals, &mv.symbol),
                sent.outcome.as_str(),
                sent.journal_id,
                sent.hash
            ),
        ));
    }
    Ok(one_at_a_time)
}
