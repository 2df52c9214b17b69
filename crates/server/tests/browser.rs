//! The web UI in real headless Chromium (Debian's `chromium`, driven by `playwright-core` from `devnet/node_modules`)
//! against a running server on the devnet: the swap done step by step in the browser, screenshots saved under
//! `target/ui-screenshots/`. The browser script is `tests/js/ui.mjs`; `scripts/test.sh` installs what it needs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::Runtime;
use holdfast_server::AppState;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

const TOKEN: &str = "f00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeed";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn chromium() -> PathBuf {
    std::env::var_os("HOLDFAST_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// Everything the browser test needs, or a message saying what is missing and how to get it. Missing tools fail the
/// test: it must never pass without having run.
fn prerequisites(root: &Path) -> Result<(), String> {
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        return Err(
            "`node` is not on PATH: the browser test needs Node.js (scripts/test.sh installs everything)".into()
        );
    }
    let chromium = chromium();
    if !chromium.exists() {
        return Err(format!(
            "Chromium is not installed at {}: run `apt-get install -y --no-install-recommends chromium` \
             (scripts/test.sh does this) or set HOLDFAST_CHROMIUM",
            chromium.display()
        ));
    }
    if !root.join("devnet/node_modules/playwright-core/package.json").exists() {
        return Err("playwright-core is missing from devnet/node_modules: run `npm ci --prefix devnet`".into());
    }
    Ok(())
}

fn screenshot_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), |d| root.join(PathBuf::from(d)))
        .join("ui-screenshots")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_swap_step_by_step_in_a_real_browser() {
    let root = repo_root();
    if let Err(missing) = prerequisites(&root) {
        panic!("browser test cannot run: {missing}");
    }
    let devnet = holdfast_devnet::TestDevnet::start().await.unwrap();
    let runtime = Arc::new(Runtime::load(Some(&devnet.config_path)).await.unwrap());
    let state = AppState::with_agent(runtime, None, Some(TOKEN.into()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, holdfast_server::router(state)).await.unwrap() });

    let out = screenshot_dir(&root);
    std::fs::create_dir_all(&out).unwrap();
    for entry in std::fs::read_dir(&out).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "png") {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }

    let script = root.join("crates/server/tests/js/ui.mjs");
    let child = tokio::process::Command::new("node")
        .arg(&script)
        .args(["--url", &url, "--token", TOKEN, "--out"])
        .arg(&out)
        .arg("--chromium")
        .arg(chromium())
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .env_remove("HOLDFAST_UI_FILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let output = tokio::time::timeout(Duration::from_secs(300), child.wait_with_output())
        .await
        .expect("the browser script did not finish within 5 minutes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(output.status.success(), "the browser test failed ({}):\n{stdout}\n{stderr}", output.status);

    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["ok"], true, "{stdout}");
    for name in [
        "01-context-bank.png",
        "02-registers-after-quote.png",
        "03-confirmation-dialog.png",
        "04-receipt.png",
        "05-journal.png",
    ] {
        let shot = out.join(name);
        let bytes = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(bytes > 10_000, "screenshot {} is missing or empty", shot.display());
    }
    drop(devnet);
}
