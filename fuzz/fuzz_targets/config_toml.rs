//! The TOML configuration on arbitrary text: `ConfigDocument::parse`, `CoreConfig::from_document` and
//! `Web3Config::from_document` never panic, a parse error names a line of the file, and the context-bank scanner
//! built from whatever tables the file configures (aliases of any shape) scans the file's own text soundly.
//!
//! Built without the `web3` feature, the web3 sections are not read.
//!
//! The file sits in a folder of its own holding `tokens.ron` (the built-in table), so `tokens = "tokens.ron"`
//! loads; a file named by an absolute path or through `..` is not opened (fuzzing must not read `/dev/zero`).
#![no_main]

use holdfast_core::config::{CORE_SECTIONS, ConfigDocument, ConfigError, CoreConfig};
use holdfast_fuzz::Scanner;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

static DIR: LazyLock<PathBuf> = LazyLock::new(|| {
    let dir = std::env::temp_dir().join(format!("holdfast-fuzz-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp folder");
    std::fs::write(dir.join("tokens.ron"), include_str!("../../config/tokens.ron")).expect("tokens.ron");
    dir
});

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let lines = text.lines().count().max(1);
    let doc = match ConfigDocument::parse(Some(DIR.join("holdfast.toml")), text.clone()) {
        Ok(doc) => doc,
        Err(e) => {
            check_error(&e, lines);
            return;
        }
    };
    #[cfg(feature = "web3")]
    let known: Vec<&str> = CORE_SECTIONS.iter().chain(holdfast_web3::WEB3_SECTIONS).copied().collect();
    #[cfg(not(feature = "web3"))]
    let known = CORE_SECTIONS;
    if let Err(e) = doc.check_sections(&known) {
        check_error(&e, lines);
    }
    if names_outside(&doc) {
        return;
    }
    let core = match CoreConfig::from_document(&doc) {
        Ok(core) => core,
        Err(e) => {
            check_error(&e, lines);
            return;
        }
    };
    for network in core.networks.iter() {
        assert!(core.networks.resolve(&network.name).is_ok(), "{}", network.name);
    }
    #[cfg(feature = "web3")]
    match holdfast_web3::Web3Config::from_document(&doc, &core) {
        Ok(web3) => {
            for name in web3.policy.keys().chain(web3.payments.keys()).chain(web3.price_feeds.keys()) {
                assert!(core.networks.iter().any(|n| &n.name == name), "{name} is no canonical network name");
            }
        }
        Err(e) => check_error(&e, lines),
    }
    Scanner::new(core.tokens, core.networks).check(&text);
});

/// Whether the file names a file to read outside its own folder.
fn names_outside(doc: &ConfigDocument) -> bool {
    let outside = |v: Option<&Value>| {
        v.and_then(Value::as_str).is_some_and(|p| {
            let p = Path::new(p);
            p.is_absolute() || p.components().any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
        })
    };
    let tokens = doc.section::<Value>("tokens").ok().flatten();
    let presets = doc.section::<Value>("presets").ok().flatten();
    outside(tokens.as_ref()) || outside(presets.as_ref().and_then(|p| p.get("file")))
}

fn check_error(e: &ConfigError, lines: usize) {
    // Every error names its file, which is this one or one it names inside its folder.
    let message = e.to_string();
    assert!(message.starts_with(&DIR.display().to_string()), "{message}");
    if let ConfigError::Parse { line, column, path, .. } = e
        && path.ends_with("holdfast.toml")
    {
        assert!(*line >= 1 && *line <= lines + 1 && *column >= 1, "{message} ({lines} lines)");
    }
}
