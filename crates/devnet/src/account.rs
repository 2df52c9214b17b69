//! The devnet's smart account: the funds sit in a Safe 1.4.1, and the burner key is only its limited signer.
//!
//! - **Contracts** real users run on Base, at their canonical addresses (`devnet/vendor/`, placed with
//!   `anvil_setCode` as a fork of Base would have them): `SafeL2` 1.4.1, `SafeProxyFactory` 1.4.1,
//!   `CompatibilityFallbackHandler` 1.4.1, and Safe's `AllowanceModule` 0.1.1 at `0xAA46…091C`. Each runtime code's
//!   keccak-256 is checked against the hash recorded with it before it is placed.
//! - **The account**: a Safe proxy made by the factory, owned by anvil's first dev account (on Base: you), threshold
//!   1, with the AllowanceModule enabled and the burner key as its one delegate.
//! - **The limits** ([`OnchainLimit`]): for each asset (ether as the zero address, as the module counts it), an amount
//!   the delegate may move per period (default [`DEFAULT_LIMITS`]: 0.05 ETH and 100 USDC per day). The module refuses
//!   any transfer beyond what remains — whoever signs it, holdfast or a thief with the key.
//!
//! The owner's transactions use the Safe's pre-validated signature (`v = 1`, the owner as `msg.sender`): anvil sends
//! them from the unlocked dev account, as the owner's wallet would.

use crate::contracts::{USDC, dev_account, send_unlocked};
use crate::error::DevnetError;
use alloy::primitives::{Address, B256, Bytes, U256, address, keccak256};
use alloy::providers::ext::AnvilApi;
use alloy::providers::{DynProvider, Provider as _};
use alloy::sol_types::SolCall;
use serde::{Deserialize, Serialize};

/// `SafeL2` 1.4.1, the singleton every devnet account's proxy delegates to.
pub const SAFE_SINGLETON: Address = address!("0x29fcB43b46531BcA003ddC8FCB67FFE91900C762");
/// `SafeProxyFactory` 1.4.1.
pub const SAFE_PROXY_FACTORY: Address = address!("0x4e1DCf7AD4e460CfD30791CCC4F9c8a4f820ec67");
/// `CompatibilityFallbackHandler` 1.4.1.
pub const SAFE_FALLBACK_HANDLER: Address = address!("0xfd0732Dc9E303f09fCEf3a7388Ad10A83459Ec99");
/// Safe's `AllowanceModule` 0.1.1 (its official deployment's address on Base).
pub const ALLOWANCE_MODULE: Address = address!("0xAA46724893dedD72658219405185Fb0Fc91e091C");

/// The module kind holdfast's configuration names for it.
pub const ALLOWANCE_MODULE_KIND: &str = "safe-allowance-module";

/// Ether the account holds at start.
pub const ACCOUNT_ETH: U256 = U256::from_limbs([10_000_000_000_000_000_000, 0, 0, 0]);
/// USDC (base units) the account holds at start: 10,000 USDC.
pub const ACCOUNT_USDC: U256 = U256::from_limbs([10_000_000_000, 0, 0, 0]);
/// Ether the signer holds for gas: 0.05 ETH.
pub const SIGNER_GAS_ETH: U256 = U256::from_limbs([50_000_000_000_000_000, 0, 0, 0]);

/// A day, the default period of a limit.
pub const DAY_SECS: u64 = 86_400;

/// The default on-chain limits: 0.05 ETH and 100 USDC per day.
pub const DEFAULT_LIMITS: [(Address, u128); 2] = [(Address::ZERO, 50_000_000_000_000_000), (USDC, 100_000_000)];

/// What the signer may move out of the account per period, as the module holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnchainLimit {
    /// `ETH`, or the token's address.
    pub asset: String,
    /// Base units per period, as a decimal string.
    pub amount: String,
    /// The period, in seconds (the module counts whole minutes).
    pub period_secs: u64,
}

impl OnchainLimit {
    /// The module's token address of this limit: the zero address for ether.
    pub fn token(&self) -> Result<Address, DevnetError> {
        if self.asset.eq_ignore_ascii_case("ETH") {
            return Ok(Address::ZERO);
        }
        self.asset.parse().map_err(|_| DevnetError::Account(format!("{:?} is not ETH or a token address", self.asset)))
    }

    /// The amount, base units.
    pub fn base_units(&self) -> Result<U256, DevnetError> {
        U256::from_str_radix(&self.amount, 10)
            .map_err(|_| DevnetError::Account(format!("{:?} is not an amount in base units", self.amount)))
    }

    /// The defaults ([`DEFAULT_LIMITS`]), per day.
    pub fn defaults() -> Vec<Self> {
        DEFAULT_LIMITS
            .iter()
            .map(|(token, amount)| Self {
                asset: if token.is_zero() { "ETH".into() } else { token.to_checksum(None) },
                amount: amount.to_string(),
                period_secs: DAY_SECS,
            })
            .collect()
    }
}

/// Solidity interfaces of Safe 1.4.1 and the AllowanceModule (the parts the devnet and holdfast use).
#[allow(missing_docs, clippy::too_many_arguments)]
pub mod abi {
    alloy::sol! {
        #[sol(rpc)]
        interface ISafe {
            function setup(address[] calldata owners, uint256 threshold, address to, bytes calldata data, address fallbackHandler, address paymentToken, uint256 payment, address paymentReceiver) external;
            function execTransaction(address to, uint256 value, bytes calldata data, uint8 operation, uint256 safeTxGas, uint256 baseGas, uint256 gasPrice, address gasToken, address refundReceiver, bytes memory signatures) external payable returns (bool success);
            function enableModule(address module) external;
            function isModuleEnabled(address module) external view returns (bool);
            function getOwners() external view returns (address[] memory);
            function getThreshold() external view returns (uint256);
            function addOwnerWithThreshold(address owner, uint256 _threshold) external;
            function nonce() external view returns (uint256);
        }

        #[sol(rpc)]
        interface ISafeProxyFactory {
            function createProxyWithNonce(address singleton, bytes memory initializer, uint256 saltNonce) external returns (address proxy);
        }

        #[sol(rpc)]
        interface IAllowanceModule {
            function addDelegate(address delegate) external;
            function setAllowance(address delegate, address token, uint96 allowanceAmount, uint16 resetTimeMin, uint32 resetBaseMin) external;
            function getTokenAllowance(address safe, address delegate, address token) external view returns (uint256[5] memory);
            function executeAllowanceTransfer(address safe, address token, address to, uint96 amount, address paymentToken, uint96 payment, address delegate, bytes memory signature) external;
        }
    }
}

use abi::{IAllowanceModule, ISafe, ISafeProxyFactory};

const SAFE_L2_ARTIFACT: &str = include_str!("../../../devnet/vendor/safe-1.4.1/SafeL2.json");
const FACTORY_ARTIFACT: &str = include_str!("../../../devnet/vendor/safe-1.4.1/SafeProxyFactory.json");
const HANDLER_ARTIFACT: &str = include_str!("../../../devnet/vendor/safe-1.4.1/CompatibilityFallbackHandler.json");
const MODULE_ARTIFACT: &str = include_str!("../../../devnet/vendor/allowance-module-0.1.1/AllowanceModule.json");

/// The part of a vendored artifact the devnet needs.
#[derive(Deserialize)]
struct Vendored {
    #[serde(rename = "deployedBytecode")]
    deployed_bytecode: Bytes,
    #[serde(rename = "codeHash")]
    code_hash: B256,
    #[serde(rename = "canonicalAddress")]
    canonical_address: Address,
}

/// The vendored runtime code of `name`, checked against its recorded hash and address.
fn vendored(name: &'static str, json: &str, at: Address) -> Result<Bytes, DevnetError> {
    let artifact: Vendored =
        serde_json::from_str(json).map_err(|e| DevnetError::Artifact { name, reason: e.to_string() })?;
    if keccak256(&artifact.deployed_bytecode) != artifact.code_hash {
        return Err(DevnetError::Artifact { name, reason: "its code does not hash to the recorded code hash".into() });
    }
    if artifact.canonical_address != at {
        return Err(DevnetError::Artifact {
            name,
            reason: format!("recorded for {}, not {at}", artifact.canonical_address),
        });
    }
    Ok(artifact.deployed_bytecode)
}

/// The account contracts and where they are placed: `[(name, address, code)]`.
pub fn account_placements() -> Result<[(&'static str, Address, Bytes); 4], DevnetError> {
    Ok([
        ("SafeL2 1.4.1", SAFE_SINGLETON, vendored("SafeL2", SAFE_L2_ARTIFACT, SAFE_SINGLETON)?),
        (
            "SafeProxyFactory 1.4.1",
            SAFE_PROXY_FACTORY,
            vendored("SafeProxyFactory", FACTORY_ARTIFACT, SAFE_PROXY_FACTORY)?,
        ),
        (
            "CompatibilityFallbackHandler 1.4.1",
            SAFE_FALLBACK_HANDLER,
            vendored("CompatibilityFallbackHandler", HANDLER_ARTIFACT, SAFE_FALLBACK_HANDLER)?,
        ),
        ("AllowanceModule 0.1.1", ALLOWANCE_MODULE, vendored("AllowanceModule", MODULE_ARTIFACT, ALLOWANCE_MODULE)?),
    ])
}

/// The Safe's storage slot of its threshold (slot 4 in Safe 1.4.1's layout): set on the singleton, as its
/// constructor does, so the singleton itself can never be set up.
const THRESHOLD_SLOT: U256 = U256::from_limbs([4, 0, 0, 0]);

/// Places the account contracts (checked, see [`account_placements`]).
pub async fn place_account_contracts(provider: &DynProvider) -> Result<(), DevnetError> {
    for (name, at, code) in account_placements()? {
        provider.anvil_set_code(at, code).await.map_err(|e| DevnetError::rpc(format!("placing {name} at {at}"), e))?;
    }
    provider
        .anvil_set_storage_at(SAFE_SINGLETON, THRESHOLD_SLOT, B256::from(U256::from(1)))
        .await
        .map_err(|e| DevnetError::rpc("locking the Safe singleton", e))?;
    Ok(())
}

/// The Safe's pre-validated signature of `owner`: valid when `owner` itself sends the transaction.
fn prevalidated(owner: Address) -> Bytes {
    let mut sig = [0u8; 65];
    sig[12..32].copy_from_slice(owner.as_slice());
    sig[64] = 1;
    Bytes::copy_from_slice(&sig)
}

/// The Safe's `execTransaction` of `data` on `to`, with the pre-validated signature of `by` (valid only when `by`
/// is an owner sending it itself): the account's own execution path.
pub fn exec_transaction(to: Address, data: Bytes, by: Address) -> Bytes {
    ISafe::execTransactionCall {
        to,
        value: U256::ZERO,
        data,
        operation: 0,
        safeTxGas: U256::ZERO,
        baseGas: U256::ZERO,
        gasPrice: U256::ZERO,
        gasToken: Address::ZERO,
        refundReceiver: Address::ZERO,
        signatures: prevalidated(by),
    }
    .abi_encode()
    .into()
}

/// Runs `data` on `to` as the Safe `account`, signed by its owner `owner` (an unlocked dev account).
pub async fn exec_as_owner(
    provider: &DynProvider,
    account: Address,
    owner: Address,
    to: Address,
    data: Bytes,
    step: &str,
) -> Result<(), DevnetError> {
    let tx =
        alloy::rpc::types::TransactionRequest::default().to(account).input(exec_transaction(to, data, owner).into());
    send_unlocked(provider, owner, tx, step).await?;
    Ok(())
}

/// Creates a bare Safe owned by `owners` (threshold 1), sent by `sender` (an unlocked dev account); returns its
/// address.
pub async fn create_safe(
    provider: &DynProvider,
    sender: Address,
    owners: Vec<Address>,
    salt: u64,
) -> Result<Address, DevnetError> {
    let setup = ISafe::setupCall {
        owners,
        threshold: U256::from(1),
        to: Address::ZERO,
        data: Bytes::new(),
        fallbackHandler: SAFE_FALLBACK_HANDLER,
        paymentToken: Address::ZERO,
        payment: U256::ZERO,
        paymentReceiver: Address::ZERO,
    };
    let factory = ISafeProxyFactory::new(SAFE_PROXY_FACTORY, provider);
    let create = factory.createProxyWithNonce(SAFE_SINGLETON, setup.abi_encode().into(), U256::from(salt));
    let safe =
        create.clone().from(sender).call().await.map_err(|e| DevnetError::rpc("computing the Safe's address", e))?;
    send_unlocked(provider, sender, create.into_transaction_request(), "creating a Safe").await?;
    Ok(safe)
}

/// Creates a Safe owned by `owner` (an unlocked dev account) with the AllowanceModule enabled, `signer` as its
/// delegate and `limits` set; returns the account's address.
pub async fn create_account(
    provider: &DynProvider,
    owner: Address,
    signer: Address,
    limits: &[OnchainLimit],
    salt: u64,
) -> Result<Address, DevnetError> {
    let account = create_safe(provider, owner, vec![owner], salt).await?;
    exec_as_owner(
        provider,
        account,
        owner,
        account,
        ISafe::enableModuleCall { module: ALLOWANCE_MODULE }.abi_encode().into(),
        "enabling the AllowanceModule on the account",
    )
    .await?;
    exec_as_owner(
        provider,
        account,
        owner,
        ALLOWANCE_MODULE,
        IAllowanceModule::addDelegateCall { delegate: signer }.abi_encode().into(),
        "making the burner key the account's delegate",
    )
    .await?;
    for limit in limits {
        set_limit(provider, account, owner, signer, limit).await?;
    }
    Ok(account)
}

/// Sets `limit` for `signer` on `account` (an owner action, as the owner's wallet would send it).
pub async fn set_limit(
    provider: &DynProvider,
    account: Address,
    owner: Address,
    signer: Address,
    limit: &OnchainLimit,
) -> Result<(), DevnetError> {
    let amount = limit.base_units()?;
    let amount = u128::try_from(amount)
        .ok()
        .and_then(|a| alloy::primitives::aliases::U96::try_from(a).ok())
        .ok_or_else(|| DevnetError::Account(format!("the limit {} does not fit the module's 96 bits", limit.amount)))?;
    let minutes = u16::try_from(limit.period_secs / 60)
        .ok()
        .filter(|m| *m > 0)
        .ok_or_else(|| DevnetError::Account("a limit's period is 1 minute to 45 days".into()))?;
    // The module's periods follow a fixed grid from `resetBaseMin` (0: from when the limit is set). A limit of whole
    // days starts its grid at a UTC midnight, so it resets when holdfast's own day caps do.
    let base = if limit.period_secs.is_multiple_of(DAY_SECS) {
        let latest = provider
            .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
            .await
            .map_err(|e| DevnetError::rpc("reading the chain's time", e))?
            .ok_or_else(|| DevnetError::Account("the chain has no latest block".into()))?;
        let midnight_min = latest.header.timestamp / DAY_SECS * (DAY_SECS / 60);
        u32::try_from(midnight_min).map_err(|_| DevnetError::Account("the chain's time is past the module's".into()))?
    } else {
        0
    };
    let call = IAllowanceModule::setAllowanceCall {
        delegate: signer,
        token: limit.token()?,
        allowanceAmount: amount,
        resetTimeMin: minutes,
        resetBaseMin: base,
    };
    exec_as_owner(provider, account, owner, ALLOWANCE_MODULE, call.abi_encode().into(), "setting an on-chain limit")
        .await
}

/// Makes `new_owner` an owner of `account` too, keeping the threshold at 1 (an owner action, as the owner's wallet
/// would send it): what a user must never do with holdfast's key, whose limits then bind nothing.
pub async fn add_owner(
    provider: &DynProvider,
    account: Address,
    owner: Address,
    new_owner: Address,
) -> Result<(), DevnetError> {
    let call = ISafe::addOwnerWithThresholdCall { owner: new_owner, _threshold: U256::from(1) };
    exec_as_owner(provider, account, owner, account, call.abi_encode().into(), "adding an owner").await
}

/// Enables `module` on `account` too (an owner action): a module the on-chain limits know nothing of.
pub async fn enable_module(
    provider: &DynProvider,
    account: Address,
    owner: Address,
    module: Address,
) -> Result<(), DevnetError> {
    let call = ISafe::enableModuleCall { module };
    exec_as_owner(provider, account, owner, account, call.abi_encode().into(), "enabling a module").await
}

/// What remains of `signer`'s limit on `account` for `token` (zero address: ether) this period, with the limit:
/// `(limit, remaining)`, as the module reads it now.
pub async fn remaining(
    provider: &DynProvider,
    account: Address,
    signer: Address,
    token: Address,
) -> Result<(U256, U256), DevnetError> {
    let module = IAllowanceModule::new(ALLOWANCE_MODULE, provider);
    let [amount, spent, ..] = module
        .getTokenAllowance(account, signer, token)
        .call()
        .await
        .map_err(|e| DevnetError::rpc("reading an on-chain limit", e))?;
    Ok((amount, amount.saturating_sub(spent)))
}

/// The first dev account: the devnet account's owner.
pub async fn owner(provider: &DynProvider) -> Result<Address, DevnetError> {
    dev_account(provider).await
}

/// Places the account contracts, creates the account owned by the dev account `dev` with `signer` as its limited
/// delegate and `limits`, and funds it ([`ACCOUNT_ETH`], [`ACCOUNT_USDC`]) — the signer only with gas
/// ([`SIGNER_GAS_ETH`]). Returns the account.
pub(crate) async fn set_up_account(
    provider: &DynProvider,
    dev: Address,
    signer: Address,
    limits: &[OnchainLimit],
    progress: &(dyn Fn(&str) + Send + Sync),
) -> Result<Address, DevnetError> {
    for limit in limits {
        // Checked before anything is created.
        limit.token()?;
        limit.base_units()?;
    }
    place_account_contracts(provider).await?;
    progress(&format!(
        "placed Safe 1.4.1 (singleton {SAFE_SINGLETON}, factory {SAFE_PROXY_FACTORY}) and Safe's AllowanceModule at \
         {ALLOWANCE_MODULE}"
    ));
    let account = create_account(provider, dev, signer, limits, 0).await?;
    crate::contracts::add_eth(provider, account, ACCOUNT_ETH).await?;
    crate::contracts::mint_usdc(provider, dev, account, ACCOUNT_USDC).await?;
    crate::contracts::add_eth(provider, signer, SIGNER_GAS_ETH).await?;
    let shown: Vec<String> =
        limits.iter().map(|l| format!("{} {} per {} s", l.amount, l.asset, l.period_secs)).collect();
    progress(&format!(
        "created the account {account} (a Safe owned by the dev account {dev}) with 10 ETH and 10000 USDC; the wallet \
         key is its delegate, limited on chain to {} (base units), and holds 0.05 ETH for gas",
        shown.join(", ")
    ));
    Ok(account)
}
