//! `up` / `down` end to end through the library, with `holdfast-devnet-services` standing in for the holdfast
//! binary as the services process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use alloy::transports::http::reqwest;
use holdfast_devnet::{CHAIN_ID, DevnetState, UpOptions, down, up};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const SERVICES_EXE: &str = env!("CARGO_BIN_EXE_holdfast-devnet-services");

fn opts(dir: &Path, exe: &str, lines: &Arc<Mutex<Vec<String>>>) -> UpOptions {
    let sink = lines.clone();
    UpOptions {
        dir: dir.to_path_buf(),
        services_exe: PathBuf::from(exe),
        progress: Arc::new(move |line: &str| sink.lock().unwrap().push(line.to_owned())),
        chain_id: CHAIN_ID,
        allow_public_chain_id: false,
        account: None,
    }
}

fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().unwrap().split_whitespace().next() == Some("Z"),
    }
}

#[tokio::test]
async fn up_is_idempotent_down_leaves_nothing_and_the_key_stays_in_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("devnet");
    let lines = Arc::new(Mutex::new(Vec::new()));

    let info = up(opts(&dir, SERVICES_EXE, &lines)).await.unwrap();
    assert!(!info.already_up);
    assert_eq!(info.state, DevnetState::Up);
    assert_eq!(info.chain_id, CHAIN_ID);
    assert_ne!(info.chain_id, 8453, "the devnet signs nothing valid on Base mainnet");
    for f in ["devnet.json", "holdfast.toml", "presets.ron", "wallet.key", "anvil.log", "services.log"] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let mode = std::fs::metadata(dir.join("wallet.key")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let devnet_json: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("devnet.json")).unwrap()).unwrap();
    assert_eq!(devnet_json["state"], "up");
    assert_eq!(devnet_json["anvil"]["pid"], info.anvil.pid);
    assert_eq!(devnet_json["services"]["url"], info.services.url);
    assert_eq!(devnet_json["contracts"]["venue"], "0x0000000000001fF3684f28c67538d4D072C22734");
    assert_eq!(devnet_json["wallet"]["key_file"], "wallet.key");
    assert_eq!(devnet_json["config"], "holdfast.toml");

    // The detached services answer, and quote for the wallet.
    let health: Value = reqwest::get(format!("{}/health", info.services.url)).await.unwrap().json_text().await;
    assert_eq!(health["status"], "ok");
    // Asked over JSON-RPC, the node itself answers the devnet's own chain id.
    let rpc = alloy::providers::ProviderBuilder::new().connect_http(info.rpc_url.parse().unwrap());
    assert_eq!(alloy::providers::Provider::get_chain_id(&rpc).await.unwrap(), CHAIN_ID);
    let url = format!(
        "{}/swap/allowance-holder/quote?chainId={CHAIN_ID}&sellToken={}&buyToken={}&sellAmount=10000000000000000&taker={}",
        info.services.url,
        holdfast_devnet::NATIVE,
        holdfast_devnet::USDC,
        info.wallet.address
    );
    // Behind the x402 paywall: 402 unpaid, 200 paid, settled on chain by the services' facilitator.
    assert_eq!(crate::common::get_with(&url, None).await.status, 402);
    let signer = holdfast_devnet::wallet::load_key_file(&dir.join("wallet.key")).unwrap();
    let paid = crate::common::paid_get(&url, &signer).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    assert!(paid.settlement().unwrap()["transaction"].as_str().unwrap().starts_with("0x"));
    let quote = paid.body;
    assert_eq!(devnet_json["x402"]["price"], "10000");
    let supported: Value =
        reqwest::get(devnet_json["x402"]["facilitator_url"].as_str().unwrap().to_owned() + "/supported")
            .await
            .unwrap()
            .json_text()
            .await;
    assert_eq!(supported["kinds"][0]["network"], format!("eip155:{CHAIN_ID}"));
    assert_eq!(quote["buyAmount"], "29907018", "{quote}");

    // A second up does nothing.
    let again = up(opts(&dir, SERVICES_EXE, &lines)).await.unwrap();
    assert!(again.already_up);
    assert_eq!((again.anvil.pid, again.services.pid), (info.anvil.pid, info.services.pid));
    assert!(lines.lock().unwrap().last().unwrap().contains("already up"));

    // The key appears nowhere but its own file.
    let key = std::fs::read_to_string(dir.join("wallet.key")).unwrap();
    let key_hex = key.trim().trim_start_matches("0x").to_ascii_lowercase();
    assert_eq!(key_hex.len(), 64);
    let mut haystacks: Vec<(String, String)> =
        ["devnet.json", "holdfast.toml", "presets.ron", "anvil.log", "services.log"]
            .iter()
            .map(|f| ((*f).to_owned(), std::fs::read_to_string(dir.join(f)).unwrap()))
            .collect();
    haystacks.push(("progress".into(), lines.lock().unwrap().join("\n")));
    haystacks.push(("info".into(), format!("{info:?} {}", serde_json::to_string(&info).unwrap())));
    for (name, text) in &haystacks {
        assert!(!text.to_ascii_lowercase().contains(&key_hex), "the key leaked into {name}");
    }

    let report = down(&dir).await.unwrap();
    assert!(report.was_up, "{report:?}");
    assert!(report.message.contains("is down"), "{}", report.message);
    assert!(gone(info.anvil.pid), "anvil still running");
    assert!(gone(info.services.pid), "services still running");
    let after: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("devnet.json")).unwrap()).unwrap();
    assert_eq!(after["state"], "down");
    assert!(reqwest::get(format!("{}/health", info.services.url)).await.is_err());

    // Down again: nothing to do, still a success.
    let again = down(&dir).await.unwrap();
    assert!(!again.was_up);
    assert!(again.message.contains("already down"), "{}", again.message);
    let nowhere = down(&tmp.path().join("never-was")).await.unwrap();
    assert!(!nowhere.was_up && nowhere.message.contains("no devnet"), "{}", nowhere.message);
}

#[tokio::test]
async fn a_failed_up_kills_what_it_started() {
    let tmp = tempfile::tempdir().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    // A services "executable" that exits at once.
    let err = up(opts(tmp.path(), "/bin/false", &lines)).await.unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("services failed to start") && msg.contains("exited"), "{msg}");
    let progress = lines.lock().unwrap().join("\n");
    let pid: u32 = progress
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no anvil pid in progress: {progress}"));
    assert!(gone(pid), "anvil {pid} survived a failed up");
    assert!(!tmp.path().join("devnet.json").exists(), "devnet.json left behind");
    // And the folder is usable by down.
    assert!(!down(tmp.path()).await.unwrap().was_up);
}

/// `reqwest` here is alloy's re-export, built without its `json` feature; parse the text instead.
trait JsonText {
    async fn json_text(self) -> Value;
}

impl JsonText for reqwest::Response {
    async fn json_text(self) -> Value {
        let text = self.text().await.unwrap();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }
}
