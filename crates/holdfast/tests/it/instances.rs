//! Several instances on one PostgreSQL database: two `holdfast serve` processes (separate data dirs, the same
//! wallet, `HOLDFAST_DATABASE_URL` naming one database) on one devnet. Sessions are created and quoted on one and
//! swapped on the other; concurrent swaps at both add up to more than the day's cap. Judged on chain and in the
//! database: the wallet's mined transactions and the journal's live amounts stay within the cap, no nonce is used
//! twice, and every transaction event reaches the WebSocket clients of both instances.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::serve::{Api, Devnet, Serve, quote};
use futures::StreamExt;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// 8 swaps of 0.0001 ETH against a day's cap of 0.00035 ETH: 3 fit.
const SWAPS: usize = 8;
const FIT: usize = 3;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn ws(api: &Api, session: &str) -> Ws {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = format!("{}/ws?session={session}", api.url.replace("http", "ws")).into_client_request().unwrap();
    request.headers_mut().insert("authorization", format!("Bearer {}", api.token).parse().unwrap());
    let (ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    ws
}

/// Collects `tx.*` events of a socket until it has been quiet for `quiet`.
async fn tx_events(mut ws: Ws, quiet: Duration) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    while let Ok(Some(Ok(message))) = tokio::time::timeout(quiet, ws.next()).await {
        if let Message::Text(text) = message {
            let v: Value = serde_json::from_str(&text).unwrap();
            let event = v["event"].as_str().unwrap_or_default();
            if event.starts_with("tx.") {
                seen.push((event.to_owned(), v["data"]["hash"].as_str().unwrap_or_default().to_owned()));
            }
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_database_keep_the_cap_the_nonces_and_the_events() {
    let Some(db) = holdfast_testkit::postgres::fresh_database().await else { return };
    let root = tempfile::tempdir().unwrap();
    let dev = Devnet::up(&root.path().join("devnet"));
    let config = dev.config_through(&root.path().join("config"), &dev.anvil, &dev.quoter);
    let toml =
        std::fs::read_to_string(&config).unwrap().replace("native_per_day = \"5\"", "native_per_day = \"0.00035\"");
    std::fs::write(&config, toml).unwrap();
    let env = [("HOLDFAST_DATABASE_URL", db.expose())];
    let a = Serve::start_with(&root.path().join("a"), Some(&config), &env).await;
    let b = Serve::start_with(&root.path().join("b"), Some(&config), &env).await;
    let wallet = a.get("/api/info").await["wallet_address"].as_str().unwrap().to_owned();
    assert_eq!(b.get("/api/info").await["wallet_address"], wallet.as_str());
    let nonce_before = dev.nonce(&wallet).await;

    // Each session is opened and quoted on one instance and swapped on the other; both watch it.
    let mut sessions = Vec::new();
    for i in 0..SWAPS {
        let (home, away) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let session = quote(home).await;
        let watchers = [ws(&a.api, &session).await, ws(&b.api, &session).await];
        sessions.push((session, away.api.clone(), watchers));
    }
    let tx = json!({"from_register": "swap_quote", "network": "base"});
    let calls: Vec<_> = sessions
        .iter()
        .map(|(session, api, _)| {
            let (api, tx, path) = (api.clone(), tx.clone(), format!("/api/sessions/{session}/tools/web3_tx"));
            tokio::spawn(async move { api.post(&path, tx).await })
        })
        .collect();
    let mut sent = Vec::new();
    let mut refused = Vec::new();
    for call in calls {
        match call.await.unwrap() {
            Ok(out) => sent.push(out["output"].clone()),
            Err(e) => refused.push(e),
        }
    }
    for e in &refused {
        assert_eq!(e["error"]["code"], "policy_denied", "a swap over the cap is refused as such: {e}");
    }
    assert_eq!(sent.len(), FIT, "exactly the swaps that fit the day's cap were sent: {sent:?} / refused {refused:?}");

    // On chain: one transaction per swap sent, each with its own nonce (a reused nonce would have left one unmined).
    let mined = dev.nonce(&wallet).await - nonce_before;
    assert_eq!(mined, FIT as u64, "mined transactions of the wallet");
    // In the database, seen from either instance: live swap amounts within the cap, distinct nonces.
    let journal = b.get("/api/journal?kind=swap").await;
    let swaps: Vec<&Value> = journal["journal"].as_array().unwrap().iter().collect();
    let live: Vec<&&Value> = swaps.iter().filter(|e| e["status"] == "confirmed").collect();
    assert_eq!(live.len(), FIT, "{journal}");
    let hashes: BTreeSet<&str> = live.iter().map(|e| e["tx_hash"].as_str().unwrap()).collect();
    assert_eq!(hashes.len(), FIT);
    let mut nonces = BTreeSet::new();
    for hash in &hashes {
        let tx = dev.rpc("eth_getTransactionByHash", json!([hash])).await;
        assert!(nonces.insert(tx["nonce"].as_str().unwrap().to_owned()), "nonce used twice: {tx}");
    }
    let spent: u128 = live.iter().map(|e| e["amount"].as_str().unwrap().parse::<u128>().unwrap()).sum();
    assert!(spent <= 350_000_000_000_000, "live swap amounts {spent} wei exceed the cap");

    // Every transaction event of a session reached both instances' clients, whichever instance sent it.
    let mut by_hash: HashMap<String, [usize; 2]> = HashMap::new();
    for (_, _, watchers) in sessions {
        for (side, socket) in watchers.into_iter().enumerate() {
            for (event, hash) in tx_events(socket, Duration::from_secs(2)).await {
                if event == "tx.confirmed" {
                    by_hash.entry(hash).or_default()[side] += 1;
                }
            }
        }
    }
    for hash in &hashes {
        assert_eq!(by_hash.get(*hash), Some(&[1, 1]), "tx.confirmed of {hash} on a and on b: {by_hash:?}");
    }
    for instance in [&a, &b] {
        assert_eq!(instance.get("/api/info").await["relay_dropped_events"], 0, "nothing dropped by the relay");
    }
    println!(
        "instances: {SWAPS} concurrent swaps at two instances on one PostgreSQL, cap for {FIT}: {} sent, {} refused, \
         {mined} mined, {} distinct nonces, every tx.confirmed seen on both",
        sent.len(),
        refused.len(),
        nonces.len()
    );
}
