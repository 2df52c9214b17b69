//! The devnet's smart account on a real anvil: Safe 1.4.1 and Safe's AllowanceModule at their canonical addresses,
//! the burner key as the account's limited delegate. The key used directly — not through holdfast — moves at most
//! what remains of the day's on-chain limit, whatever it signs. Judged by the chain.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use alloy::network::{EthereumWallet, TransactionBuilder};
use alloy::primitives::aliases::U96;
use alloy::primitives::{Address, Bytes, U256, address, keccak256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::rpc::types::TransactionRequest;
use alloy::sol_types::SolCall;
use holdfast_devnet::account::abi::{IAllowanceModule, ISafe};
use holdfast_devnet::account::{
    ACCOUNT_ETH, ACCOUNT_USDC, ALLOWANCE_MODULE, OnchainLimit, SAFE_PROXY_FACTORY, SAFE_SINGLETON, exec_transaction,
    remaining,
};
use holdfast_devnet::contracts::abi::IDevnetToken;
use holdfast_devnet::{NATIVE, TestDevnet, USDC};
use std::time::Duration;

const THIEF: Address = address!("0x000000000000000000000000000000000000dEaD");

fn key_provider(dn: &TestDevnet) -> DynProvider {
    ProviderBuilder::new()
        .wallet(EthereumWallet::from(dn.signer().unwrap()))
        .connect_http(dn.rpc_url.parse().unwrap())
        .erased()
}

/// Sends `tx` signed with the burner key, with a fixed gas limit (so a transaction the chain refuses is mined and
/// reverts, rather than failing its estimate); true when it succeeded on chain.
async fn sent_ok(key: &DynProvider, tx: TransactionRequest) -> bool {
    let hash = *key.send_transaction(tx.with_gas_limit(500_000)).await.unwrap().tx_hash();
    for _ in 0..300 {
        if let Some(r) = key.get_transaction_receipt(hash).await.unwrap() {
            return r.status();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not mined: {hash}");
}

fn module_transfer(account: Address, signer: Address, token: Address, to: Address, amount: u64) -> TransactionRequest {
    let call = IAllowanceModule::executeAllowanceTransferCall {
        safe: account,
        token,
        to,
        amount: U96::from(amount),
        paymentToken: Address::ZERO,
        payment: U96::ZERO,
        delegate: signer,
        signature: Bytes::new(),
    };
    TransactionRequest::default().with_to(ALLOWANCE_MODULE).with_input(Bytes::from(call.abi_encode()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_alone_moves_at_most_what_remains_of_the_limit() {
    let dn = TestDevnet::start_with_account(OnchainLimit::defaults()).await.unwrap();
    let account = dn.account.expect("an account");
    let signer = dn.wallet_address;
    let provider = dn.provider();

    // The contracts are the vendored ones, at their canonical addresses; the account is a Safe owned by the dev
    // account, threshold 1, with the module enabled.
    for at in [SAFE_SINGLETON, SAFE_PROXY_FACTORY, ALLOWANCE_MODULE] {
        assert!(!provider.get_code_at(at).await.unwrap().is_empty(), "{at}");
    }
    let expected: serde_json::Value =
        serde_json::from_str(include_str!("../../../../devnet/vendor/allowance-module-0.1.1/AllowanceModule.json"))
            .unwrap();
    let code = provider.get_code_at(ALLOWANCE_MODULE).await.unwrap();
    assert_eq!(format!("{:#x}", keccak256(&code)), expected["codeHash"].as_str().unwrap());
    let safe = ISafe::new(account, &provider);
    assert_eq!(safe.getOwners().call().await.unwrap(), vec![dn.dev_account()]);
    assert_eq!(safe.getThreshold().call().await.unwrap(), U256::from(1));
    assert!(safe.isModuleEnabled(ALLOWANCE_MODULE).call().await.unwrap());
    // The funds are the account's; the key holds only gas.
    assert_eq!(dn.balance_of(USDC, account).await.unwrap(), ACCOUNT_USDC);
    assert_eq!(dn.balance_of(NATIVE, account).await.unwrap(), ACCOUNT_ETH);
    assert_eq!(dn.balance_of(USDC, signer).await.unwrap(), U256::ZERO);
    let (limit, left) = remaining(&provider, account, signer, USDC).await.unwrap();
    assert_eq!((limit, left), (U256::from(100_000_000u64), U256::from(100_000_000u64)));
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dn.dir.join("devnet.json")).unwrap()).unwrap();
    assert_eq!(info["wallet"]["account"].as_str().unwrap(), account.to_checksum(None));
    assert_eq!(info["wallet"]["limits"][1]["amount"], "100000000");
    let config = std::fs::read_to_string(&dn.config_path).unwrap();
    assert!(config.contains(&format!("account = \"{account}\"")), "{config}");

    let key = key_provider(&dn);
    // More than the limit in one go, to a thief: refused by the module.
    assert!(!sent_ok(&key, module_transfer(account, signer, USDC, THIEF, 150_000_000)).await);
    // Within it: moves; then what no longer fits: refused.
    assert!(sent_ok(&key, module_transfer(account, signer, USDC, THIEF, 60_000_000)).await);
    assert!(!sent_ok(&key, module_transfer(account, signer, USDC, THIEF, 60_000_000)).await);
    assert!(!sent_ok(&key, module_transfer(account, signer, Address::ZERO, THIEF, 60_000_000_000_000_000)).await);
    // The account's own execution path, signed by the key alone (it is no owner): refused.
    let steal = IDevnetToken::transferCall { to: THIEF, value: U256::from(1_000_000_000u64) };
    let exec = exec_transaction(USDC, steal.abi_encode().into(), signer);
    assert!(!sent_ok(&key, TransactionRequest::default().with_to(account).with_input(exec)).await);
    // A plain transfer from the key: it holds none of the account's funds.
    let plain = TransactionRequest::default().with_to(USDC).with_input(Bytes::from(steal.abi_encode()));
    assert!(!sent_ok(&key, plain).await);

    // On chain: exactly the 60 USDC within the limit left the account.
    assert_eq!(dn.balance_of(USDC, account).await.unwrap(), ACCOUNT_USDC - U256::from(60_000_000u64));
    assert_eq!(dn.balance_of(USDC, THIEF).await.unwrap(), U256::from(60_000_000u64));
    assert_eq!(dn.balance_of(NATIVE, account).await.unwrap(), ACCOUNT_ETH);
    let (_, left) = remaining(&provider, account, signer, USDC).await.unwrap();
    assert_eq!(left, U256::from(40_000_000u64));
}

/// A day's limit resets at UTC midnight, when holdfast's own day caps do (the module's periods follow a fixed grid;
/// the devnet starts it at a midnight): a minute before it, what was spent still counts; a minute after, the whole
/// limit is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_days_limit_resets_at_utc_midnight() {
    use alloy::providers::ext::AnvilApi as _;
    let dn = TestDevnet::start_with_account(OnchainLimit::defaults()).await.unwrap();
    let (account, signer, provider) = (dn.account.expect("an account"), dn.wallet_address, dn.provider());
    let chain_now = || async {
        let block = provider.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await.unwrap().unwrap();
        block.header.timestamp
    };
    let travel = |secs: u64| {
        let provider = provider.clone();
        async move {
            provider.anvil_increase_time(secs).await.unwrap();
            provider.anvil_mine(Some(1), None).await.unwrap();
        }
    };
    // To noon of the next UTC day (the limit was set today: its old grid, which began when it was set, has no step
    // between that noon and the next midnight unless it was set within a minute of midnight), then to a minute
    // before the next midnight.
    let now = chain_now().await;
    let noon = (now / 86_400 + 1) * 86_400 + 43_200;
    travel(noon - now).await;
    let midnight = noon + 43_200;
    travel(midnight - 60 - chain_now().await).await;
    let (limit, before) = remaining(&provider, account, signer, USDC).await.unwrap();
    let key = key_provider(&dn);
    assert!(sent_ok(&key, module_transfer(account, signer, USDC, THIEF, 10_000_000)).await);
    let (_, left) = remaining(&provider, account, signer, USDC).await.unwrap();
    assert_eq!(left, before - U256::from(10_000_000u64), "spent this period");
    travel(120).await;
    // Before: the grid started when the limit was set, so midnight reset nothing.
    let (_, left) = remaining(&provider, account, signer, USDC).await.unwrap();
    assert_eq!(left, limit, "the whole limit is back after midnight");
}
