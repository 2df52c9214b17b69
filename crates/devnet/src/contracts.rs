//! The devnet's contracts: their Base addresses, their ABIs (alloy `sol!`), their committed runtime bytecode, and
//! the steps that place them on a fresh anvil, seed the swap venue and fund a wallet.
//!
//! The bytecode comes from `devnet/artifacts/*.json` (compiled by `devnet/scripts/compile.mjs`, see
//! `devnet/NOTES.md`), embedded at build time, so starting a devnet needs neither solc nor npm once anvil is there.

use crate::error::DevnetError;
use alloy::network::TransactionBuilder;
use alloy::primitives::{Address, Bytes, U256, address, uint};
use alloy::providers::ext::AnvilApi;
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::{TransactionReceipt, TransactionRequest};
use std::time::Duration;

/// The chain id the devnet runs with (Base mainnet's).
pub const CHAIN_ID: u64 = 8453;
/// USDC on Base; the devnet places `FiatTokenDevnet` here (6 decimals, EIP-3009, open `mint`).
pub const USDC: Address = address!("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
/// WETH on Base; the devnet places `WETH9` here.
pub const WETH: Address = address!("0x4200000000000000000000000000000000000006");
/// 0x AllowanceHolder on Base; the devnet places its `SwapVenue` here (the swap target and the allowance spender).
pub const VENUE: Address = address!("0x0000000000001fF3684f28c67538d4D072C22734");
/// The native-ether placeholder swap APIs use for ETH.
pub const NATIVE: Address = address!("0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE");

/// One ether in wei.
pub const ETHER: U256 = uint!(1_000_000_000_000_000_000_U256);
/// One USDC in base units.
pub const ONE_USDC: U256 = uint!(1_000_000_U256);

/// The venue's native-ether reserve after seeding, in wei (100 ETH).
pub const VENUE_ETH: U256 = uint!(100_000_000_000_000_000_000_U256);
/// The venue's USDC reserve after seeding, in base units (300,000 USDC; with 100 ETH, ETH ≈ 3000 USDC).
pub const VENUE_USDC: U256 = uint!(300_000_000_000_U256);
/// The venue's WETH reserve after seeding, in wei (100 WETH).
pub const VENUE_WETH: U256 = VENUE_ETH;
/// The burner wallet's ether after funding, in wei (10 ETH).
pub const WALLET_ETH: U256 = uint!(10_000_000_000_000_000_000_U256);
/// The burner wallet's USDC after funding, in base units (10,000 USDC).
pub const WALLET_USDC: U256 = uint!(10_000_000_000_U256);

/// Solidity interfaces of the devnet contracts (alloy `sol!`, with RPC bindings).
#[allow(missing_docs)]
pub mod abi {
    alloy::sol! {
        /// The devnet swap venue (`devnet/contracts/SwapVenue.sol`), placed at the AllowanceHolder address.
        #[sol(rpc)]
        interface ISwapVenue {
            error SameToken(address token);
            error ZeroSellAmount();
            error NoLiquidity(address token);
            error SellAmountTooSmall(uint256 sellAmount);
            error InsufficientLiquidity(address token, uint256 reserve, uint256 buyAmount);
            error InsufficientBuyAmount(uint256 buyAmount, uint256 minBuyAmount);
            error WrongMsgValue(uint256 expected, uint256 actual);
            error ZeroRecipient();
            error TokenTransferFailed(address token);
            error NativeTransferFailed(address recipient, uint256 amount);
            error Reentrancy();

            event Swap(address indexed taker, address indexed recipient, address sellToken, address buyToken, uint256 sellAmount, uint256 buyAmount);

            function NATIVE() external view returns (address);
            function WETH() external view returns (address);
            function quote(address sellToken, address buyToken, uint256 sellAmount) external view returns (uint256 buyAmount);
            function sell(address sellToken, address buyToken, uint256 sellAmount, uint256 minBuyAmount, address recipient) external payable returns (uint256 buyAmount);
        }

        /// ERC-20 as both devnet tokens implement it, plus FiatTokenDevnet's open `mint`.
        #[sol(rpc)]
        interface IDevnetToken {
            event Transfer(address indexed from, address indexed to, uint256 value);
            event Approval(address indexed owner, address indexed spender, uint256 value);

            function name() external view returns (string);
            function symbol() external view returns (string);
            function decimals() external view returns (uint8);
            function totalSupply() external view returns (uint256);
            function balanceOf(address account) external view returns (uint256);
            function allowance(address owner, address spender) external view returns (uint256);
            function approve(address spender, uint256 value) external returns (bool);
            function transfer(address to, uint256 value) external returns (bool);
            function transferFrom(address from, address to, uint256 value) external returns (bool);
            function mint(address to, uint256 amount) external;
        }

        /// WETH9's wrapping functions.
        #[sol(rpc)]
        interface IWETH9 {
            function deposit() external payable;
            function withdraw(uint256 amount) external;
        }
    }
}

use abi::{IDevnetToken, IWETH9};

const FIAT_TOKEN_ARTIFACT: &str = include_str!("../../../devnet/artifacts/FiatTokenDevnet.json");
const WETH9_ARTIFACT: &str = include_str!("../../../devnet/artifacts/WETH9.json");
const SWAP_VENUE_ARTIFACT: &str = include_str!("../../../devnet/artifacts/SwapVenue.json");

/// The part of an artifact the devnet needs.
#[derive(serde::Deserialize)]
struct Artifact {
    #[serde(rename = "deployedBytecode")]
    deployed_bytecode: Bytes,
}

/// The committed runtime bytecode of `name`.
fn runtime_code(name: &'static str, json: &str) -> Result<Bytes, DevnetError> {
    let artifact: Artifact =
        serde_json::from_str(json).map_err(|e| DevnetError::Artifact { name, reason: e.to_string() })?;
    if artifact.deployed_bytecode.is_empty() {
        return Err(DevnetError::Artifact { name, reason: "deployedBytecode is empty".into() });
    }
    Ok(artifact.deployed_bytecode)
}

/// The runtime bytecode placed at each address: `[(name, address, code)]`.
pub fn placements() -> Result<[(&'static str, Address, Bytes); 3], DevnetError> {
    Ok([
        ("FiatTokenDevnet (USDC)", USDC, runtime_code("FiatTokenDevnet", FIAT_TOKEN_ARTIFACT)?),
        ("WETH9", WETH, runtime_code("WETH9", WETH9_ARTIFACT)?),
        ("SwapVenue", VENUE, runtime_code("SwapVenue", SWAP_VENUE_ARTIFACT)?),
    ])
}

/// Sends `tx` from `from`, an account the node has unlocked (anvil's dev accounts), and waits for a successful
/// receipt. The devnet mines on every transaction, so the receipt is there almost at once.
pub(crate) async fn send_unlocked(
    provider: &DynProvider,
    from: Address,
    tx: TransactionRequest,
    step: &str,
) -> Result<TransactionReceipt, DevnetError> {
    let pending = provider.send_transaction(tx.with_from(from)).await.map_err(|e| DevnetError::rpc(step, e))?;
    let hash = *pending.tx_hash();
    for _ in 0..500 {
        if let Some(receipt) = provider.get_transaction_receipt(hash).await.map_err(|e| DevnetError::rpc(step, e))? {
            if receipt.status() {
                return Ok(receipt);
            }
            return Err(DevnetError::Transaction {
                step: step.into(),
                tx: hash.to_string(),
                reason: "reverted".into(),
            });
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err(DevnetError::Transaction { step: step.into(), tx: hash.to_string(), reason: "not mined after 5 s".into() })
}

/// The first unlocked dev account of the node, used to pay for seeding.
pub(crate) async fn dev_account(provider: &DynProvider) -> Result<Address, DevnetError> {
    let accounts = provider.get_accounts().await.map_err(|e| DevnetError::rpc("listing anvil's dev accounts", e))?;
    accounts.first().copied().ok_or_else(|| DevnetError::Rpc {
        step: "listing anvil's dev accounts".into(),
        message: "anvil reported no unlocked dev account".into(),
    })
}

/// Places USDC, WETH and the venue at their Base addresses and seeds the venue with [`VENUE_ETH`],
/// [`VENUE_USDC`] and [`VENUE_WETH`]. Returns the dev account that paid.
pub(crate) async fn place_and_seed(
    provider: &DynProvider,
    progress: &(dyn Fn(&str) + Send + Sync),
) -> Result<Address, DevnetError> {
    for (name, at, code) in placements()? {
        provider.anvil_set_code(at, code).await.map_err(|e| DevnetError::rpc(format!("placing {name} at {at}"), e))?;
    }
    progress(&format!("placed USDC at {USDC}, WETH at {WETH}, swap venue at {VENUE}"));

    let dev = dev_account(provider).await?;
    provider
        .anvil_set_balance(VENUE, VENUE_ETH)
        .await
        .map_err(|e| DevnetError::rpc("seeding the venue with ether", e))?;
    let usdc = IDevnetToken::new(USDC, provider);
    send_unlocked(provider, dev, usdc.mint(VENUE, VENUE_USDC).into_transaction_request(), "minting the venue's USDC")
        .await?;
    let weth = IWETH9::new(WETH, provider);
    send_unlocked(
        provider,
        dev,
        weth.deposit().value(VENUE_WETH).into_transaction_request(),
        "wrapping the venue's WETH",
    )
    .await?;
    let weth_token = IDevnetToken::new(WETH, provider);
    send_unlocked(
        provider,
        dev,
        weth_token.transfer(VENUE, VENUE_WETH).into_transaction_request(),
        "moving WETH to the venue",
    )
    .await?;
    progress("seeded the swap venue with 100 ETH, 300000 USDC and 100 WETH (ETH ≈ 3000 USDC)");
    Ok(dev)
}

/// Mints `raw` USDC base units to `to`, paid by the unlocked dev account `dev`.
pub(crate) async fn mint_usdc(provider: &DynProvider, dev: Address, to: Address, raw: U256) -> Result<(), DevnetError> {
    let usdc = IDevnetToken::new(USDC, provider);
    send_unlocked(provider, dev, usdc.mint(to, raw).into_transaction_request(), "minting USDC").await?;
    Ok(())
}

/// Adds `wei` to the ether balance of `to`.
pub(crate) async fn add_eth(provider: &DynProvider, to: Address, wei: U256) -> Result<(), DevnetError> {
    let step = "funding an account with ether";
    let balance = provider.get_balance(to).await.map_err(|e| DevnetError::rpc(step, e))?;
    let target = balance
        .checked_add(wei)
        .ok_or_else(|| DevnetError::Rpc { step: step.into(), message: "the balance would overflow uint256".into() })?;
    provider.anvil_set_balance(to, target).await.map_err(|e| DevnetError::rpc(step, e))
}

/// Funds the burner wallet with [`WALLET_ETH`] and [`WALLET_USDC`].
pub(crate) async fn fund_wallet(provider: &DynProvider, dev: Address, wallet: Address) -> Result<(), DevnetError> {
    add_eth(provider, wallet, WALLET_ETH).await?;
    mint_usdc(provider, dev, wallet, WALLET_USDC).await
}

/// The balance of `owner` in `token` ([`NATIVE`] for ether), at the latest block.
pub async fn balance_of(provider: &DynProvider, token: Address, owner: Address) -> Result<U256, DevnetError> {
    if token == NATIVE {
        provider.get_balance(owner).await.map_err(|e| DevnetError::rpc("reading an ether balance", e))
    } else {
        IDevnetToken::new(token, provider)
            .balanceOf(owner)
            .call()
            .await
            .map_err(|e| DevnetError::rpc(format!("reading the {token} balance of {owner}"), e))
    }
}

#[cfg(test)]
mod tests {
    use super::abi::ISwapVenue;
    use super::*;
    use alloy::sol_types::SolCall;

    #[test]
    fn amounts_are_what_the_docs_say() {
        assert_eq!(ETHER, U256::from(10u64).pow(U256::from(18)));
        assert_eq!(VENUE_ETH, ETHER * U256::from(100));
        assert_eq!(WALLET_ETH, ETHER * U256::from(10));
        assert_eq!(VENUE_USDC, ONE_USDC * U256::from(300_000));
        assert_eq!(WALLET_USDC, ONE_USDC * U256::from(10_000));
    }

    #[test]
    fn artifacts_embed_runtime_code() {
        for (name, _, code) in placements().unwrap() {
            assert!(code.len() > 100, "{name}");
        }
    }

    #[test]
    fn selectors_match_the_notes() {
        assert_eq!(ISwapVenue::quoteCall::SELECTOR, [0xb6, 0x46, 0x63, 0x84]);
        assert_eq!(ISwapVenue::sellCall::SELECTOR, [0x63, 0x21, 0xda, 0x2a]);
        assert_eq!(
            <ISwapVenue::InsufficientBuyAmount as alloy::sol_types::SolError>::SELECTOR,
            [0x6b, 0x73, 0x3c, 0xfb]
        );
        assert_eq!(<ISwapVenue::NoLiquidity as alloy::sol_types::SolError>::SELECTOR, [0x92, 0xba, 0x6e, 0xe4]);
    }

    #[test]
    fn addresses_are_checksummed_as_on_base() {
        assert_eq!(USDC.to_checksum(None), "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
        assert_eq!(VENUE.to_checksum(None), "0x0000000000001fF3684f28c67538d4D072C22734");
        assert_eq!(NATIVE.to_checksum(None), "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE");
    }
}
