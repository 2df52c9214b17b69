//! The crash harness: the real `holdfast serve` binary, killed with SIGKILL (`kill -9`) at chosen and at random
//! points, then restarted on the same data dir. It judges by what is on disk and on chain, not by the process's own
//! answers:
//!
//! - memory writes through the HTTP API, killed at random moments over several rounds: every write the client got
//!   an answer for is present after the restart;
//! - register writes of many clients on one session (their saves pipelined into shared commits), killed at random
//!   moments over several rounds: every write a client got an answer for is in the session after the restart, and
//!   the restarted session takes writes again (no revision left wedged);
//! - a swap on the devnet killed at each stage (after its journal entry, after signing, right after the broadcast,
//!   before the receipt): at most one transaction is mined for the intent, never two; the journal and the API say
//!   what the chain says; calling again with the restored quote sends nothing new;
//! - an x402 payment killed with the paid request signed but unsent, and with it settled but the answer lost: paid
//!   at most once on chain, journaled once (so the day's budget counts it once).
//!
//! Each test prints its figures (`cargo test -p holdfast --test it crash:: -- --nocapture`); `scripts/test.sh` runs it
//! that way and docs/reliability.md quotes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::hold_proxy::{Hold, HoldProxy};
use crate::common::serve::{Devnet, Serve, quote};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A small deterministic generator (the seed is printed, so a failing round can be replayed).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn seed() -> u64 {
    std::env::var("HOLDFAST_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_acknowledged_memory_writes_survive_kill_9() {
    const TARGET: usize = 1000;
    const WRITERS: usize = 4;
    let seed = seed();
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let acked: Arc<parking_lot::Mutex<Vec<(String, String)>>> = Arc::default();
    let mut rounds = 0;
    let mut in_flight_at_kill = 0;
    while acked.lock().len() < TARGET || rounds < 3 {
        rounds += 1;
        let mut serve = Serve::start(&data, None).await;
        let session = serve.session().await;
        let before = acked.lock().len();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (api, session, acked) = (serve.api.clone(), session.clone(), Arc::clone(&acked));
                tokio::spawn(async move {
                    let mut attempted: usize = 0;
                    for i in 0.. {
                        let label = format!("crash_r{rounds}_w{w}_{i}");
                        let value = format!("value {i} of writer {w} in round {rounds}");
                        attempted += 1;
                        let params = json!({"label": label, "value": value, "description": null});
                        match api.tool(&session, "update_memory", params).await {
                            Ok(out) if out["success"] == true => acked.lock().push((label, value)),
                            Ok(out) => panic!("update_memory answered without success: {out}"),
                            Err(e) if e.get("transport").is_some() => return attempted,
                            Err(e) => panic!("update_memory failed: {e}"),
                        }
                    }
                    attempted
                })
            })
            .collect();
        // Kill at a random moment while the writers are busy, once this round has written at least a little.
        tokio::time::sleep(Duration::from_millis(20 + rng.next() % 400)).await;
        while acked.lock().len() < before + 10 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        serve.kill9().await;
        let mut attempted: usize = 0;
        for w in writers {
            attempted += w.await.unwrap();
        }
        in_flight_at_kill += attempted.saturating_sub(acked.lock().len() - before);
        if rounds > 40 {
            panic!("the harness could not reach {TARGET} acknowledged writes");
        }
    }
    let serve = Serve::start(&data, None).await;
    let blocks = serve.get("/api/memory").await;
    let present: std::collections::HashMap<String, String> = blocks["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["label"].as_str().unwrap().to_owned(), b["value"].as_str().unwrap_or_default().to_owned()))
        .collect();
    let acked = acked.lock().clone();
    let lost: Vec<&(String, String)> = acked.iter().filter(|(l, v)| present.get(l) != Some(v)).collect();
    println!(
        "crash: memory writes: {} acknowledged over {rounds} kill -9 rounds, {} present after restart, {} lost \
         ({} in flight at a kill; seed {seed})",
        acked.len(),
        acked.len() - lost.len(),
        lost.len(),
        in_flight_at_kill
    );
    assert!(lost.is_empty(), "acknowledged writes lost: {:?}", &lost[..lost.len().min(5)]);
    let mut serve = serve;
    serve.kill9().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_acknowledged_register_writes_on_one_session_survive_kill_9() {
    const TARGET: usize = 600;
    const WRITERS: u64 = 16;
    let seed = seed();
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // Each key's last acknowledged write, as (round, write number): what is found after the restart must be that
    // write or a later one of the same writer (one in flight at the kill may or may not have been saved).
    let acked: Arc<parking_lot::Mutex<HashMap<String, (u64, u64)>>> = Arc::default();
    let (mut rounds, mut acknowledged, mut attempted) = (0u64, 0usize, 0usize);
    let mut session: Option<String> = None;
    let mut lost = Vec::new();
    while acknowledged < TARGET || rounds < 12 {
        rounds += 1;
        let mut serve = Serve::start(&data, None).await;
        // One session for every round: restored from the file after each kill, and checked then.
        let session = match &session {
            Some(id) => {
                let acked = acked.lock().clone();
                lost.extend(lost_writes(&serve, id, &acked).await);
                String::clone(id)
            }
            None => session.insert(serve.session().await).clone(),
        };
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (api, session, acked) = (serve.api.clone(), session.clone(), Arc::clone(&acked));
                tokio::spawn(async move {
                    let (mut attempted, mut acknowledged) = (0, 0);
                    for i in 0.. {
                        // Each writer overwrites its own few keys.
                        let key = format!("w{w}_k{}", i % 5);
                        attempted += 1;
                        let value = format!("{rounds} {i}");
                        match api.tool(&session, "register_set", json!({"key": key, "value": value})).await {
                            Ok(_) => {
                                acknowledged += 1;
                                acked.lock().insert(key, (rounds, i));
                            }
                            Err(e) if e.get("transport").is_some() => break,
                            Err(e) => panic!("register_set failed (round {rounds}): {e}"),
                        }
                    }
                    (attempted, acknowledged)
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20 + rng.next() % 300)).await;
        serve.kill9().await;
        for w in writers {
            let (a, k) = w.await.unwrap();
            (attempted, acknowledged) = (attempted + a, acknowledged + k);
        }
        if rounds > 30 {
            panic!("the harness could not reach {TARGET} acknowledged writes");
        }
    }
    let serve = Serve::start(&data, None).await;
    let session = session.unwrap();
    let last = acked.lock().clone();
    lost.extend(lost_writes(&serve, &session, &last).await);
    // The restored session takes writes again: its revision is where the file says.
    let after = serve.tool(&session, "register_set", json!({"key": "after", "value": "v"})).await;
    println!(
        "crash: register writes on one session: {acknowledged} acknowledged of {attempted} over {rounds} kill -9 \
         rounds; after each restart every one of the {} keys checked for its last acknowledged write (or a later \
         one): {} lost; a write after the last restart: {} (seed {seed})",
        acked.lock().len(),
        lost.len(),
        if after.is_ok() { "saved" } else { "refused" },
    );
    assert!(lost.is_empty(), "acknowledged writes lost (key, acknowledged, found): {lost:?}");
    after.unwrap_or_else(|e| panic!("the restored session refused a write: {e}"));
    let mut serve = serve;
    serve.kill9().await;
}

/// The keys of `acked` whose last acknowledged write (round, number) the restarted server's session does not hold, nor
/// a later write of the same writer: (key, acknowledged, found).
async fn lost_writes(
    serve: &Serve,
    session: &str,
    acked: &HashMap<String, (u64, u64)>,
) -> Vec<(String, (u64, u64), Option<(u64, u64)>)> {
    let registers = serve.get(&format!("/api/sessions/{session}/registers")).await;
    let found = |key: &str| -> Option<(u64, u64)> {
        let value = registers["registers"][key]["value"].as_str()?;
        let (round, i) = value.split_once(' ')?;
        Some((round.parse().ok()?, i.parse().ok()?))
    };
    acked.iter().map(|(k, v)| (k.clone(), *v, found(k))).filter(|(_, v, f)| f.is_none_or(|f| f < *v)).collect()
}

/// Where a swap is killed: the request the RPC proxy holds.
#[derive(Debug, Clone, Copy)]
enum SwapStage {
    /// The exact simulation, under the wallet's lock: the last chain read before the day's cap is reserved and the
    /// transaction signed (the reservation, the signature and the journal's signed record follow without a chain
    /// read between them). Nothing is journaled yet.
    BeforeReservation,
    /// `eth_sendRawTransaction` held unsent: signed and journaled, not broadcast.
    AfterSigning,
    /// `eth_sendRawTransaction` forwarded, the node's answer held: broadcast, the answer lost.
    RightAfterBroadcast,
    /// The receipt request held: broadcast and accepted, no receipt yet.
    BeforeReceipt,
}

impl SwapStage {
    fn hold(self) -> Hold {
        let (needle, after_forwarding) = match self {
            Self::BeforeReservation => ("\"eth_simulateV1\"", false),
            Self::AfterSigning => ("\"eth_sendRawTransaction\"", false),
            Self::RightAfterBroadcast => ("\"eth_sendRawTransaction\"", true),
            Self::BeforeReceipt => ("\"eth_getTransactionReceipt\"", false),
        };
        Hold { needle: needle.into(), after_forwarding }
    }
}

async fn swap_killed_at(dev: &Devnet, root: &Path, stage: SwapStage) -> String {
    let rpc = HoldProxy::start(&dev.anvil).await;
    let config = dev.config_through(&root.join(format!("{stage:?}")), &rpc.url, &dev.quoter);
    let data = root.join(format!("{stage:?}-data"));
    let serve = Serve::start(&data, Some(&config)).await;
    let wallet = serve.get("/api/info").await["wallet_address"].as_str().unwrap().to_owned();
    let session = quote(&serve).await;
    let before = dev.nonce(&wallet).await;

    rpc.arm(stage.hold());
    let tx = json!({"from_register": "swap_quote", "network": "base"});
    let url = format!("/api/sessions/{session}/tools/web3_tx");
    let call = {
        let (api, tx) = (serve.api.clone(), tx.clone());
        tokio::spawn(async move { api.post(&url, tx).await })
    };
    assert!(rpc.wait_held(Duration::from_secs(60)).await, "{stage:?}: the proxy never saw the request to hold");
    let mut serve = serve;
    serve.kill9().await;
    let answer = call.await.unwrap();
    assert!(answer.as_ref().is_err_and(|e| e.get("transport").is_some()), "{stage:?}: killed mid-call: {answer:?}");
    rpc.disarm();

    // Restart on the same data dir: start-up reconciliation runs before the server listens.
    let serve = Serve::start(&data, Some(&config)).await;
    let journal = serve.get(&format!("/api/journal?session_id={session}")).await;
    let swaps: Vec<&Value> = journal["journal"].as_array().unwrap().iter().filter(|e| e["kind"] == "swap").collect();
    let journaled = usize::from(!matches!(stage, SwapStage::BeforeReservation));
    assert_eq!(swaps.len(), journaled, "{stage:?}: {journaled} journal entry for the intent: {journal}");
    let after_restart = swaps.first().map_or("none", |e| e["status"].as_str().unwrap()).to_owned();

    // The model calls again with the restored quote register: nothing new is sent.
    let again = serve.post(&format!("/api/sessions/{session}/tools/web3_tx"), tx.clone()).await;
    let third = serve.post(&format!("/api/sessions/{session}/tools/web3_tx"), tx).await;
    let mined = dev.nonce(&wallet).await - before;
    let journal = serve.get(&format!("/api/journal?session_id={session}")).await;
    let entries: Vec<&Value> = journal["journal"].as_array().unwrap().iter().filter(|e| e["kind"] == "swap").collect();
    assert_eq!(entries.len(), 1, "{stage:?}: still one entry: {journal}");
    let entry = entries[0];
    let status = entry["status"].as_str().unwrap();
    assert!(mined <= 1, "{stage:?}: {mined} transactions mined for one intent");
    match stage {
        SwapStage::BeforeReservation => {
            // Nothing was reserved, signed or sent before the kill: the next call sends it, once, and the one after
            // it is answered from the journal.
            assert_eq!(mined, 1, "{stage:?}: the call after the restart sent it exactly once");
            assert_eq!(status, "confirmed", "{stage:?}: {entry}");
            let first = &again.as_ref().unwrap_or_else(|e| panic!("{stage:?}: {e}"))["output"];
            assert_eq!(first["hash"], entry["tx_hash"], "{stage:?}: {first}");
            let second = &third.as_ref().unwrap_or_else(|e| panic!("{stage:?}: {e}"))["output"];
            assert_eq!(second["hash"], entry["tx_hash"], "{stage:?}: the same transaction is returned: {second}");
            assert_eq!(second["summary"], Value::Null, "{stage:?}: answered from the journal");
        }
        _ => {
            assert_eq!(mined, 1, "{stage:?}: the signed transaction is mined exactly once");
            assert_eq!(status, "confirmed", "{stage:?}: {entry}");
            let receipt = dev.rpc("eth_getTransactionReceipt", json!([entry["tx_hash"]])).await;
            assert_eq!(receipt["status"], "0x1", "{stage:?}: the journal's hash is the mined transaction");
            for answer in [&again, &third] {
                let out = &answer.as_ref().unwrap_or_else(|e| panic!("{stage:?}: {e}"))["output"];
                assert_eq!(out["hash"], entry["tx_hash"], "{stage:?}: the same transaction is returned: {out}");
                assert_eq!(out["summary"], Value::Null, "{stage:?}: answered from the journal, nothing new decided");
            }
        }
    }
    let calls = if matches!(stage, SwapStage::BeforeReservation) {
        "the first of two more calls with the restored quote sent it, the second returned it"
    } else {
        "two more calls with the restored quote sent nothing new"
    };
    println!(
        "crash: swap killed {stage:?}: status after restart {after_restart}, finally {status}; transactions mined \
         for the intent: {mined}; {calls}"
    );
    let mut serve = serve;
    serve.kill9().await;
    status.to_owned()
}

/// An x402 payment for the swap quote killed with the paid request held by a proxy in front of the paywall: unsent
/// (`after_forwarding` false: signed, never settled) or settled with the answer lost (true).
async fn payment_killed(dev: &Devnet, root: &Path, after_forwarding: bool) {
    let name = if after_forwarding { "settled-answer-lost" } else { "signed-unsent" };
    let quoter = HoldProxy::start(&dev.quoter).await;
    quoter.rewrite_upstream_name();
    let config = dev.config_through(&root.join(name), &dev.anvil, &quoter.url);
    let data = root.join(format!("{name}-data"));
    let mut serve = Serve::start(&data, Some(&config)).await;
    let wallet = serve.get("/api/info").await["wallet_address"].as_str().unwrap().to_owned();
    let s = serve.session().await;
    serve
        .post(&format!("/api/sessions/{s}/messages"), json!({"content": "swap 0.0001 ETH for USDC on base"}))
        .await
        .unwrap();
    let usdc =
        serve.tool(&s, "token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "buy_token"})).await;
    let usdc = usdc.unwrap()["address"].as_str().unwrap().to_owned();
    for (tool, params) in [
        ("token_lookup", json!({"symbol": "ETH", "network": "base", "cache_as": "sell_token"})),
        ("to_raw_amount", json!({"amount": "0.0001", "token_register": "sell_token", "cache_as": "sell_amount"})),
    ] {
        serve.tool(&s, tool, params).await.unwrap_or_else(|e| panic!("{tool}: {e}"));
    }
    let before = dev.token_balance(&usdc, &wallet).await;
    quoter.arm(Hold { needle: "payment-signature:|x-payment:".into(), after_forwarding });
    let call = {
        let (api, s) = (serve.api.clone(), s.clone());
        let params = json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"});
        tokio::spawn(async move { api.tool(&s, "x402_fetch", params).await })
    };
    assert!(
        quoter.wait_held(Duration::from_secs(30)).await,
        "{name}: the paid request never reached the proxy; it saw {:?}; the call: {:?}",
        quoter.seen(),
        tokio::time::timeout(Duration::from_secs(1), call).await
    );
    serve.kill9().await;
    let answer = call.await.unwrap();
    assert!(answer.as_ref().is_err_and(|e| e.get("transport").is_some()), "{name}: {answer:?}");
    quoter.disarm();

    let mut serve = Serve::start(&data, Some(&config)).await;
    let journal = serve.get(&format!("/api/journal?session_id={s}")).await;
    let payments: Vec<&Value> =
        journal["journal"].as_array().unwrap().iter().filter(|e| e["kind"] == "payment").collect();
    assert_eq!(payments.len(), 1, "{name}: journaled once, so the day's budget counts it once: {journal}");
    let status = payments[0]["status"].as_str().unwrap().to_owned();
    let paid = before - dev.token_balance(&usdc, &wallet).await;
    if after_forwarding {
        assert_eq!(paid, 10_000, "{name}: settled once (0.01 USDC)");
        assert_eq!(status, "confirmed", "{name}: reconciled from the chain's authorization state at start-up");
    } else {
        assert_eq!(paid, 0, "{name}: never settled");
        assert_ne!(status, "confirmed", "{name}: the journal does not claim a payment the chain has not seen");
    }
    // The budget: the day's live and settled payments are this one only.
    let amount = payments[0]["amount"].as_str().unwrap().to_owned();
    println!(
        "crash: x402 payment killed {name}: paid on chain {paid} (raw USDC), journal entries 1 ({status}, amount {amount})"
    );
    serve.kill9().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_swaps_and_payments_killed_at_every_stage() {
    let tmp = tempfile::tempdir().unwrap();
    let dev = Devnet::up(&tmp.path().join("devnet"));
    for stage in [
        SwapStage::BeforeReservation,
        SwapStage::AfterSigning,
        SwapStage::RightAfterBroadcast,
        SwapStage::BeforeReceipt,
    ] {
        swap_killed_at(&dev, tmp.path(), stage).await;
    }
    payment_killed(&dev, tmp.path(), false).await;
    payment_killed(&dev, tmp.path(), true).await;
}
