//! The binary end to end on its own devnet: `devnet up`, the golden swap transcripts through `replay`, `devnet down`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn holdfast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_holdfast")).args(args).current_dir(repo_root()).output().unwrap()
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn replay(config: &Path, transcript: &str) -> Vec<Value> {
    let out = holdfast(&["replay", "--config", config.to_str().unwrap(), transcript]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn pid_alive(pid: u64) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// One JSON-RPC call to the devnet's anvil with one parameter.
fn rpc(info: &Value, method: &str, param: Value) -> Value {
    rpc_params(info, method, serde_json::json!([param]))
}

/// One JSON-RPC call to the devnet's anvil (through `curl`-free std networking: a tiny HTTP/1.0 POST).
fn rpc_params(info: &Value, method: &str, params: Value) -> Value {
    use std::io::{Read, Write};
    let port = info["anvil"]["port"].as_u64().unwrap();
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
    write!(
        stream,
        "POST / HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let json = response.split("\r\n\r\n").nth(1).unwrap();
    serde_json::from_str::<Value>(json).unwrap()["result"].clone()
}

/// The wallet's address, as the golden swap's first tool call wrote it.
fn final_line_wallet(lines: &[Value]) -> Value {
    lines
        .iter()
        .find(|l| l["tool"] == "local_burner_wallet")
        .map(|l| l["output"]["address"].clone())
        .unwrap_or_default()
}

struct Down(PathBuf);
impl Drop for Down {
    fn drop(&mut self) {
        let _ = holdfast(&["devnet", "down", "--dir", self.0.to_str().unwrap()]);
    }
}

#[test]
fn devnet_up_replay_the_golden_swaps_and_down() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("devnet");
    let dir_s = dir.to_str().unwrap();
    let up = holdfast(&["devnet", "up", "--dir", dir_s]);
    let _down = Down(dir.clone());
    assert!(up.status.success(), "{}", String::from_utf8_lossy(&up.stderr));
    let summary = String::from_utf8_lossy(&up.stdout);
    assert!(summary.contains("Devnet up") && summary.contains("holdfast.toml"), "{summary}");
    let info: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("devnet.json")).unwrap()).unwrap();
    let pids = [info["anvil"]["pid"].as_u64().unwrap(), info["services"]["pid"].as_u64().unwrap()];
    assert!(pids.iter().all(|p| pid_alive(*p)));

    let again = holdfast(&["devnet", "up", "--dir", dir_s]);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("already up"));

    let config = dir.join("holdfast.toml");
    let eth = replay(&config, "examples/swap-eth-usdc.jsonl");
    let tx = &eth[eth.len() - 2];
    assert_eq!(tx["tool"], "web3_tx");
    assert_eq!(tx["output"]["status"], "confirmed", "{tx}");
    let quote = &eth[eth.len() - 3];
    assert_eq!(quote["tool"], "x402_fetch");
    assert_eq!(quote["output"]["payment"]["amount"], "0.01 USDC", "the quote was paid: {quote}");
    assert_eq!(quote["output"]["payment"]["status"], "confirmed", "{quote}");
    let final_line = eth.last().unwrap();
    let journal = final_line["journal"].as_array().unwrap();
    let kinds: Vec<&str> = journal.iter().map(|j| j["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["payment", "swap"], "{journal:?}");
    assert_eq!(journal[0]["status"], "confirmed");
    assert_eq!(journal[0]["amount"], "10000");
    assert_eq!(journal[0]["tx_hash"], quote["output"]["payment"]["transaction"], "the settlement transaction");
    assert_eq!(journal[1]["status"], "confirmed", "receipt status 1");
    assert_eq!(journal[1]["tx_hash"], tx["output"]["hash"]);
    for entry in journal {
        let receipt = rpc(&info, "eth_getTransactionReceipt", entry["tx_hash"].clone());
        assert_eq!(receipt["status"], "0x1", "{entry}");
    }
    assert_eq!(final_line["registers"]["sell_amount"]["origin"], "user");
    assert_eq!(journal.iter().filter(|j| j["kind"] == "swap").count(), 1, "the quote is spent once");
    assert!(final_line["registers"].get("swap_quote").is_none(), "the settled swap cleared its quote");

    // The golden transfer: the model types no address and no base-unit amount; the recipient is the user's own.
    let transfer = replay(&config, "examples/transfer-usdc.jsonl");
    let sent = &transfer[transfer.len() - 2];
    assert_eq!(sent["tool"], "transfer");
    assert_eq!(sent["output"]["status"], "confirmed", "{sent}");
    assert_eq!(sent["output"]["summary"]["recipient"], "0x90F79bf6EB2c4f870365E785982E1f101E93b906");
    assert_eq!(sent["output"]["summary"]["amount"], "5 USDC");
    let final_line = transfer.last().unwrap();
    assert_eq!(final_line["registers"]["recipient_address"]["origin"], "user");
    assert_eq!(final_line["registers"]["transfer_amount"]["origin"], "user");
    let journal = final_line["journal"].as_array().unwrap();
    assert_eq!(journal.iter().map(|j| j["kind"].as_str().unwrap()).collect::<Vec<_>>(), ["transfer"]);
    let receipt = rpc(&info, "eth_getTransactionReceipt", journal[0]["tx_hash"].clone());
    assert_eq!(receipt["status"], "0x1", "{receipt}");

    let usdc = replay(&config, "examples/swap-usdc-eth.jsonl");
    let kinds: Vec<String> = usdc
        .iter()
        .map(|l| {
            let code = l["error"]["code"].as_str().unwrap_or(if l["ok"] == true { "ok" } else { "" });
            format!("{}:{}", l["kind"].as_str().unwrap(), code)
        })
        .collect();
    assert_eq!(
        kinds[5..],
        [
            "tool:ok",
            "tool:allowance_required",
            "tool:confirmation_required",
            "confirm:ok",
            "tool:confirmation_required",
            "confirm:ok",
            "final:"
        ],
        "{usdc:#?}"
    );
    assert_eq!(usdc[10]["output"]["status"], "confirmed");
    let journal = usdc.last().unwrap()["journal"].as_array().unwrap().clone();
    assert_eq!(
        journal.iter().map(|j| j["kind"].as_str().unwrap()).collect::<Vec<_>>(),
        ["payment", "approval", "swap"]
    );

    // One user line, then four quote + web3_tx pairs with no amount written again: the user's 0.001 ETH moves once.
    let address = |a: Value| a.as_str().unwrap_or_default().to_owned();
    let wallet = address(final_line_wallet(&eth));
    let nonce = |info: &Value| {
        let count = rpc_params(info, "eth_getTransactionCount", serde_json::json!([wallet, "latest"]));
        u64::from_str_radix(count.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };
    // By default the funds sit in the devnet's smart account: judged by what leaves it.
    let account = info["wallet"]["account"].as_str().expect("the devnet's account by default").to_owned();
    let eth_of = |info: &Value, who: &str| {
        let hex = rpc_params(info, "eth_getBalance", serde_json::json!([who, "latest"]));
        u128::from_str_radix(hex.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };
    let (before, account_before) = (nonce(&info), eth_of(&info, &account));
    let golden = std::fs::read_to_string(repo_root().join("examples/swap-eth-usdc.jsonl")).unwrap();
    let lines: Vec<&str> = golden.lines().collect();
    let mut repeated = lines.clone();
    for _ in 0..3 {
        repeated.extend_from_slice(&lines[lines.len() - 2..]);
    }
    let path = tmp.path().join("four-swaps-one-request.jsonl");
    std::fs::write(&path, repeated.join("\n")).unwrap();
    let four = replay(&config, path.to_str().unwrap());
    let outcomes: Vec<String> = four
        .iter()
        .filter(|l| l["tool"] == "web3_tx")
        .map(|l| {
            l["error"]["code"]
                .as_str()
                .map_or_else(|| l["output"]["status"].as_str().unwrap_or("?").to_owned(), str::to_owned)
        })
        .collect();
    assert_eq!(outcomes, ["confirmed", "confirmation_required", "confirmation_required", "confirmation_required"]);
    // One swap was mined: exactly 0.001 ETH left the account. The signer sent it with its one fund, and four funds
    // of the quotes' prices (x402 payments sign no transaction, but their price moves from the account first).
    assert_eq!(account_before - eth_of(&info, &account), 1_000_000_000_000_000, "one swap's ETH: {outcomes:?}");
    assert_eq!(nonce(&info), before + 1 + 1 + 4, "{outcomes:?}");

    let down = holdfast(&["devnet", "down", "--dir", dir_s]);
    assert!(down.status.success(), "{}", String::from_utf8_lossy(&down.stderr));
    for _ in 0..50 {
        if pids.iter().all(|p| !pid_alive(*p)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(pids.iter().all(|p| !pid_alive(*p)), "down leaves nothing running");
    let key = std::fs::read_to_string(dir.join("wallet.key")).unwrap();
    for out in [&up.stdout, &up.stderr, &down.stdout] {
        assert_eq!(holdfast_testkit::find_secret(&String::from_utf8_lossy(out), key.trim()), None);
    }

    // Reset asks first: without a terminal to ask on it refuses, and nothing is deleted.
    let refused = holdfast(&["devnet", "reset", "--dir", dir_s]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("without asking") && said.contains("--yes"), "{said}");
    assert!(dir.join("wallet.key").is_file() && dir.join("chain-state.json").is_file());
    let reset = holdfast(&["devnet", "reset", "--dir", dir_s, "--yes"]);
    assert!(reset.status.success(), "{}", String::from_utf8_lossy(&reset.stderr));
    let said = String::from_utf8_lossy(&reset.stdout);
    assert!(said.contains("wallet.key") && said.contains("starts a new chain"), "{said}");
    assert!(!dir.join("wallet.key").exists() && !dir.join("chain-state.json").exists());
}
