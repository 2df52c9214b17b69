//! The devnet's contracts: their Base addresses, their ABIs (alloy `sol!`), their committed runtime bytecode, and
//! the steps that place them on a fresh anvil, configure the price feeds, seed the swap venue and fund a wallet.
//!
//! The bytecode comes from `devnet/artifacts/*.json` (compiled by `devnet/scripts/compile.mjs`, see
//! `devnet/NOTES.md`), embedded at build time, so starting a devnet needs neither solc nor npm once anvil is there.

use crate::error::DevnetError;
use alloy::network::TransactionBuilder;
use alloy::primitives::{Address, B256, Bytes, I256, U256, address, uint};
use alloy::providers::ext::AnvilApi;
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::{TransactionReceipt, TransactionRequest};
use std::time::Duration;

/// The chain id the devnet runs with by default: 1752132708 (`0x686f6c64`, ASCII "hold"), which no public chain
/// uses (it is not in the ethereum-lists chain registry). Every transaction and EIP-3009/EIP-712 authorization the
/// devnet wallet signs commits to this id (EIP-155, the EIP-712 domain), so nothing signed on the devnet is valid on
/// Base mainnet (8453) or any other public chain — even if a real key was put into a devnet config by mistake. The
/// contracts keep their Base addresses, and the config keeps the network name `base`, so transcripts and skills
/// written for Base run unchanged. `holdfast devnet up --chain-id N` picks another id (tests that need one).
pub const CHAIN_ID: u64 = 1_752_132_708;

/// Chain ids a devnet may run with without being asked twice: its own ([`CHAIN_ID`]) and the local ids of anvil and
/// hardhat (31337) and ganache (1337), which no public network uses (holdfast-core's list, where the journal's
/// reconciler reads it too). Any other id may be some public network's — the registry of chain ids has thousands, and
/// a denylist always misses one — so `up` refuses it without `--allow-public-chain-id`, and warns when it finds a
/// running devnet on one.
pub use holdfast_core::config::{LOCAL_CHAIN_IDS, is_local_chain_id};
const _: () = assert!(LOCAL_CHAIN_IDS[0] == CHAIN_ID, "the devnet's own chain id is a local one");
/// USDC on Base; the devnet places `FiatTokenDevnet` here (6 decimals, EIP-3009, open `mint`).
pub const USDC: Address = address!("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
/// WETH on Base; the devnet places `WETH9` here.
pub const WETH: Address = address!("0x4200000000000000000000000000000000000006");
/// 0x AllowanceHolder on Base; the devnet places its `SwapVenue` here (the swap target and the allowance spender).
pub const VENUE: Address = address!("0x0000000000001fF3684f28c67538d4D072C22734");
/// The native-ether placeholder swap APIs use for ETH.
pub const NATIVE: Address = address!("0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE");
/// Chainlink's ETH / USD feed on Base; the devnet places a `DevnetPriceFeed` here that answers the swap venue's mid
/// price (its USDC reserve over its ether reserve, 8 decimals), computed at read time, so it always matches the venue.
pub const ETH_USD_FEED: Address = address!("0x71041dddad3595F9CEd3DcCFBe3D1F4b0a16Bb70");
/// Chainlink's USDC / USD feed on Base; the devnet places a `DevnetPriceFeed` here that answers a fixed 1e8 ($1).
pub const USDC_USD_FEED: Address = address!("0x7e860098F58bBFC8648a4311b374B1D669a2bc6B");

/// Decimals of every devnet price feed's answer (as Chainlink's USD feeds).
pub const FEED_DECIMALS: u8 = 8;
/// `DevnetPriceFeed` storage slot 0: what the feed answers ([`FEED_MODE_ETH_USD`] or [`FEED_MODE_USDC_USD`]; 0 =
/// not configured, every price read reverts).
pub const FEED_MODE_SLOT: U256 = U256::ZERO;
/// `DevnetPriceFeed` storage slot 1: an int256 that, when non-zero, is answered instead of the feed's own price.
pub const FEED_ANSWER_OVERRIDE_SLOT: U256 = uint!(1_U256);
/// `DevnetPriceFeed` storage slot 2: a timestamp that, when non-zero, is answered as `startedAt` and `updatedAt`
/// instead of `block.timestamp` (a stale feed).
pub const FEED_UPDATED_AT_OVERRIDE_SLOT: U256 = uint!(2_U256);
/// Feed mode: ETH / USD from the swap venue's reserves.
pub const FEED_MODE_ETH_USD: U256 = uint!(1_U256);
/// Feed mode: USDC / USD fixed at 1e8.
pub const FEED_MODE_USDC_USD: U256 = uint!(2_U256);

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

        /// The devnet price feed (`devnet/contracts/DevnetPriceFeed.sol`): Chainlink's AggregatorV3Interface read
        /// surface, plus its configuration getters, placed at Base's ETH / USD and USDC / USD feed addresses.
        #[sol(rpc, all_derives)]
        interface IDevnetPriceFeed {
            error NotConfigured();
            error UnknownMode(uint256 mode);
            error NoMidPrice(uint256 ethReserve, uint256 usdcReserve);
            error AnswerOverflow(uint256 answer);

            function decimals() external view returns (uint8);
            function description() external view returns (string);
            function version() external view returns (uint256);
            function latestRoundData() external view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound);
            function getRoundData(uint80 _roundId) external view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound);

            function mode() external view returns (uint256);
            function answerOverride() external view returns (int256);
            function updatedAtOverride() external view returns (uint256);
            function MODE_VENUE_ETH_USD() external view returns (uint256);
            function MODE_FIXED_USDC_USD() external view returns (uint256);
            function VENUE() external view returns (address);
            function USDC() external view returns (address);
        }
    }
}

use abi::{IDevnetToken, IWETH9};

const FIAT_TOKEN_ARTIFACT: &str = include_str!("../../../devnet/artifacts/FiatTokenDevnet.json");
const WETH9_ARTIFACT: &str = include_str!("../../../devnet/artifacts/WETH9.json");
const SWAP_VENUE_ARTIFACT: &str = include_str!("../../../devnet/artifacts/SwapVenue.json");
const PRICE_FEED_ARTIFACT: &str = include_str!("../../../devnet/artifacts/DevnetPriceFeed.json");

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

/// The runtime bytecode placed at each address: `[(name, address, code)]`. The two price feeds share one code and
/// differ by the mode `place_and_seed` writes into their storage ([`feed_modes`]).
pub fn placements() -> Result<[(&'static str, Address, Bytes); 5], DevnetError> {
    let feed = runtime_code("DevnetPriceFeed", PRICE_FEED_ARTIFACT)?;
    Ok([
        ("FiatTokenDevnet (USDC)", USDC, runtime_code("FiatTokenDevnet", FIAT_TOKEN_ARTIFACT)?),
        ("WETH9", WETH, runtime_code("WETH9", WETH9_ARTIFACT)?),
        ("SwapVenue", VENUE, runtime_code("SwapVenue", SWAP_VENUE_ARTIFACT)?),
        ("DevnetPriceFeed (ETH / USD)", ETH_USD_FEED, feed.clone()),
        ("DevnetPriceFeed (USDC / USD)", USDC_USD_FEED, feed),
    ])
}

/// The mode (storage slot [`FEED_MODE_SLOT`]) of each price feed: `[(address, mode)]`.
pub fn feed_modes() -> [(Address, U256); 2] {
    [(ETH_USD_FEED, FEED_MODE_ETH_USD), (USDC_USD_FEED, FEED_MODE_USDC_USD)]
}

/// Writes `value` into storage slot `slot` of `at` with `anvil_setStorageAt`.
async fn set_slot(provider: &DynProvider, at: Address, slot: U256, value: B256, step: &str) -> Result<(), DevnetError> {
    let done = provider.anvil_set_storage_at(at, slot, value).await.map_err(|e| DevnetError::rpc(step, e))?;
    if done {
        Ok(())
    } else {
        Err(DevnetError::Rpc { step: step.into(), message: "anvil_setStorageAt returned false".into() })
    }
}

/// Makes the price feed at `feed` answer `answer` instead of its own price ([`FEED_ANSWER_OVERRIDE_SLOT`]); zero
/// restores the feed's own price. Applies from the next read on; no block is mined.
pub async fn set_feed_answer_override(provider: &DynProvider, feed: Address, answer: I256) -> Result<(), DevnetError> {
    let step = format!("setting the answer override of the price feed at {feed}");
    set_slot(provider, feed, FEED_ANSWER_OVERRIDE_SLOT, B256::from(answer.into_raw()), &step).await
}

/// Makes the price feed at `feed` report `timestamp` as `startedAt` and `updatedAt` instead of the block's
/// timestamp ([`FEED_UPDATED_AT_OVERRIDE_SLOT`]); zero restores `block.timestamp`.
pub async fn set_feed_updated_at_override(
    provider: &DynProvider,
    feed: Address,
    timestamp: u64,
) -> Result<(), DevnetError> {
    let step = format!("setting the updatedAt override of the price feed at {feed}");
    set_slot(provider, feed, FEED_UPDATED_AT_OVERRIDE_SLOT, B256::from(U256::from(timestamp)), &step).await
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

/// Places USDC, WETH, the venue and the two price feeds at their Base addresses, sets each feed's mode, and seeds
/// the venue with [`VENUE_ETH`], [`VENUE_USDC`] and [`VENUE_WETH`]. Returns the dev account that paid.
pub(crate) async fn place_and_seed(
    provider: &DynProvider,
    progress: &(dyn Fn(&str) + Send + Sync),
) -> Result<Address, DevnetError> {
    for (name, at, code) in placements()? {
        provider.anvil_set_code(at, code).await.map_err(|e| DevnetError::rpc(format!("placing {name} at {at}"), e))?;
    }
    for (feed, mode) in feed_modes() {
        set_slot(provider, feed, FEED_MODE_SLOT, B256::from(mode), &format!("configuring the price feed at {feed}"))
            .await?;
    }
    progress(&format!(
        "placed USDC at {USDC}, WETH at {WETH}, swap venue at {VENUE}, price feeds ETH/USD at {ETH_USD_FEED} and \
         USDC/USD at {USDC_USD_FEED}"
    ));

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

/// Sets `owner`'s allowance of `token` for `spender` to `amount` with a transaction from `owner` itself (impersonated:
/// anvil sends it unsigned), as a wallet's own earlier approval would have left it.
pub(crate) async fn approve_as(
    provider: &DynProvider,
    owner: Address,
    token: Address,
    spender: Address,
    amount: U256,
) -> Result<(), DevnetError> {
    let step = "approving from an impersonated account";
    provider.anvil_impersonate_account(owner).await.map_err(|e| DevnetError::rpc(step, e))?;
    let tx = IDevnetToken::new(token, provider).approve(spender, amount).into_transaction_request();
    let sent = send_unlocked(provider, owner, tx, step).await;
    provider.anvil_stop_impersonating_account(owner).await.map_err(|e| DevnetError::rpc(step, e))?;
    sent.map(|_| ())
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
        assert_eq!(ETH_USD_FEED.to_checksum(None), "0x71041dddad3595F9CEd3DcCFBe3D1F4b0a16Bb70");
        assert_eq!(USDC_USD_FEED.to_checksum(None), "0x7e860098F58bBFC8648a4311b374B1D669a2bc6B");
    }

    #[test]
    fn feed_abi_is_aggregator_v3() {
        use super::abi::IDevnetPriceFeed;
        // AggregatorV3Interface selectors, as Chainlink's proxies answer them.
        assert_eq!(IDevnetPriceFeed::decimalsCall::SELECTOR, [0x31, 0x3c, 0xe5, 0x67]);
        assert_eq!(IDevnetPriceFeed::descriptionCall::SELECTOR, [0x72, 0x84, 0xe4, 0x16]);
        assert_eq!(IDevnetPriceFeed::versionCall::SELECTOR, [0x54, 0xfd, 0x4d, 0x50]);
        assert_eq!(IDevnetPriceFeed::latestRoundDataCall::SELECTOR, [0xfe, 0xaf, 0x96, 0x8c]);
        assert_eq!(IDevnetPriceFeed::getRoundDataCall::SELECTOR, [0x9a, 0x6f, 0xc8, 0xf5]);
        // The errors, as devnet/NOTES.md lists them.
        use alloy::sol_types::SolError;
        assert_eq!(IDevnetPriceFeed::NotConfigured::SELECTOR, [0xd3, 0x11, 0xbc, 0x39]);
        assert_eq!(IDevnetPriceFeed::UnknownMode::SELECTOR, [0x9d, 0x39, 0x84, 0x23]);
        assert_eq!(IDevnetPriceFeed::NoMidPrice::SELECTOR, [0x94, 0x2a, 0x0b, 0x3b]);
        assert_eq!(IDevnetPriceFeed::AnswerOverflow::SELECTOR, [0x65, 0xbb, 0x5f, 0x6a]);
    }

    #[test]
    fn feed_abi_matches_the_artifact() {
        use super::abi::IDevnetPriceFeed::{IDevnetPriceFeedCalls, IDevnetPriceFeedErrors};
        use alloy::sol_types::SolInterface;
        let artifact: serde_json::Value = serde_json::from_str(PRICE_FEED_ARTIFACT).unwrap();
        let mut from_artifact: Vec<[u8; 4]> = artifact["abi"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["type"] == "function" || item["type"] == "error")
            .map(|item| {
                let inputs: Vec<&str> =
                    item["inputs"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
                let signature = format!("{}({})", item["name"].as_str().unwrap(), inputs.join(","));
                alloy::primitives::keccak256(signature)[..4].try_into().unwrap()
            })
            .collect();
        from_artifact.sort_unstable();
        let mut from_sol: Vec<[u8; 4]> =
            IDevnetPriceFeedCalls::selectors().chain(IDevnetPriceFeedErrors::selectors()).collect();
        from_sol.sort_unstable();
        assert_eq!(from_sol, from_artifact);
    }
}
