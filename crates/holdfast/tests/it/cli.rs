//! The binary as users and scripts call it: `replay` and `tools list`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn holdfast(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(args)
        .current_dir(repo_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn the_register_half_of_the_swap_replays_with_provenance() {
    let out = holdfast(&["replay", "examples/swap-registers.jsonl"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = lines(&out);
    assert_eq!(lines.len(), 7);
    assert_eq!(lines[0]["kind"], "user");
    assert!(lines[1..6].iter().all(|l| l["ok"] == true), "{lines:#?}");
    let last = &lines[6];
    assert_eq!(last["kind"], "final");
    let regs = &last["registers"];
    assert_eq!(regs["sell_token"]["value"]["symbol"], "ETH");
    assert_eq!(regs["sell_token"]["origin"], "config");
    assert_eq!(regs["buy_token"]["value"]["address"], "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
    assert_eq!(regs["sell_amount"]["value"], "1000000000000000");
    assert_eq!(regs["sell_amount"]["origin"], "user", "the user wrote 0.001 ETH");
    assert_eq!(regs["sell_amount"]["source"], "to_raw_amount");
    assert!(regs["sell_amount"]["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(last["context_bank"][0], serde_json::json!({"value": "0.001", "item_type": "amount", "label": "ETH"}));
    assert!(last["journal"].is_array());
}

#[test]
fn refused_attempts_are_data_with_stable_codes() {
    let out = holdfast(&["replay", "examples/refused.jsonl"], None);
    assert!(out.status.success());
    let codes: Vec<String> = lines(&out)
        .iter()
        .filter(|l| l["kind"] == "tool")
        .map(|l| l["error"]["code"].as_str().unwrap_or("ok").to_owned())
        .collect();
    assert_eq!(
        codes,
        vec![
            "register_write_denied",
            "register_write_denied",
            "register_write_denied",
            "checksum_mismatch",
            "invalid_register_key",
            "unknown_network",
            "unknown_token",
            "ok",
            "invalid_amount",
            "ok",
            codes[10].as_str(), // web3_tx: unknown_tool without the web3 layer, invalid_params (`to`) with it
            "invalid_params",
        ]
    );
    assert!(["unknown_tool", "invalid_params"].contains(&codes[10].as_str()));
    let final_line = lines(&out).pop().unwrap();
    assert_eq!(final_line["registers"]["sell_amount"]["origin"], "model", "7 USDC was never written by the user");
    assert!(final_line["registers"].get("swap_quote").is_none());
    assert!(final_line["registers"].get("wallet_address").is_none_or(|w| w["origin"] == "intrinsic"));
}

#[test]
fn replay_reads_stdin_and_sleeps() {
    let transcript = "{\"user\": \"hi 0.5 WETH\"}\n{\"sleep_ms\": 5}\n{\"confirm\": \"last\"}\n";
    let out = holdfast(&["replay", "-"], Some(transcript));
    assert!(out.status.success());
    let lines = lines(&out);
    assert_eq!(lines[1]["slept_ms"], 5);
    assert_eq!(lines[2]["error"]["code"], "confirmation_not_found");
}

#[test]
fn a_malformed_transcript_fails_with_its_line_number_and_runs_nothing() {
    let out = holdfast(&["replay", "-"], Some("{\"user\": \"hi\"}\n{\"tool\": \"register_set\", \"params\": \n"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "nothing runs before the whole transcript parsed");
}

#[test]
fn a_bad_config_fails_with_file_and_line() {
    let dir = std::env::temp_dir().join(format!("holdfast-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("bad.toml");
    std::fs::write(&cfg, "[networks.base]\nchain_id = 8453\n\n[netwrks]\nx = 1\n").unwrap();
    let out = holdfast(&["replay", "--config", cfg.to_str().unwrap(), "examples/swap-registers.jsonl"], None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:4") && err.contains("netwrks"), "{err}");
}

#[test]
fn tools_list_json_has_every_tool_with_strict_schemas() {
    let out = holdfast(&["tools", "list", "--json"], None);
    assert!(out.status.success());
    let tools: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for expected in ["register_set", "register_get", "token_lookup", "to_raw_amount"] {
        assert!(names.contains(&expected), "{names:?}");
    }
    for t in &tools {
        assert_eq!(t["input_schema"]["type"], "object");
        assert_eq!(t["output_schema"]["type"], "object");
        assert!(t["description"].as_str().unwrap().len() > 20);
    }
}

#[test]
fn the_memory_and_tasks_transcript_replays_with_one_intended_refusal() {
    let out = holdfast(&["replay", "examples/memory-and-tasks.jsonl"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = lines(&out);
    let failures: Vec<&Value> = lines.iter().filter(|l| l["ok"] == false).collect();
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert_eq!(failures[0]["error"]["code"], "memory_no_match");
    assert!(
        failures[0]["error"]["message"].as_str().unwrap().contains("Lives in Paris."),
        "the current value is shown"
    );
    let tasks = lines
        .iter()
        .find(|l| l["tool"] == "track_task" && l["output"]["tasks"].as_array().is_some_and(|t| !t.is_empty()))
        .unwrap();
    assert_eq!(tasks["output"]["tasks"][0]["next_step"], "Download bank statements");
}

#[test]
fn docs_tools_md_lists_every_tool_as_registered() {
    let out = holdfast(&["tools", "list", "--markdown"], None);
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).unwrap();
    let path = repo_root().join("docs/tools.md");
    if std::env::var_os("HOLDFAST_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/tools.md is out of date: run `HOLDFAST_UPDATE_DOCS=1 cargo test -p holdfast --test it cli::docs_tools_md` and commit it"
    );
    for name in ["web3_tx", "update_memory", "send_message", "track_task", "use_skill", "register_set"] {
        assert!(generated.contains(&format!("\n## {name}\n")), "{name}");
    }
    // Enums show their values, not "string or string".
    assert!(!generated.contains("string or string"), "an enum rendered without its values");
    assert!(generated.contains("one of `text`, `hybrid`"), "search_memory's mode");
}

#[test]
fn params_that_are_not_an_object_are_the_calls_error_not_the_transcripts() {
    // A transcript recorded from a real model can carry any JSON value in `params`.
    let transcript = [
        r#"{"tool": "register_get", "params": null}"#,
        r#"{"tool": "register_get", "params": [1, 2]}"#,
        r#"{"tool": "register_get", "params": "key"}"#,
        r#"{"tool": "register_get"}"#,
        r#"{"tool": "register_set", "params": {"key": "note", "value": "still runs"}}"#,
    ]
    .join("\n");
    let out = holdfast(&["replay", "-"], Some(&transcript));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = lines(&out);
    for line in &lines[..4] {
        assert_eq!(
            (line["ok"].as_bool(), line["error"]["code"].as_str()),
            (Some(false), Some("invalid_params")),
            "{line}"
        );
    }
    assert_eq!(lines[4]["ok"], true, "the transcript goes on");
}

/// `holdfast doctor --config FILE` with no LLM key in the environment: (exit success, stdout).
async fn doctor(config: &std::path::Path) -> (bool, String) {
    let config = config.to_owned();
    tokio::task::spawn_blocking(move || {
        let out = Command::new(env!("CARGO_BIN_EXE_holdfast"))
            .args(["doctor", "--config", config.to_str().unwrap()])
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    })
    .await
    .unwrap()
}

fn row<'a>(out: &'a str, check: &str) -> &'a str {
    out.lines().find(|l| l.starts_with(&format!("{check} "))).unwrap_or_else(|| panic!("no `{check}` row:\n{out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_passes_on_a_devnet_config_and_names_the_key_and_line_of_a_broken_one() {
    let devnet = holdfast_devnet::TestDevnet::start().await.unwrap();
    let (ok, out) = doctor(&devnet.config_path).await;
    assert!(ok, "{out}");
    let chain = row(&out, "network base");
    assert!(
        chain.contains(&format!("chain id {} confirmed, eth_simulateV1 answers", holdfast_devnet::CHAIN_ID)),
        "{out}"
    );
    assert!(row(&out, "wallet").contains(&devnet.wallet_address.to_checksum(None)), "{out}");
    let policy = row(&out, "policy base");
    assert!(
        policy.contains("ETH: ≤ 1 per tx, ≤ 5 per day, without asking ≤ 0.01") && policy.contains("denied"),
        "{out}"
    );
    assert!(row(&out, "payments base").contains("USDC (≤ 0.05 per request, ≤ 5 per day)"), "{out}");
    assert!(row(&out, "preset swap_quote").contains("accepts connections"), "{out}");
    let feeds = row(&out, "price feeds base");
    assert!(feeds.contains("ETH (ETH / USD, 8 decimals)") && feeds.contains("one RPC node"), "{out}");
    assert!(row(&out, "allowances base").contains("none standing"), "{out}");
    // An allowance left standing is shown, with the token and the spender.
    let usdc = holdfast_devnet::USDC;
    devnet.approve_from_wallet(usdc, holdfast_devnet::VENUE, holdfast_core::U256::from(7_000_000u64)).await.unwrap();
    let (_, out) = doctor(&devnet.config_path).await;
    let standing = row(&out, "allowances base");
    assert!(standing.contains("7 USDC to 0x0000000000001fF3684f28c67538d4D072C22734"), "{out}");
    assert!(row(&out, "llm").contains("warn"), "no key is a warning, not a failure: {out}");
    let key = std::fs::read_to_string(&devnet.key_path).unwrap();
    assert!(!out.contains(key.trim().trim_start_matches("0x")), "the key never appears");

    // A value of the wrong type: the file, its line and the key's full path.
    let text = std::fs::read_to_string(&devnet.config_path).unwrap();
    let broken = text.replace("max_slippage_bps = 100", "max_slippage_bps = \"lots\"");
    let line = broken.lines().position(|l| l.contains("\"lots\"")).unwrap() + 1;
    let path = devnet.dir.join("broken.toml");
    std::fs::write(&path, &broken).unwrap();
    let (ok, out) = doctor(&path).await;
    assert!(!ok, "{out}");
    let config = row(&out, "config");
    assert!(config.contains(&format!("broken.toml:{line}:20: `policy.base.max_slippage_bps`: invalid type")), "{out}");

    // A node that serves another chain than the configured one fails its row.
    let mainnet = text.replace(&format!("chain_id = {}", holdfast_devnet::CHAIN_ID), "chain_id = 8453");
    std::fs::write(&path, &mainnet).unwrap();
    let (ok, out) = doctor(&path).await;
    assert!(!ok, "{out}");
    let chain = row(&out, "network base");
    assert!(
        chain.contains("FAIL")
            && chain.contains(&format!("serves chain id {}, not the configured 8453", holdfast_devnet::CHAIN_ID)),
        "{out}"
    );
}

/// Node URLs carry API keys in their paths (Alchemy, Infura): doctor shows scheme and host, in rows and errors.
#[tokio::test]
async fn doctor_never_prints_the_path_of_a_node_url() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("holdfast.toml");
    let port = holdfast_devnet::anvil::free_port().unwrap();
    let text = format!("[networks.base]\nrpc_urls = [\"http://user:pw@127.0.0.1:{port}/v2/SECRETKEY42?k=SECRETQ\"]\n");
    std::fs::write(&path, text).unwrap();
    let (ok, out) = doctor(&path).await;
    assert!(!ok, "nothing listens there: {out}");
    assert!(row(&out, "network base").contains(&format!("http://127.0.0.1:{port}/…")), "{out}");
    for secret in ["SECRETKEY42", "SECRETQ", "user:pw"] {
        assert!(!out.contains(secret), "{secret} in {out}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debug_log_shows_tool_calls_rpc_x402_and_the_journal_as_json_and_never_the_key() {
    let devnet = holdfast_devnet::TestDevnet::start().await.unwrap();
    let config = devnet.config_path.clone();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_holdfast"))
            .args([
                "--log-format",
                "json",
                "replay",
                "--config",
                config.to_str().unwrap(),
                "examples/swap-eth-usdc.jsonl",
            ])
            .current_dir(repo_root())
            .env("RUST_LOG", "debug")
            .env_remove("HOLDFAST_LOG")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let events: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON event ({e}): {l}")))
        .collect();
    let message = |e: &Value| e["fields"]["message"].as_str().unwrap_or_default().to_owned();
    let tool_calls: Vec<&Value> = events.iter().filter(|e| message(e) == "tool call ok").collect();
    assert!(tool_calls.iter().any(|e| e["fields"]["tool"] == "web3_tx"), "{stderr}");
    assert!(tool_calls.iter().all(|e| e["fields"]["elapsed_ms"].is_u64()));
    assert!(
        events.iter().any(|e| message(e) == "sending request" && e["fields"]["method"] == "eth_sendRawTransaction"),
        "the RPC calls are in the log: {stderr}"
    );
    assert!(!stderr.contains("ReqwestTransport"), "alloy's span with the node URL (API keys live there) stays off");
    assert!(events.iter().any(|e| message(e) == "x402: payment required"), "{stderr}");
    for status in ["reserved", "signed", "confirmed"] {
        assert!(
            events.iter().any(|e| message(e) == "journal transition" && e["fields"]["status"] == status),
            "journal {status}: {stderr}"
        );
    }
    let key = std::fs::read_to_string(&devnet.key_path).unwrap();
    assert!(
        !stderr.to_lowercase().contains(&key.trim().trim_start_matches("0x").to_lowercase()),
        "the key never appears"
    );
}

#[test]
fn the_shipped_base_sepolia_config_reads_and_is_not_mainnet() {
    let path = repo_root().join("config/base-sepolia.toml");
    let doc = holdfast_core::config::ConfigDocument::load(&path).unwrap();
    let checked = holdfast_agent::Runtime::check_document(&doc).unwrap();
    let net = checked.core.networks.resolve("base-sepolia").unwrap();
    assert_eq!(net.chain_id, 84532);
    assert!(checked.core.tokens.lookup("base-sepolia", "USDC").is_ok());
    assert!(checked.web3.policy.contains_key("base-sepolia") && !checked.web3.policy.contains_key("base"));
    assert_eq!(checked.core.data_dir, None, "no data dir inside the checkout");
    assert!(checked.web3.wallet.key_file.is_none(), "no key file inside the checkout");
}

/// With `[wallet] account`: doctor shows the account, its module (compared with the audited AllowanceModule's code)
/// and what remains of each on-chain limit; an account whose module is not enabled fails its row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_shows_the_account_its_module_and_what_remains_of_each_onchain_limit() {
    use holdfast_devnet::account::{ALLOWANCE_MODULE, OnchainLimit};
    let devnet = holdfast_devnet::TestDevnet::start_with_account(OnchainLimit::defaults()).await.unwrap();
    let account = devnet.account.unwrap();
    let (ok, out) = doctor(&devnet.config_path).await;
    assert!(ok, "{out}");
    let row_account = row(&out, "account base");
    assert!(
        row_account.contains(" ok ")
            && row_account.contains(&account.to_checksum(None))
            && row_account.contains("Safe's AllowanceModule 0.1.1")
            && row_account.contains("enabled"),
        "{out}"
    );
    let limits = row(&out, "on-chain limits base");
    assert!(limits.contains("0.05 ETH per day (0.05 left)") && limits.contains("100 USDC per day (100 left)"), "{out}");

    // The same config naming a module that is not enabled on the account (the plain USDC token): a failure.
    let text = std::fs::read_to_string(&devnet.config_path).unwrap();
    let wrong = text.replace(&ALLOWANCE_MODULE.to_checksum(None), &holdfast_devnet::USDC.to_checksum(None));
    assert_ne!(wrong, text, "the config names the module");
    let path = devnet.dir.join("wrong-module.toml");
    std::fs::write(&path, &wrong).unwrap();
    let (ok, out) = doctor(&path).await;
    assert!(!ok, "{out}");
    assert!(row(&out, "account base").contains("FAIL"), "{out}");
}

/// Without --config, doctor checks what `serve` without one runs — its devnet in the data dir — and names it; before
/// that devnet exists it says so and checks nothing else (no FAIL for Base mainnet).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_without_a_config_checks_what_serve_without_one_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let run = |data: std::path::PathBuf| {
        tokio::task::spawn_blocking(move || {
            let out = Command::new(env!("CARGO_BIN_EXE_holdfast"))
                .args(["doctor", "--data-dir", data.to_str().unwrap()])
                .env_remove("OPENAI_API_KEY")
                .env_remove("ANTHROPIC_API_KEY")
                .output()
                .unwrap();
            (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
        })
    };
    let (ok, out) = run(data.clone()).await.unwrap();
    assert!(ok, "{out}");
    assert!(row(&out, "config").contains("none is there yet"), "{out}");
    // The devnet serve would run, brought up where serve keeps it.
    let up = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["devnet", "up", "--dir", data.join("devnet").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(up.status.success(), "{}", String::from_utf8_lossy(&up.stderr));
    let (ok, out) = run(data.clone()).await.unwrap();
    let _ = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["devnet", "down", "--dir", data.join("devnet").to_str().unwrap()])
        .output();
    assert!(ok, "{out}");
    let config = row(&out, "config");
    assert!(config.contains("devnet/holdfast.toml") && config.contains("what `holdfast serve` runs"), "{out}");
    assert!(row(&out, "network base").contains(&holdfast_devnet::CHAIN_ID.to_string()), "{out}");
    assert!(row(&out, "account base").contains(" ok "), "{out}");

    // Stopped (as serve stops the devnet it started): a warning that says so, not a failure of every node check.
    let (ok, out) = run(data.clone()).await.unwrap();
    assert!(ok, "{out}");
    assert!(row(&out, "config").contains("every section reads"), "{out}");
    let devnet = row(&out, "devnet");
    assert!(devnet.contains(" warn ") && devnet.contains("not running"), "{out}");
    assert!(!out.contains("network base") && !out.contains("preset "), "no node or service to ask: {out}");
    for check in ["storage", "wallet", "policy", "llm"] {
        row(&out, check); // the checks that need no node still run
    }
}

/// A missing referenced file and an unset key variable are reported at the line and key of the config that names
/// them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_referenced_file_or_variable_that_is_missing_names_the_config_line_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("holdfast.toml");
    std::fs::write(&config, "tokens = \"nope.ron\"\n").unwrap();
    let (ok, out) = doctor(&config).await;
    assert!(
        !ok && row(&out, "config").contains("holdfast.toml:1:1: `tokens` names ")
            && row(&out, "config").contains("nope.ron: cannot read"),
        "{out}"
    );
    let data = tmp.path().join("data");
    let text = format!(
        "[storage]\ndata_dir = \"{}\"\n\n[wallet]\nkey_env = \"HOLDFAST_TEST_UNSET_KEY_31\"\n\n[presets]\nfile = \"missing.ron\"\n",
        data.display()
    );
    std::fs::write(&config, &text).unwrap();
    let (ok, out) = doctor(&config).await;
    assert!(!ok && row(&out, "config").contains("holdfast.toml:8:1: `presets.file` names "), "{out}");
    std::fs::write(&config, text.replace("[presets]\nfile = \"missing.ron\"\n", "")).unwrap();
    let (ok, out) = doctor(&config).await;
    assert!(!ok, "{out}");
    assert!(
        row(&out, "wallet")
            .contains("holdfast.toml:5:1: `wallet.key_env`: environment variable HOLDFAST_TEST_UNSET_KEY_31"),
        "{out}"
    );
}

/// The binary allocates with jemalloc and turns its background purging on (`src/cli/allocator.rs`): freed memory
/// (unloaded sessions) goes back to the system. Its threads are there while a command runs.
#[cfg(target_os = "linux")]
#[test]
fn the_binary_gives_freed_memory_back_through_the_allocators_background_thread() {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["mcp", "--transport", "stdio"])
        .env("HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let threads = |pid: u32| -> Vec<String> {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
        tasks.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok()).collect()
    };
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen = threads(child.id());
        if seen.iter().any(|name| name.trim() == "jemalloc_bg_thd") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(seen.iter().any(|name| name.trim() == "jemalloc_bg_thd"), "threads: {seen:?}");
}

/// `holdfast mcp --config FILE` on stdio with stdin closed (so it stops once it serves): (whether it got as far as
/// serving, stderr).
fn mcp_start(config: &std::path::Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["mcp", "--config", config.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (err.contains("serving MCP on stdio"), err)
}

/// A key that is one of the smart account's owners is not bound by its on-chain limits: the front ends do not start
/// with it (checked on the chain at start-up), where before only `holdfast doctor` said so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_that_owns_the_account_is_refused_at_start() {
    let devnet = holdfast_devnet::TestDevnet::start_with_account(holdfast_devnet::account::OnchainLimit::defaults())
        .await
        .unwrap();
    let config = devnet.config_path.clone();
    let (served, err) = tokio::task::spawn_blocking({
        let config = config.clone();
        move || mcp_start(&config)
    })
    .await
    .unwrap();
    assert!(served, "the key is only the module's delegate: {err}");
    // The owner makes the key an owner too.
    let account = devnet.account.unwrap();
    holdfast_devnet::account::add_owner(&devnet.provider(), account, devnet.dev_account(), devnet.wallet_address)
        .await
        .unwrap();
    let (served, err) = tokio::task::spawn_blocking({
        let config = config.clone();
        move || mcp_start(&config)
    })
    .await
    .unwrap();
    assert!(!served, "{err}");
    assert!(err.contains("is an owner of the account") && err.contains("config_invalid"), "{err}");
}

/// A module whose code is not the audited AllowanceModule's does not bind the key as holdfast assumes: the front ends
/// do not start on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_that_is_not_the_audited_allowance_module_is_refused_at_start() {
    let devnet = holdfast_devnet::TestDevnet::start_with_account(holdfast_devnet::account::OnchainLimit::defaults())
        .await
        .unwrap();
    // Other code at the module's address: the Safe singleton's.
    devnet
        .replace_code(holdfast_devnet::account::ALLOWANCE_MODULE, holdfast_devnet::account::SAFE_SINGLETON)
        .await
        .unwrap();
    let config = devnet.config_path.clone();
    let (served, err) = tokio::task::spawn_blocking(move || mcp_start(&config)).await.unwrap();
    assert!(!served, "{err}");
    assert!(err.contains("is not Safe's AllowanceModule") && err.contains("config_invalid"), "{err}");
}

/// `doctor` shows every on-chain limit the key has, also on an asset the configuration does not name (the key can
/// move it): the module's own list, by address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_shows_an_on_chain_limit_on_an_asset_the_configuration_does_not_name() {
    use holdfast_devnet::account::OnchainLimit;
    let devnet = holdfast_devnet::TestDevnet::start_with_account(OnchainLimit::defaults()).await.unwrap();
    let (ok, out) = doctor(&devnet.config_path).await;
    assert!(ok, "{out}");
    let limits = row(&out, "on-chain limits base");
    assert!(limits.contains("0.05 ETH per day") && limits.contains("100 USDC per day"), "{out}");
    assert!(!limits.contains("not in the configuration"), "{out}");
    // The owner gives the key a limit on another token too.
    let other = "0x000000000000000000000000000000000000bEEF";
    let limit = OnchainLimit { asset: other.into(), amount: "7000".into(), period_secs: 86_400 };
    let (provider, account) = (devnet.provider(), devnet.account.unwrap());
    holdfast_devnet::account::set_limit(&provider, account, devnet.dev_account(), devnet.wallet_address, &limit)
        .await
        .unwrap();
    let (_, out) = doctor(&devnet.config_path).await;
    // Before: only the configured assets' limits were shown.
    let limits = row(&out, "on-chain limits base");
    assert!(limits.contains(&format!("{other} (not in the configuration): 7000 base units per day")), "{out}");
    assert!(!out.contains("account modules base"), "only the AllowanceModule so far: {out}");
    // The owner enables another module: the limits do not bind what it lets the key do. Before, doctor warned and
    // every front end started; now both refuse until the configuration names the module as reviewed.
    let module: alloy_primitives::Address = "0x000000000000000000000000000000000000C0DE".parse().unwrap();
    holdfast_devnet::account::enable_module(&provider, account, devnet.dev_account(), module).await.unwrap();
    let (ok, out) = doctor(&devnet.config_path).await;
    assert!(!ok, "{out}");
    let refused = row(&out, "account base");
    assert!(refused.contains(&module.to_checksum(None)) && refused.contains("reviewed_modules"), "{out}");
    let config = devnet.config_path.clone();
    let (served, err) = tokio::task::spawn_blocking(move || mcp_start(&config)).await.unwrap();
    assert!(!served && err.contains("config_invalid") && err.contains("other modules are enabled"), "{err}");
    // Reviewed: named in the configuration, doctor shows it and passes, and the front ends start.
    let text = std::fs::read_to_string(&devnet.config_path).unwrap();
    let reviewed = format!("[wallet]\nreviewed_modules = [\"{}\"]\n", module.to_checksum(None));
    std::fs::write(&devnet.config_path, text.replacen("[wallet]\n", &reviewed, 1)).unwrap();
    let (ok, out) = doctor(&devnet.config_path).await;
    assert!(ok, "{out}");
    let modules = row(&out, "account modules base");
    assert!(modules.contains(&module.to_checksum(None)) && modules.contains("reviewed_modules"), "{out}");
    let config = devnet.config_path.clone();
    let (served, err) = tokio::task::spawn_blocking(move || mcp_start(&config)).await.unwrap();
    assert!(served, "{err}");
}

/// A key that is an enabled module of the account moves anything out of it, with no owner and no limit: the front
/// ends refuse it, as they refuse an owner key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_that_is_a_module_of_the_account_is_refused_at_start() {
    let devnet = holdfast_devnet::TestDevnet::start_with_account(holdfast_devnet::account::OnchainLimit::defaults())
        .await
        .unwrap();
    let (provider, account) = (devnet.provider(), devnet.account.unwrap());
    holdfast_devnet::account::enable_module(&provider, account, devnet.dev_account(), devnet.wallet_address)
        .await
        .unwrap();
    // Even with itself named as reviewed: the key's own power is never a reviewed module's.
    let text = std::fs::read_to_string(&devnet.config_path).unwrap();
    let reviewed = format!("[wallet]\nreviewed_modules = [\"{}\"]\n", devnet.wallet_address.to_checksum(None));
    std::fs::write(&devnet.config_path, text.replacen("[wallet]\n", &reviewed, 1)).unwrap();
    let config = devnet.config_path.clone();
    let (served, err) = tokio::task::spawn_blocking(move || mcp_start(&config)).await.unwrap();
    assert!(!served, "{err}");
    assert!(err.contains("config_invalid") && err.contains("is an enabled module of the account"), "{err}");
    let (ok, out) = doctor(&devnet.config_path).await;
    assert!(!ok && row(&out, "account base").contains("is an enabled module"), "{out}");
}
