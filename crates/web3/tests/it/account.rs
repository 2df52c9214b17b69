//! The wallet as a smart account's limited signer (`[wallet] account`), on the devnet's Safe with Safe's
//! AllowanceModule: transfers move the account's funds through the module; the chain's limit binds even when
//! holdfast's own caps are raised far above it; the key holdfast signs with, used directly, moves no more than what
//! remains; x402 payments are funded from the account within the limit; swaps are refused clearly. Judged by the
//! chain.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::Env;
use crate::common::rpc_proxy::RpcProxy;
use alloy::network::{EthereumWallet, TransactionBuilder};
use alloy::primitives::{Address, U256, address};
use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::types::TransactionRequest;
use holdfast_core::ErrorCode;
use holdfast_devnet::account::{ACCOUNT_USDC, ALLOWANCE_MODULE, OnchainLimit, remaining};
use holdfast_devnet::{NATIVE, TestDevnet, USDC};
use holdfast_web3::EntryKind;
use holdfast_web3::kernel::account::SignerPower;
use holdfast_web3::kernel::account::{Account, transfer_tx};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const FRIEND: Address = address!("0x90F79bf6EB2c4f870365E785982E1f101E93b906");
const THIEF: Address = address!("0x000000000000000000000000000000000000dEaD");

const USDC_1: u64 = 1_000_000;
const FINNEY: u64 = 1_000_000_000_000_000;

fn to_friend() -> Value {
    json!({"network": "base", "token_register": "transfer_token", "amount_register": "transfer_amount",
           "preset": null, "recipient_register": "recipient_address"})
}

/// holdfast's own USDC caps far above the chain's (100 USDC a day): only the chain's limit can stop what follows.
async fn account_env() -> (Env, Address) {
    let devnet = TestDevnet::start_with_account(OnchainLimit::defaults()).await.expect("devnet with an account");
    let account = devnet.account.expect("an account");
    let tweaks = crate::common::Tweaks {
        toml_replace: vec![
            ("per_tx = \"5000\"".into(), "per_tx = \"100000\"".into()),
            ("per_day = \"20000\"".into(), "per_day = \"100000\"".into()),
            ("auto_per_tx = \"50\"".into(), "auto_per_tx = \"100000\"".into()),
        ],
        ..Default::default()
    };
    (Env::apply(devnet, tweaks), account)
}

async fn send_usdc(env: &Env, amount: &str) -> Result<Value, holdfast_core::ToolError> {
    env.ctx.context_bank.scan_input(&format!("send {amount} USDC to {FRIEND} on base"));
    env.ok("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "transfer_token"})).await;
    env.ok(
        "to_raw_amount",
        json!({"amount": amount, "token_register": "transfer_token", "cache_as": "transfer_amount"}),
    )
    .await;
    env.ok("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    env.call("transfer", to_friend()).await
}

async fn usdc(env: &Env, owner: Address) -> U256 {
    env.devnet.balance_of(USDC, owner).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_moves_the_accounts_funds_and_the_chains_limit_binds_above_holdfasts_caps() {
    let (env, account) = account_env().await;
    let signer = env.devnet.wallet_address;
    let friend_before = usdc(&env, FRIEND).await;

    // 5 USDC: exactly 5 out of the account, none out of the signer (it pays only the gas).
    let out = send_usdc(&env, "5").await.unwrap();
    assert_eq!(out["status"], "confirmed", "{out}");
    assert_eq!(usdc(&env, account).await, ACCOUNT_USDC - U256::from(5 * USDC_1));
    assert_eq!(usdc(&env, FRIEND).await, friend_before + U256::from(5 * USDC_1));
    assert_eq!(usdc(&env, signer).await, U256::ZERO);

    // Transfers totalling three times the day's limit (100 USDC): the chain's limit stops them, whatever holdfast's
    // caps (100,000) say, and the refusal names the on-chain limit.
    let mut refused = 0;
    for amount in ["60", "60", "60", "60", "35"] {
        match send_usdc(&env, amount).await {
            Ok(out) => assert_eq!(out["status"], "confirmed", "{out}"),
            Err(e) => {
                assert_eq!(e.code, ErrorCode::PolicyDenied, "{e:?}");
                assert!(e.message.contains("on-chain limit"), "{}", e.message);
                refused += 1;
            }
        }
    }
    assert!(refused >= 3, "three of the five cannot fit in what remains");
    let moved = ACCOUNT_USDC - usdc(&env, account).await;
    assert!(moved <= U256::from(100 * USDC_1), "at most the day's limit left the account: {moved}");
    assert_eq!(moved, U256::from(100 * USDC_1), "5 + 60 + 35 fit exactly");
    let provider = env.devnet.provider();
    let (_, left) = remaining(&provider, account, signer, USDC).await.unwrap();
    assert_eq!(left, U256::ZERO);
    // The wallet view (the UI's, /api/wallet's) shows the account, its balance and what remains of each limit.
    let money = env.web3.money().await.unwrap();
    let view = money[0].account.as_ref().expect("the account in the wallet view");
    assert_eq!(view.address, account.to_checksum(None));
    assert_eq!(view.module, ALLOWANCE_MODULE.to_checksum(None));
    let held = view.holdings.iter().find(|h| h.symbol == "USDC").unwrap();
    assert_eq!(held.balance_human.as_deref(), Some("9900"));
    let usdc_limit = view.limits.iter().find(|l| l.symbol == "USDC").unwrap();
    assert_eq!((usdc_limit.limit_human.as_deref(), usdc_limit.remaining_human.as_deref()), (Some("100"), Some("0")));
    assert_eq!(usdc_limit.period_minutes, Some(1440));
    let eth_limit = view.limits.iter().find(|l| l.symbol == "ETH").unwrap();
    assert_eq!(eth_limit.remaining_human.as_deref(), Some("0.05"));

    // The refusals are journaled; nothing of them was signed.
    let journal = env.web3.journal().for_session("session-1").await.unwrap();
    let transfers: Vec<_> = journal.iter().filter(|e| e.kind == EntryKind::Transfer).collect();
    let confirmed = transfers.iter().filter(|e| e.status == holdfast_web3::EntryStatus::Confirmed).count();
    assert_eq!(confirmed, 3, "{transfers:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_holdfast_signs_with_cannot_move_more_by_itself() {
    let (env, account) = account_env().await;
    let signer = env.devnet.wallet_address;
    let out = send_usdc(&env, "40").await.unwrap();
    assert_eq!(out["status"], "confirmed", "{out}");

    // A stolen key (or a compromised holdfast) re-signs the same call with a larger amount, and with another
    // recipient: the module refuses both on chain.
    let key = ProviderBuilder::new()
        .wallet(EthereumWallet::from(env.devnet.signer().unwrap()))
        .connect_http(env.devnet.rpc_url.parse().unwrap())
        .erased();
    let account_before = usdc(&env, account).await;
    for (to, amount) in [(FRIEND, 61 * USDC_1), (THIEF, 1_000 * USDC_1)] {
        // The very transaction holdfast builds for a transfer, with other arguments.
        let module = Account { address: account, module: ALLOWANCE_MODULE };
        let plan = transfer_tx(module, signer, USDC, to, U256::from(amount)).unwrap();
        let tx = TransactionRequest::default().with_to(plan.to).with_input(plan.data).with_gas_limit(500_000);
        let hash = *key.send_transaction(tx).await.unwrap().tx_hash();
        let mut receipt = None;
        for _ in 0..300 {
            receipt = key.get_transaction_receipt(hash).await.unwrap();
            if receipt.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!receipt.expect("mined").status(), "the module refuses {amount} to {to}");
    }
    assert_eq!(usdc(&env, account).await, account_before, "nothing left the account");
    assert_eq!(usdc(&env, THIEF).await, U256::ZERO);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payments_and_swaps_both_ways_run_through_the_account() {
    let (env, account) = account_env().await;
    let signer = env.devnet.wallet_address;
    let provider = env.devnet.provider();
    let account_usdc = usdc(&env, account).await;
    let (_, usdc_left) = remaining(&provider, account, signer, USDC).await.unwrap();
    let (_, eth_left) = remaining(&provider, account, signer, Address::ZERO).await.unwrap();
    let account_eth = env.devnet.balance_of(NATIVE, account).await.unwrap();

    // The quote is paid via x402: the kernel moves the price from the account to the signer (journaled `fund`),
    // then the signer authorizes the payment.
    let quote = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert!(quote.get("error").is_none(), "{quote}");
    let funds = |journal: &[holdfast_web3::JournalEntry]| -> Vec<holdfast_web3::JournalEntry> {
        journal.iter().filter(|e| e.kind == EntryKind::Fund).cloned().collect()
    };
    let kernel = env.web3.journal().for_session("kernel").await.unwrap();
    let paid = funds(&kernel);
    assert_eq!(paid.len(), 1, "{kernel:#?}");
    assert_eq!(paid[0].status, holdfast_web3::EntryStatus::Confirmed);
    let price = U256::from_str_radix(&paid[0].amount, 10).unwrap();
    assert!(!price.is_zero());
    assert_eq!(usdc(&env, account).await, account_usdc - price, "the price left the account");
    let (_, left) = remaining(&provider, account, signer, USDC).await.unwrap();
    assert_eq!(left, usdc_left - price, "and counts against the on-chain limit");
    let session = env.web3.journal().for_session("session-1").await.unwrap();
    assert!(session.iter().any(|e| e.kind == EntryKind::Payment), "{session:#?}");
    // The quote pays what is bought to the account.
    assert_eq!(
        env.ctx.registers.get("swap_quote").unwrap().value["transaction"]["to"],
        holdfast_devnet::VENUE.to_checksum(None)
    );

    // ETH → USDC: 0.001 ETH is funded from the account (within its ETH limit); the USDC bought lands in the account.
    let min_buy =
        U256::from_str_radix(env.ctx.registers.get("swap_quote").unwrap().value["minBuyAmount"].as_str().unwrap(), 10)
            .unwrap();
    let before_swap = usdc(&env, account).await;
    let out = env.ok("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert_eq!(out["status"], "confirmed", "{out}");
    assert!(usdc(&env, account).await >= before_swap + min_buy, "the bought USDC is the account's");
    assert_eq!(usdc(&env, signer).await, U256::ZERO, "none stays with the signer");
    assert_eq!(env.devnet.balance_of(NATIVE, account).await.unwrap(), account_eth - U256::from(FINNEY));
    let (_, left) = remaining(&provider, account, signer, Address::ZERO).await.unwrap();
    assert_eq!(left, eth_left - U256::from(FINNEY), "the sold ETH counted against the on-chain limit");
    // Called again: the same swap, no second fund and no second swap.
    let again = env.ok("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert_eq!(again["hash"], out["hash"]);
    let kernel = env.web3.journal().for_session("kernel").await.unwrap();
    assert_eq!(funds(&kernel).len(), 2, "one fund for the payment, one for the swap: {kernel:#?}");

    // USDC → ETH: the signer approves exactly the sell amount (moving nothing), 25 USDC is funded from the account,
    // and the ETH bought lands in the account.
    let quote = env.quote("swap 25 USDC for ETH", "USDC", "ETH", "25").await;
    assert!(quote.get("error").is_none(), "{quote}");
    let approved = env.ok("token_approve", json!({"for_quote": "swap_quote"})).await;
    assert_eq!(approved["result"], "approved", "{approved}");
    let (account_usdc, account_eth) =
        (usdc(&env, account).await, env.devnet.balance_of(NATIVE, account).await.unwrap());
    let out = env.ok("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert_eq!(out["status"], "confirmed", "{out}");
    assert_eq!(usdc(&env, account).await, account_usdc - U256::from(25 * USDC_1));
    assert!(env.devnet.balance_of(NATIVE, account).await.unwrap() > account_eth, "the bought ETH is the account's");
    assert_eq!(usdc(&env, signer).await, U256::ZERO, "the signer kept nothing of it");

    // A swap beyond what remains of the on-chain USDC limit: refused before anything is funded or signed.
    let quote = env.quote("swap 90 USDC for ETH", "USDC", "ETH", "90").await;
    assert!(quote.get("error").is_none(), "{quote}");
    let before = usdc(&env, account).await;
    let err = env.err("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert!(
        err.code == ErrorCode::PolicyDenied && err.message.contains("on-chain limit")
            || err.code == ErrorCode::AllowanceRequired,
        "{err:?}"
    );
    let _ = env.call("token_approve", json!({"for_quote": "swap_quote"})).await;
    let err = env.err("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert_eq!(err.code, ErrorCode::PolicyDenied, "{err:?}");
    assert!(err.message.contains("on-chain limit"), "{}", err.message);
    assert_eq!(usdc(&env, account).await, before, "nothing left the account");
}

/// holdfast's pinned hash of the module's executable code (what `holdfast doctor` compares a live module with) is
/// the vendored build's, and the devnet's placed module carries it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holdfasts_pinned_module_hash_is_the_vendored_builds() {
    use holdfast_web3::kernel::account::{ALLOWANCE_MODULE_EXECUTABLE_HASH, executable_hash};
    let artifact: serde_json::Value =
        serde_json::from_str(include_str!("../../../../devnet/vendor/allowance-module-0.1.1/AllowanceModule.json"))
            .unwrap();
    let code = alloy::primitives::hex::decode(artifact["deployedBytecode"].as_str().unwrap()).unwrap();
    assert_eq!(executable_hash(&code), ALLOWANCE_MODULE_EXECUTABLE_HASH);
    // The metadata is what differs between builds: another metadata, the same executable code.
    let mut other = code.clone();
    let n = other.len();
    other[n - 10] ^= 0xff;
    assert_eq!(executable_hash(&other), ALLOWANCE_MODULE_EXECUTABLE_HASH);
    other[10] ^= 0xff;
    assert_ne!(executable_hash(&other), ALLOWANCE_MODULE_EXECUTABLE_HASH);
    let dn = TestDevnet::start_with_account(OnchainLimit::defaults()).await.unwrap();
    let placed = dn.provider().get_code_at(ALLOWANCE_MODULE).await.unwrap();
    assert_eq!(executable_hash(&placed), ALLOWANCE_MODULE_EXECUTABLE_HASH);
}

/// The account's funds move only for an action the user allows: a swap that waits for the user funds nothing until
/// approved, one approval then runs it (fund and swap), and swaps repeated on one user amount fund nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_funded_before_the_user_approves_and_one_approval_runs_the_swap() {
    let (env, account) = account_env().await;
    async fn eth(env: &Env, account: Address) -> U256 {
        env.devnet.balance_of(NATIVE, account).await.unwrap()
    }
    let swap = json!({"from_register": "swap_quote", "network": "base"});
    let quote = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert!(quote.get("error").is_none(), "{quote}");
    // The turn running now was started by another agent: the swap waits for the user, and nothing left the account.
    env.ctx.extensions.insert(holdfast_core::confirm::TurnStarter::Other("agent 'mallory'".into()));
    let before = eth(&env, account).await;
    let err = env.err("web3_tx", swap.clone()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    assert_eq!(eth(&env, account).await, before, "no fund before the user's approval");
    // Funds of ether: the swaps' (a quote's price is funded in USDC).
    let native = holdfast_core::config::NATIVE_TOKEN_ADDRESS.to_checksum(None);
    let funds = |j: Vec<holdfast_web3::JournalEntry>| {
        j.into_iter().filter(|e| e.kind == EntryKind::Fund && e.asset == native).count()
    };
    assert_eq!(funds(env.web3.journal().for_session("kernel").await.unwrap()), 0);
    // Approved once: the fund and the swap run, with no second question.
    let id = err.details.unwrap()["confirmation_id"].as_str().unwrap().to_owned();
    env.decide(&id, holdfast_core::UserDecision::Approve).unwrap();
    let out = env.rerun(&id, "web3_tx", swap.clone()).await.unwrap();
    assert_eq!(out["status"], "confirmed", "{out}");
    assert_eq!(eth(&env, account).await, before - U256::from(FINNEY));
    assert_eq!(funds(env.web3.journal().for_session("kernel").await.unwrap()), 1);

    // The user's own turn again; a second quote on the same user amount: the amount already moved value once, so
    // this swap waits for the user and funds nothing.
    env.ctx.extensions.insert(holdfast_core::confirm::TurnStarter::User);
    let quote =
        env.call("x402_fetch", json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"})).await;
    assert!(quote.is_ok(), "{quote:?}");
    let before = eth(&env, account).await;
    let funded = funds(env.web3.journal().for_session("kernel").await.unwrap());
    let err = env.err("web3_tx", swap).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    assert_eq!(eth(&env, account).await, before);
    assert_eq!(funds(env.web3.journal().for_session("kernel").await.unwrap()), funded, "no second swap fund");
}

/// An account devnet whose quoter halves each quote's minimum (which the independent price then refuses, after the
/// fund): the env, the account and the quoter's tamper (to make it honest again).
async fn halved_minimum_quotes() -> (Env, Address, crate::common::Tamper) {
    let devnet = TestDevnet::start_with_account(OnchainLimit::defaults()).await.expect("devnet");
    halved_minimum_quotes_on(devnet, crate::common::Tweaks::default()).await
}

async fn halved_minimum_quotes_on(
    devnet: TestDevnet,
    tweaks: crate::common::Tweaks,
) -> (Env, Address, crate::common::Tamper) {
    let account = devnet.account.unwrap();
    let (url, tamper) = crate::common::hostile_quoter(&devnet).await;
    let env = Env::apply(devnet, crate::common::Tweaks { quoter_url: Some(url), ..tweaks });
    *tamper.lock() = Box::new(|q: &mut Value| {
        let min = crate::common::u256(&q["minBuyAmount"]) / U256::from(2);
        q["minBuyAmount"] = json!(min.to_string());
        crate::common::recalldata(q, |c| c.minBuyAmount = min);
    });
    (env, account, tamper)
}

/// Four 0.001 ETH swaps whose quotes the independent price refuses after their fund: the account funded once. The
/// account's ether before them.
async fn four_refused_swaps_funded_once(env: &Env, account: Address) -> U256 {
    let before = env.devnet.balance_of(NATIVE, account).await.unwrap();
    for attempt in 0..4 {
        let quote = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
        assert!(quote.get("error").is_none(), "{quote}");
        let err = env.err("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
        assert_eq!(err.code, ErrorCode::QuoteRejected, "attempt {attempt}: {err:?}");
    }
    assert_eq!(env.devnet.balance_of(NATIVE, account).await.unwrap(), before - U256::from(FINNEY), "funded once");
    before
}

/// Swaps that fail after their fund (a quote whose minimum the independent price refuses) fund once: the next ones,
/// and the honest swap after them, use what the signer already holds for the account. The key never keeps more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swaps_that_fail_after_their_fund_do_not_pile_the_accounts_ether_up_in_the_key() {
    let (env, account, tamper) = halved_minimum_quotes().await;
    let before = four_refused_swaps_funded_once(&env, account).await;
    *tamper.lock() = Box::new(|_: &mut Value| {});
    let quote = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert!(quote.get("error").is_none(), "{quote}");
    let out = env.ok("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert_eq!(out["status"], "confirmed", "{out}");
    assert_eq!(
        env.devnet.balance_of(NATIVE, account).await.unwrap(),
        before - U256::from(FINNEY),
        "the honest swap used the ether already funded"
    );
    let native = holdfast_core::config::NATIVE_TOKEN_ADDRESS.to_checksum(None);
    let kernel = env.web3.journal().for_session("kernel").await.unwrap();
    assert_eq!(kernel.iter().filter(|e| e.kind == EntryKind::Fund && e.asset == native).count(), 1, "{kernel:#?}");
}

/// As above, with the first of two nodes showing the signer's balance as zero: what the signer holds is the highest
/// balance a node shows, so the hiding node cannot have the account's ether moved into the key on every attempt
/// (before: funded four times, 0.004 ETH left with the key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_hides_the_keys_balance_does_not_get_the_account_funded_again() {
    let devnet = TestDevnet::start_with_account(OnchainLimit::defaults()).await.expect("devnet");
    let (proxy, signer) = (RpcProxy::start(&devnet.rpc_url).await, devnet.wallet_address);
    let both = format!("rpc_urls = [\"{}\", \"{}\"]", proxy.url, devnet.rpc_url);
    let tweaks = crate::common::Tweaks {
        toml_replace: vec![(format!("rpc_urls = [\"{}\"]", devnet.rpc_url), both)],
        ..Default::default()
    };
    let (env, account, _tamper) = halved_minimum_quotes_on(devnet, tweaks).await;
    let hidden = format!("{signer:#x}");
    proxy.set_rewrite(Some(Arc::new(move |req: &Value, resp: &mut Value| {
        if req["method"] == "eth_getBalance" && req["params"][0].as_str().map(str::to_lowercase) == Some(hidden.clone())
        {
            resp["result"] = json!("0x0");
        }
    })));
    four_refused_swaps_funded_once(&env, account).await;
}

/// Two ether swaps of two sessions at once: each is funded with its own share (the fund's lock is held until the
/// action is journaled), so neither spends the key's gas money on the account's behalf (before: the second reused the
/// first's fund, and the key's own ether paid for it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_ether_swaps_at_once_are_each_funded_from_the_account() {
    let (env, account) = account_env().await;
    let second = env.services.new_session("session-2");
    for ctx in [&env.ctx, &second] {
        let quote = env.quote_in(ctx, "swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
        assert!(quote.get("error").is_none(), "{quote}");
    }
    let before = env.devnet.balance_of(NATIVE, account).await.unwrap();
    let tx = || json!({"from_register": "swap_quote", "network": "base"});
    let (a, b) =
        tokio::join!(env.registry.call("web3_tx", tx(), &env.ctx), env.registry.call("web3_tx", tx(), &second));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!((a["status"].as_str(), b["status"].as_str()), (Some("confirmed"), Some("confirmed")), "{a} {b}");
    assert_eq!(
        env.devnet.balance_of(NATIVE, account).await.unwrap(),
        before - U256::from(2 * FINNEY),
        "both swaps' ether came from the account"
    );
    let native = holdfast_core::config::NATIVE_TOKEN_ADDRESS.to_checksum(None);
    let kernel = env.web3.journal().for_session("kernel").await.unwrap();
    let funds: Vec<_> = kernel.iter().filter(|e| e.kind == EntryKind::Fund && e.asset == native).collect();
    assert_eq!(funds.len(), 2, "{funds:#?}");
}

/// Two quotes of two sessions at once, each paid via x402 from the account: each payment is funded with its own share
/// (what earlier funds of the token left, the payments already journaled spent), so both are paid (before: the second
/// counted the first's fund as its own, and its authorization could not settle).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_payments_at_once_are_each_funded_from_the_account() {
    let (env, account) = account_env().await;
    let second = env.services.new_session("session-2");
    let before = usdc(&env, account).await;
    let (a, b) = tokio::join!(
        env.quote_in(&env.ctx, "swap 0.001 ETH for USDC", "ETH", "USDC", "0.001"),
        env.quote_in(&second, "swap 0.001 ETH for USDC", "ETH", "USDC", "0.001")
    );
    assert!(a.get("error").is_none() && b.get("error").is_none(), "{a} {b}");
    let kernel = env.web3.journal().for_session("kernel").await.unwrap();
    let funds: Vec<_> = kernel.iter().filter(|e| e.kind == EntryKind::Fund).collect();
    assert_eq!(funds.len(), 2, "{funds:#?}");
    let price = U256::from_str_radix(&funds[0].amount, 10).unwrap();
    assert_eq!(usdc(&env, account).await, before - price - price, "both prices left the account");
    assert_eq!(usdc(&env, env.devnet.wallet_address).await, U256::ZERO, "none stays with the signer");
}

/// A fund whose receipt did not come in time is left `pending`; a retry of the payment funds nothing beside it (before:
/// each retry moved the price out of the account again, and once the chain mined them the key held one price per
/// retry). Once it is mined, the payment uses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fund_not_yet_mined_is_not_funded_again_beside() {
    use alloy::providers::ext::AnvilApi as _;
    let (env, account) = account_env().await;
    let before = usdc(&env, account).await;
    let provider = env.devnet.provider();
    env.web3.set_receipt_timeout(std::time::Duration::from_millis(300));
    provider.anvil_set_auto_mine(false).await.unwrap();
    let first = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert!(first.get("error").is_some(), "the fund is not mined: {first}");
    let second = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert!(second["error"]["message"].as_str().unwrap_or_default().contains("not settled yet"), "{second}");
    provider.anvil_set_auto_mine(true).await.unwrap();
    provider.anvil_mine(Some(1), None).await.unwrap();
    let kernel = env.web3.journal().for_session("kernel").await.unwrap();
    let funds: Vec<_> = kernel.iter().filter(|e| e.kind == EntryKind::Fund).collect();
    assert_eq!(funds.len(), 1, "{funds:#?}");
    let price = U256::from_str_radix(&funds[0].amount, 10).unwrap();
    assert_eq!(usdc(&env, account).await, before - price, "one price left the account");
    env.web3.set_receipt_timeout(std::time::Duration::from_secs(60));
    env.web3.reconcile().await.unwrap();
    let third = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert!(third.get("error").is_none(), "{third}");
    assert_eq!(usdc(&env, account).await, before - price, "paid with what was funded");
    assert_eq!(usdc(&env, env.devnet.wallet_address).await, U256::ZERO);
}

/// Ether funded on an earlier day and not spent is used before any more is funded: a swap that failed after its fund
/// yesterday leaves its ether with the key, and today's swap uses it rather than moving the account's ether again.
/// The key's swaps of its own ether from before the account (before its first fund) do not count against the funds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ether_funded_on_an_earlier_day_is_used_before_funding_again() {
    let (env, account, _tamper) = halved_minimum_quotes().await;
    let before = env.devnet.balance_of(NATIVE, account).await.unwrap();
    let refused = || async {
        let quote = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
        assert!(quote.get("error").is_none(), "{quote}");
        let err = env.err("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
        assert_eq!(err.code, ErrorCode::QuoteRejected, "{err:?}");
    };
    // Before the account, the key swapped 0.01 ETH of its own (journaled as the signer's swap, a day earlier).
    let db = holdfast_store::SqliteDb::open(&env.devnet.dir.join("data/holdfast.db")).unwrap();
    db.lock()
        .execute_batch(&format!(
            "INSERT INTO journal (id, session_id, kind, network, chain_id, from_address, to_address, value, asset, \
             asset_symbol, amount, status, summary, created_at, updated_at, fingerprint, day) VALUES ('j_own', 's', \
             'swap', 'base', {}, '{}', '{}', '0', '{}', 'ETH', '10000000000000000', 'confirmed', '{{}}', \
             '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00', 'fp-own', '2026-01-01')",
            holdfast_devnet::CHAIN_ID,
            env.web3.wallet().address().to_checksum(None),
            holdfast_devnet::VENUE.to_checksum(None),
            holdfast_core::config::NATIVE_TOKEN_ADDRESS.to_checksum(None),
        ))
        .unwrap();
    refused().await;
    assert_eq!(env.devnet.balance_of(NATIVE, account).await.unwrap(), before - U256::from(FINNEY), "funded once");
    // A day passes: every journal entry so far was made yesterday.
    db.lock().execute_batch("UPDATE journal SET day = date(day, '-1 day')").unwrap();
    refused().await;
    // Before: funded again (today's funds were none), a second 0.001 ETH left with the key.
    assert_eq!(env.devnet.balance_of(NATIVE, account).await.unwrap(), before - U256::from(FINNEY), "not funded again");
    let native = holdfast_core::config::NATIVE_TOKEN_ADDRESS.to_checksum(None);
    let kernel = env.web3.journal().for_session("kernel").await.unwrap();
    assert_eq!(kernel.iter().filter(|e| e.kind == EntryKind::Fund && e.asset == native).count(), 1, "{kernel:#?}");
}

/// A funded swap asked about before its fund (another agent's turn) and again by its simulation (no independent
/// price for ETH) runs after the two approvals; the first approval does not loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_before_the_fund_and_one_from_the_simulation_take_two_approvals() {
    let devnet = TestDevnet::start_with_account(OnchainLimit::defaults()).await.expect("devnet");
    let account = devnet.account.unwrap();
    let tweaks = crate::common::Tweaks {
        toml_replace: vec![("feeds.ETH =".into(), "# feeds.ETH =".into())],
        ..Default::default()
    };
    let env = Env::apply(devnet, tweaks);
    let before = env.devnet.balance_of(NATIVE, account).await.unwrap();
    let quote = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert!(quote.get("error").is_none(), "{quote}");
    env.ctx.extensions.insert(holdfast_core::confirm::TurnStarter::Other("agent 'mallory'".into()));
    let swap = json!({"from_register": "swap_quote", "network": "base"});
    let mut reasons = Vec::new();
    let mut approved: Option<String> = None;
    for _ in 0..2 {
        // Each question's approval is used by that question's re-run (the runtime's `decide`).
        let err = match &approved {
            Some(id) => env.rerun(id, "web3_tx", swap.clone()).await.unwrap_err(),
            None => env.err("web3_tx", swap.clone()).await,
        };
        assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
        let details = err.details.unwrap();
        reasons.push(details["reason"].as_str().unwrap().to_owned());
        let id = details["confirmation_id"].as_str().unwrap().to_owned();
        env.decide(&id, holdfast_core::UserDecision::Approve).unwrap();
        approved = Some(id);
    }
    assert!(reasons[0].contains("agent 'mallory'"), "{reasons:?}");
    assert!(reasons[1].contains("no independent price"), "{reasons:?}");
    let out = env.rerun(&approved.unwrap(), "web3_tx", swap).await.unwrap();
    assert_eq!(out["status"], "confirmed", "{out}");
    assert_eq!(env.devnet.balance_of(NATIVE, account).await.unwrap(), before - U256::from(FINNEY));
}

/// A key that is one of the account's owners is not bound by its limits, and start-up refuses it. A first node that
/// leaves the key out of the owners it answers, or shows no account there at all, cannot pass that check while a
/// second node shows it.
#[tokio::test(flavor = "multi_thread")]
async fn a_node_that_hides_the_key_among_the_owners_does_not_pass_the_start_check() {
    use std::sync::Arc;
    let devnet = TestDevnet::start_with_account(OnchainLimit::defaults()).await.expect("devnet");
    let account = devnet.account.expect("an account");
    let owner = devnet.dev_account();
    holdfast_devnet::account::add_owner(&devnet.provider(), account, owner, devnet.wallet_address).await.unwrap();
    let proxy = crate::common::rpc_proxy::RpcProxy::start(&devnet.rpc_url).await;
    let selector = format!("0x{}", alloy::primitives::hex::encode(&alloy::primitives::keccak256("getOwners()")[..4]));
    // Its answer to getOwners: the owner alone (an `address[]` of one).
    let alone = format!("0x{:064x}{:064x}{:0>64}", 32, 1, alloy::primitives::hex::encode(owner));
    let hide_account = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hiding = Arc::clone(&hide_account);
    let fail_module = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let failing = Arc::clone(&fail_module);
    let module_hex = format!("{:#x}", holdfast_devnet::account::ALLOWANCE_MODULE);
    let account_hex = format!("{account:#x}");
    proxy.set_rewrite(Some(Arc::new(move |req: &Value, resp: &mut Value| {
        let call = &req["params"][0];
        let data = call["input"].as_str().or_else(|| call["data"].as_str()).unwrap_or_default();
        if req["method"] == "eth_call" && data.starts_with(&selector) && resp["result"].is_string() {
            resp["result"] = json!(alone);
        }
        let at = req["params"][0].as_str().unwrap_or_default().to_lowercase();
        if hiding.load(std::sync::atomic::Ordering::SeqCst) && req["method"] == "eth_getCode" && at == account_hex {
            resp["result"] = json!("0x");
        }
        if failing.load(std::sync::atomic::Ordering::SeqCst) && req["method"] == "eth_getCode" && at == module_hex {
            let id = resp["id"].clone();
            *resp = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "header not found"}});
        }
    })));
    let both = format!("rpc_urls = [\"{}\", \"{}\"]", proxy.url, devnet.rpc_url);
    let tweaks = crate::common::Tweaks {
        toml_replace: vec![(format!("rpc_urls = [\"{}\"]", devnet.rpc_url), both)],
        ..Default::default()
    };
    let env = Env::apply(devnet, tweaks);
    // The lie works on its own: asked alone, the lying node hides the key.
    let mut first_only = env.web3.core().networks.iter().find(|n| n.name == "base").unwrap().clone();
    first_only.rpc_urls.truncate(1);
    let chain = holdfast_web3::chain::Chain::new(&first_only).unwrap();
    let signer = Some(env.web3.wallet().address());
    let seen = holdfast_web3::kernel::account::inspect(&chain, env.web3.account().unwrap(), signer, &[]).await.unwrap();
    assert_eq!(seen.signer, Some(SignerPower::Delegate), "the first node alone hides the key");
    // Before (the first node's word alone): started, with a key the limits do not bind.
    let err = env.web3.verify_account().await.unwrap_err();
    assert_eq!(err.code, ErrorCode::ConfigInvalid, "{err}");
    assert!(err.message.contains("is an owner of the account"), "{err}");
    // The same node now also shows no account at that address, so that the owners are never asked.
    hide_account.store(true, std::sync::atomic::Ordering::SeqCst);
    let chain = holdfast_web3::chain::Chain::new(&first_only).unwrap();
    let seen = holdfast_web3::kernel::account::inspect(&chain, env.web3.account().unwrap(), signer, &[]).await.unwrap();
    assert_eq!((seen.account_deployed, seen.signer), (false, None), "the first node alone hides the account");
    let err = env.web3.verify_account().await.unwrap_err();
    assert!(err.message.contains("is an owner of the account"), "{err}");
    // And it errs when asked for the module's code, so that the check stops before the owners are asked: before, the
    // start went on with a warning ("could not be checked").
    fail_module.store(true, std::sync::atomic::Ordering::SeqCst);
    let err = env.web3.verify_account().await.unwrap_err();
    assert_eq!(err.code, ErrorCode::ConfigInvalid, "{err}");
    assert!(err.message.contains("is an owner of the account"), "{err}");
}

/// A key that owns a Safe which owns the account owns the account too (it can have that Safe sign): the limits do
/// not bind it, and start-up refuses it like a direct owner.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_that_owns_a_safe_owning_the_account_is_refused_at_start() {
    let devnet = TestDevnet::start_with_account(OnchainLimit::defaults()).await.expect("devnet");
    let (account, owner, provider, key) =
        (devnet.account.expect("an account"), devnet.dev_account(), devnet.provider(), devnet.wallet_address);
    let env = Env::apply(devnet, crate::common::Tweaks::default());
    env.web3.verify_account().await.expect("the key is only the module's delegate");
    // A Safe the key owns, made an owner of the account by its owner.
    let nested = holdfast_devnet::account::create_safe(&provider, owner, vec![key], 4242).await.unwrap();
    holdfast_devnet::account::add_owner(&provider, account, owner, nested).await.unwrap();
    // Before: started (only the account's own owners were read).
    let err = env.web3.verify_account().await.unwrap_err();
    assert_eq!(err.code, ErrorCode::ConfigInvalid, "{err}");
    assert!(err.message.contains("is an owner of the account"), "{err}");
}

/// A node that errs on the account's list of modules, beside one that lists none, leaves the check incomplete: the
/// start says the account could not be checked (before: passed, the erring node perhaps the one that would have
/// shown another module).
#[tokio::test(flavor = "multi_thread")]
async fn a_node_that_errs_on_the_modules_leaves_the_account_unchecked() {
    use std::sync::Arc;
    let devnet = TestDevnet::start_with_account(OnchainLimit::defaults()).await.expect("devnet");
    let proxy = crate::common::rpc_proxy::RpcProxy::start(&devnet.rpc_url).await;
    let selector = format!(
        "0x{}",
        alloy::primitives::hex::encode(&alloy::primitives::keccak256("getModulesPaginated(address,uint256)")[..4])
    );
    proxy.set_rewrite(Some(Arc::new(move |req: &Value, resp: &mut Value| {
        let call = &req["params"][0];
        let data = call["input"].as_str().or_else(|| call["data"].as_str()).unwrap_or_default();
        if req["method"] == "eth_call" && data.starts_with(&selector) {
            *resp = json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32603, "message": "internal error"}});
        }
    })));
    let both = format!("rpc_urls = [\"{}\", \"{}\"]", proxy.url, devnet.rpc_url);
    let tweaks = crate::common::Tweaks {
        toml_replace: vec![(format!("rpc_urls = [\"{}\"]", devnet.rpc_url), both)],
        ..Default::default()
    };
    let env = Env::apply(devnet, tweaks);
    let err = env.web3.verify_account().await.unwrap_err();
    assert_ne!(err.code, ErrorCode::ConfigInvalid, "nothing shown against the key: {err}");
    assert!(err.message.contains("internal error"), "{err}");
}

/// A key that is an enabled module of a Safe which owns the account has that Safe act for it, with no signature of
/// its owners: the limits do not bind it, and start-up refuses it. The Safe's owner is another key.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_that_is_a_module_of_a_safe_owning_the_account_is_refused_at_start() {
    let devnet = TestDevnet::start_with_account(OnchainLimit::defaults()).await.expect("devnet");
    let (account, owner, provider, key) =
        (devnet.account.expect("an account"), devnet.dev_account(), devnet.provider(), devnet.wallet_address);
    let env = Env::apply(devnet, crate::common::Tweaks::default());
    let nested = holdfast_devnet::account::create_safe(&provider, owner, vec![owner], 4243).await.unwrap();
    holdfast_devnet::account::add_owner(&provider, account, owner, nested).await.unwrap();
    env.web3.verify_account().await.expect("the key is no owner and no module of the nested Safe yet");
    holdfast_devnet::account::enable_module(&provider, nested, owner, key).await.unwrap();
    // Before: started (only owners were looked for, never modules).
    let err = env.web3.verify_account().await.unwrap_err();
    assert_eq!(err.code, ErrorCode::ConfigInvalid, "{err}");
    assert!(err.message.contains("is an enabled module of the account"), "{err}");
    let base = env.web3.core().networks.iter().find(|n| n.name == "base").unwrap().clone();
    let chain = holdfast_web3::chain::Chain::new(&base).unwrap();
    let seen = holdfast_web3::kernel::account::inspect(&chain, env.web3.account().unwrap(), Some(key), &[]).await;
    assert_eq!(seen.unwrap().signer, Some(SignerPower::Module));
}
