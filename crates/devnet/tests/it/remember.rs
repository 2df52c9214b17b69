//! A devnet remembers: `down` and `up` again (or a killed devnet started again) resume the same chain with the same
//! wallet — balances and earlier transactions still there — until `reset` starts over. Judged by the chain.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use alloy::network::{EthereumWallet, TransactionBuilder};
use alloy::primitives::{Address, B256, U256, address};
use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::types::TransactionRequest;
use holdfast_devnet::{CHAIN_ID, DevnetError, DevnetInfo, OnchainLimit, UpOptions, down, join, reset, up};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const SERVICES_EXE: &str = env!("CARGO_BIN_EXE_holdfast-devnet-services");
const FRIEND: Address = address!("0x000000000000000000000000000000000000bEEF");

fn opts(dir: &Path, lines: &Arc<Mutex<Vec<String>>>) -> UpOptions {
    let sink = lines.clone();
    UpOptions {
        progress: Arc::new(move |line: &str| sink.lock().unwrap().push(line.to_owned())),
        ..UpOptions::new(dir, PathBuf::from(SERVICES_EXE))
    }
}

fn provider(info: &DevnetInfo) -> alloy::providers::DynProvider {
    ProviderBuilder::new().connect_http(info.rpc_url.parse().unwrap()).erased()
}

/// What the chain says about the wallet: the signer's ether, the account's USDC, and whether `tx` is mined.
async fn seen(info: &DevnetInfo, tx: B256) -> (U256, U256, bool, B256) {
    let p = provider(info);
    let account: Address = info.wallet.account.as_deref().unwrap().parse().unwrap();
    let usdc = holdfast_devnet::contracts::abi::IDevnetToken::new(holdfast_devnet::USDC, &p);
    let genesis = p.get_block_by_number(0.into()).await.unwrap().unwrap().header.hash;
    (
        p.get_balance(info.wallet.address).await.unwrap(),
        usdc.balanceOf(account).call().await.unwrap(),
        p.get_transaction_receipt(tx).await.unwrap().is_some_and(|r| r.status()),
        genesis,
    )
}

fn kill9(pid: u32) {
    std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    for _ in 0..200 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.is_empty() || stat.rsplit(')').next().unwrap().split_whitespace().next() == Some("Z") {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_devnet_keeps_its_chain_and_wallet_across_restarts_until_reset() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("devnet");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let first = up(opts(&dir, &lines)).await.unwrap();
    assert!(first.genesis.is_some());

    // The wallet key sends ether: a transaction of this chain.
    let signer = holdfast_devnet::wallet::load_key_file(&dir.join("wallet.key")).unwrap();
    let key = ProviderBuilder::new().wallet(EthereumWallet::from(signer)).connect_http(first.rpc_url.parse().unwrap());
    let send = TransactionRequest::default().with_to(FRIEND).with_value(U256::from(12_345u64));
    let tx = *key.send_transaction(send).await.unwrap().tx_hash();
    key.get_transaction_receipt(tx).await.unwrap();
    let before = seen(&first, tx).await;
    assert!(before.2, "the transfer is mined");

    // Stopped and started again: the same chain, the same wallet, the transaction still mined.
    down(&dir).await.unwrap();
    assert!(dir.join(holdfast_devnet::info::STATE_FILE).is_file(), "down saves the chain");
    let second = up(opts(&dir, &lines)).await.unwrap();
    assert!(!second.already_up);
    assert_ne!(second.anvil.pid, first.anvil.pid);
    assert_eq!(second.wallet, first.wallet, "same wallet, account and limits");
    // (Not necessarily its genesis block: anvil does not always keep the one of a chain it loaded.)
    let after = seen(&second, tx).await;
    assert_eq!((after.0, after.1, after.2), (before.0, before.1, before.2), "balances and the transaction are kept");
    assert!(lines.lock().unwrap().iter().any(|l| l.contains("resumed the saved chain")), "{:?}", lines.lock().unwrap());
    let config = std::fs::read_to_string(dir.join("holdfast.toml")).unwrap();
    assert!(config.contains(&second.rpc_url), "the config names the new node's URL");

    // Killed (no clean stop): started again, the chain saved before is there.
    kill9(second.services.pid);
    kill9(second.anvil.pid);
    let third = up(opts(&dir, &lines)).await.unwrap();
    assert_eq!(third.wallet.address, first.wallet.address);
    assert!(seen(&third, tx).await.2, "the transaction survives a kill -9");

    // Another chain id is not silently started over the saved chain.
    down(&dir).await.unwrap();
    let other = UpOptions { chain_id: 31337, ..opts(&dir, &lines) };
    let err = up(other).await.unwrap_err();
    assert!(matches!(err, DevnetError::SavedChain { .. }), "{err}");
    assert!(err.to_string().contains("devnet reset"), "{err}");

    // A state file caught mid-write (anvil rewrites it in place): the copy of the last clean stop is resumed.
    // Other account options keep the saved chain, and say so.
    assert!(dir.join("chain-state.prev.json").is_file(), "a clean stop keeps a copy");
    let state = std::fs::read(dir.join("chain-state.json")).unwrap();
    std::fs::write(dir.join("chain-state.json"), &state[..state.len() / 2]).unwrap();
    lines.lock().unwrap().clear();
    let limits = vec![OnchainLimit { asset: "ETH".into(), amount: "1".into(), period_secs: 86_400 }];
    let fourth = up(UpOptions { account: Some(limits), ..opts(&dir, &lines) }).await;
    let fourth = fourth.unwrap_or_else(|e| panic!("{e}\n{:#?}", lines.lock().unwrap()));
    assert_eq!(fourth.wallet, first.wallet);
    assert!(seen(&fourth, tx).await.2, "the transaction is in the copy");
    let said = lines.lock().unwrap().join("\n");
    assert!(said.contains("copy kept at the last clean stop"), "{said}");
    assert!(said.contains("keeps its smart account"), "{said}");

    // In use by a process (a serve): reset refuses.
    let (_, user) = join(opts(&dir, &lines), false).await.unwrap();
    let err = reset(&dir).await.unwrap_err();
    assert!(matches!(err, DevnetError::InUse(_)), "{err}");
    drop(user);

    // Reset: stopped, chain and key gone; the next up is a new chain with a new wallet.
    let report = reset(&dir).await.unwrap();
    assert!(report.stopped.is_some());
    for file in ["wallet.key", "chain-state.json", "chain-state.prev.json"] {
        assert!(report.removed.contains(&file), "{file}: {report:?}");
    }
    assert!(!dir.join("wallet.key").exists() && !dir.join("chain-state.json").exists());
    let fresh = up(opts(&dir, &lines)).await.unwrap();
    assert_ne!(fresh.wallet.address, first.wallet.address);
    // (Its genesis differs from the old one unless both were made within the same second: anvil stamps it.)
    assert!(!seen(&fresh, tx).await.2, "a new chain does not have the old transaction");
    assert_eq!(fresh.chain_id, CHAIN_ID);
    down(&dir).await.unwrap();
}
