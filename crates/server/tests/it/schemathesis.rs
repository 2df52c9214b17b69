//! schemathesis (PyPI) against a live server on the devnet, driven by the server's own OpenAPI document: every
//! operation with generated inputs, valid and invalid; no answer may be a 5xx, and every answer must be a
//! documented status with the documented content type and match its schema.
//!
//! `#[ignore]`: it needs the `st` program; `scripts/test.sh` installs schemathesis into a virtualenv in the cache
//! and runs this test with `HOLDFAST_SCHEMATHESIS` pointing at it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::Runtime;
use holdfast_agent::access::{AccessToken, HostPolicy};
use holdfast_server::AppState;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

const TOKEN: &str = "schemathesis-token-0123456789abcdef";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs schemathesis (`st`); scripts/test.sh installs it and runs this"]
async fn schemathesis_finds_no_server_error_and_no_answer_off_its_schema() {
    let st = std::env::var_os("HOLDFAST_SCHEMATHESIS").unwrap_or_else(|| "st".into());
    let devnet = holdfast_devnet::TestDevnet::start().await.unwrap();
    let runtime = Arc::new(Runtime::load(Some(&devnet.config_path)).await.unwrap());
    let state = AppState::with_agent(runtime, None, Some(AccessToken::from_secret(TOKEN).unwrap()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = holdfast_server::router(state, HostPolicy::loopback(addr));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let url = format!("http://{addr}");

    // The document as the server serves it (with the token, like every /api route).
    let doc = reqwest::Client::new()
        .get(format!("{url}/api/openapi.json"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap()
        .text()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("openapi.json");
    std::fs::write(&schema, doc).unwrap();

    let run = tokio::process::Command::new(&st)
        .arg("run")
        .arg(&schema)
        .args(["--url", &url, "--header", &format!("Authorization: Bearer {TOKEN}")])
        // Generated inputs both valid and invalid (`--mode all`): every answer is a documented status with the
        // documented content type and schema, never a 5xx.
        .args(["--mode", "all"])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
        ])
        .args(["--max-examples", "25", "--seed", "1", "--workers", "1", "--request-timeout", "30"])
        .env("SCHEMATHESIS_HOOKS", "")
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e} (pip install schemathesis)", st.to_string_lossy()));
    let out = tokio::time::timeout(Duration::from_secs(900), run.wait_with_output())
        .await
        .expect("schemathesis did not finish within 15 minutes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "schemathesis found problems:\n{stdout}");
    drop(devnet);
}
