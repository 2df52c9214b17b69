//! Configuration: the network table, the token table, register overrides, and the loader for `holdfast.toml`.
//!
//! Built-in defaults cover Base. A configuration file extends or overrides them; nothing falls back silently:
//! an unknown network is `unknown_network`, an unknown token `unknown_token`. A bad file fails at load with the
//! file, the line and the reason ([`ConfigError`]).

mod database_url;
mod networks;
mod section;
mod tokens;

pub use database_url::{DATABASE_URL_ENV, DatabaseUrl};
pub use networks::{
    LOCAL_CHAIN_IDS, NetworkConfig, NetworkSpec, NetworkTable, PinnedContracts, SwapAbi, is_local_chain_id,
};
pub use tokens::{NATIVE_TOKEN_ADDRESS, TokenInfo, TokenTable};

use crate::error::{ErrorCode, HasErrorCode, ToolError};
use crate::registers::RegisterDeclarations;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A configuration file could not be loaded. Every variant names the file; parse errors name the line.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML/RON, or a value has the wrong shape.
    #[error("{path}:{line}:{column}: {reason}")]
    Parse {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        reason: String,
    },
    /// The file parsed but its content is inconsistent (a bad address, an unknown network…).
    #[error("{path}: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

impl HasErrorCode for ConfigError {
    fn code(&self) -> ErrorCode {
        ErrorCode::ConfigInvalid
    }
}

impl From<ConfigError> for ToolError {
    fn from(e: ConfigError) -> Self {
        ToolError::new(ErrorCode::ConfigInvalid, e.to_string())
    }
}

/// 1-based line and column of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, col)
}

/// A parsed TOML configuration document. Each layer of holdfast reads its own section from it.
#[derive(Debug, Clone)]
pub struct ConfigDocument {
    path: Option<PathBuf>,
    text: String,
    table: toml::Table,
}

impl ConfigDocument {
    /// An empty document: every section takes its defaults.
    pub fn empty() -> Self {
        Self { path: None, text: String::new(), table: toml::Table::new() }
    }

    /// Reads and parses a file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Io { path: path.display().to_string(), source })?;
        Self::parse(Some(path.to_path_buf()), text)
    }

    /// Parses text (`path` is used for messages and relative paths only).
    pub fn parse(path: Option<PathBuf>, text: String) -> Result<Self, ConfigError> {
        let name = path.as_ref().map_or_else(|| "<config>".to_owned(), |p| p.display().to_string());
        let table: toml::Table = toml::from_str(&text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |s| line_col(&text, s.start));
            ConfigError::Parse { path: name, line, column, reason: e.message().to_owned() }
        })?;
        Ok(Self { path, text, table })
    }

    /// The file name for messages.
    pub fn name(&self) -> String {
        self.path.as_ref().map_or_else(|| "<config>".to_owned(), |p| p.display().to_string())
    }

    /// The folder relative paths in the file are resolved against.
    pub fn base_dir(&self) -> PathBuf {
        self.path.as_ref().and_then(|p| p.parent().map(Path::to_path_buf)).unwrap_or_else(|| PathBuf::from("."))
    }

    /// Resolves a path written in the file.
    pub fn resolve_path(&self, p: &Path) -> PathBuf {
        if p.is_absolute() { p.to_path_buf() } else { self.base_dir().join(p) }
    }

    /// Fails on a top-level key that no layer claims, naming its line (typos must not pass silently).
    pub fn check_sections(&self, known: &[&str]) -> Result<(), ConfigError> {
        match self.table.keys().find(|k| !known.contains(&k.as_str())) {
            Some(unknown) => Err(ConfigError::Parse {
                path: self.name(),
                line: self.line_of_key(unknown),
                column: 1,
                reason: format!("unknown section `{unknown}` (known: {})", known.join(", ")),
            }),
            None => Ok(()),
        }
    }

    /// Deserialises section `name`, or `None` when the file has no such section. An error names the key's full
    /// path (`networks.base.chain_id`) and the line and column of the offending value or key.
    pub fn section<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, ConfigError> {
        if !self.table.contains_key(name) {
            return Ok(None);
        }
        // Read from the text, not from `self.table`, so that the error keeps the span of what is wrong; the
        // document parsed once already, so only a value of the wrong shape can fail here.
        let parse_error = |e: toml::de::Error| {
            let (line, column) = e.span().map_or((self.line_of_key(name), 1), |s| line_col(&self.text, s.start));
            (line, column, e.message().to_owned())
        };
        let result = toml::de::Deserializer::parse(&self.text).map_err(parse_error).and_then(|de| {
            let mut track = serde_path_to_error::Track::new();
            let seed = section::Only::<T>::new(name);
            serde::de::DeserializeSeed::deserialize(seed, serde_path_to_error::Deserializer::new(de, &mut track))
                .map_err(|e| {
                    let (line, column, message) = parse_error(e);
                    (line, column, format!("`{}`: {message}", track.path()))
                })
        });
        result.map_err(|(line, column, reason)| ConfigError::Parse { path: self.name(), line, column, reason })
    }

    /// Deserialises section `name`, or its default.
    pub fn section_or_default<T: DeserializeOwned + Default>(&self, name: &str) -> Result<T, ConfigError> {
        Ok(self.section(name)?.unwrap_or_default())
    }

    /// An `Invalid` error for this file.
    pub fn invalid(&self, reason: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { path: self.name(), reason: reason.into() }
    }

    /// `e`, an error reading the file the key at `key_path` names, as an error of this file: a file that cannot be
    /// read is reported at that key's line (`holdfast.toml:9:8: `presets.file` names presets.ron: cannot read: …`);
    /// an error inside the named file already names that file, its line and key, and is kept.
    pub fn referenced(&self, key_path: &[&str], e: ConfigError) -> ConfigError {
        match e {
            ConfigError::Io { path, source } => {
                self.invalid_at(key_path, format!("`{}` names {path}: cannot read: {source}", key_path.join(".")))
            }
            other => other,
        }
    }

    /// An error about the value at `key_path` (`["policy", "base", "per_tx"]`), placed at its line: the deepest key
    /// of the path the file holds (the whole path when it is there). `reason` should name the key.
    pub fn invalid_at(&self, key_path: &[&str], reason: impl Into<String>) -> ConfigError {
        match self.line_of_path(key_path) {
            Some((line, column)) => ConfigError::Parse { path: self.name(), line, column, reason: reason.into() },
            None => self.invalid(reason),
        }
    }

    /// Line and column of the deepest key of `key_path` present in the file.
    fn line_of_path(&self, key_path: &[&str]) -> Option<(usize, usize)> {
        let doc = toml::de::DeTable::parse(&self.text).ok()?;
        let mut table = doc.get_ref();
        let mut found = None;
        for key in key_path {
            let Some((k, v)) = table.iter().find(|(k, _)| k.get_ref() == key) else { break };
            found = Some(k.span().start);
            match v.get_ref() {
                toml::de::DeValue::Table(inner) => table = inner,
                _ => break,
            }
        }
        found.map(|offset| line_col(&self.text, offset))
    }

    fn line_of_key(&self, key: &str) -> usize {
        let header = format!("[{key}");
        let assign = format!("{key} ");
        let assign_eq = format!("{key}=");
        self.text
            .lines()
            .position(|l| {
                let l = l.trim_start();
                l.starts_with(&header) || l.starts_with(&assign) || l.starts_with(&assign_eq)
            })
            .map_or(1, |i| i + 1)
    }
}

/// Per-register overrides in `[registers.KEY]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterOverride {
    /// New maximum age in seconds.
    pub max_age_secs: Option<u64>,
}

/// `[storage]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StorageSection {
    data_dir: Option<PathBuf>,
    url: Option<String>,
}

/// `[context_bank]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextBankSection {
    #[serde(default)]
    decimal_comma: bool,
}

/// The sections the core owns: `storage`, `networks`, `tokens`, `registers`, `context_bank`.
#[derive(Debug, Clone)]
pub struct CoreConfig {
    /// `[storage] data_dir`, resolved against the file's folder; `None` when the file does not set it.
    pub data_dir: Option<PathBuf>,
    /// `[storage] url`: the PostgreSQL database that sessions and the journal live in instead of the SQLite file in
    /// `data_dir` (`HOLDFAST_DATABASE_URL`, read by the layer that opens storage, takes precedence).
    pub database_url: Option<DatabaseUrl>,
    /// The network table (built-ins merged with the file's `[networks.*]`).
    pub networks: NetworkTable,
    /// The token table (built-in, or the RON file named by `tokens = "…"`).
    pub tokens: TokenTable,
    /// Declared registers with the file's overrides applied.
    pub registers: RegisterDeclarations,
    /// `[context_bank] decimal_comma`: the user writes `0,5` for one half (see
    /// [`crate::context_bank::ContextScanner::with_decimal_comma`]).
    pub decimal_comma: bool,
}

impl Default for CoreConfig {
    fn default() -> Self {
        Self {
            data_dir: None,
            database_url: None,
            networks: NetworkTable::builtin(),
            tokens: TokenTable::builtin(),
            registers: RegisterDeclarations::default(),
            decimal_comma: false,
        }
    }
}

/// The section names [`CoreConfig::from_document`] reads.
pub const CORE_SECTIONS: &[&str] = &["storage", "networks", "tokens", "registers", "context_bank"];

impl CoreConfig {
    /// Reads the core sections of `doc` over the built-in defaults and checks them against each other.
    pub fn from_document(doc: &ConfigDocument) -> Result<Self, ConfigError> {
        let mut networks = NetworkTable::builtin();
        let specs: indexmap::IndexMap<String, NetworkSpec> = doc.section_or_default("networks")?;
        for (name, spec) in specs {
            networks.merge(&name, spec).map_err(|(key, reason)| {
                let shown = if key.is_empty() { format!("networks.{name}") } else { format!("networks.{name}.{key}") };
                doc.invalid_at(&["networks", &name, key], format!("{shown}: {reason}"))
            })?;
        }
        let tokens = match doc.section::<PathBuf>("tokens")? {
            Some(path) => TokenTable::load(&doc.resolve_path(&path)).map_err(|e| doc.referenced(&["tokens"], e))?,
            None => TokenTable::builtin(),
        };
        for network in tokens.networks() {
            if networks.resolve(network).is_err() {
                return Err(doc.invalid(format!("the token table names network `{network}`, which is not configured")));
            }
        }
        let mut registers = RegisterDeclarations::default();
        let overrides: indexmap::IndexMap<String, RegisterOverride> = doc.section_or_default("registers")?;
        for (key, o) in overrides {
            crate::registers::validate_key(&format!("[registers.{key}]"), &key)
                .map_err(|e| doc.invalid_at(&["registers", &key], e.message))?;
            if let Some(secs) = o.max_age_secs {
                // Applied when a layer declares the key; a key no layer declares is reported then.
                registers.override_max_age(&key, Duration::from_secs(secs));
            }
        }
        let storage: StorageSection = doc.section_or_default("storage")?;
        let data_dir = storage.data_dir.map(|d| doc.resolve_path(&d));
        let database_url = storage
            .url
            .map(|u| {
                DatabaseUrl::parse(&u).map_err(|e| doc.invalid_at(&["storage", "url"], format!("storage.url: {e}")))
            })
            .transpose()?;
        let decimal_comma = doc.section_or_default::<ContextBankSection>("context_bank")?.decimal_comma;
        Ok(Self { data_dir, database_url, networks, tokens, registers, decimal_comma })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_name_file_line_and_reason() {
        let err = ConfigDocument::parse(Some("x.toml".into()), "a = 1\nb = = 2\n".into()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("x.toml:2:"), "{msg}");
    }

    #[test]
    fn section_errors_name_the_key_and_its_line() {
        let text = "\n[networks.base]\nrpc_urls = []\nchain_id = \"eight\"\n".to_owned();
        let doc = ConfigDocument::parse(Some("h.toml".into()), text).unwrap();
        let err = CoreConfig::from_document(&doc).unwrap_err().to_string();
        assert!(err.starts_with("h.toml:4:12: `networks.base.chain_id`: invalid type"), "{err}");
        let text = "[networks.base]\n\nexplorr = \"x\"\n".to_owned();
        let err = CoreConfig::from_document(&ConfigDocument::parse(Some("h.toml".into()), text).unwrap()).unwrap_err();
        assert!(err.to_string().starts_with("h.toml:3:1: `networks.base.explorr`: unknown field `explorr`"), "{err}");
    }

    #[test]
    fn semantic_errors_name_the_key_and_its_line() {
        let text = "[networks.base]\nchain_id = 8453\n\n  rpc_urls = [\"ftp://x\"]\n".to_owned();
        let err = CoreConfig::from_document(&ConfigDocument::parse(Some("h.toml".into()), text).unwrap()).unwrap_err();
        let err = err.to_string();
        assert!(err.starts_with("h.toml:4:3: networks.base.rpc_urls: "), "{err}");
        assert!(err.contains("must start with http"), "{err}");
    }

    #[test]
    fn unknown_sections_are_refused() {
        let doc = ConfigDocument::parse(None, "[netwrks.base]\nchain_id = 1\n".into()).unwrap();
        let err = doc.check_sections(CORE_SECTIONS).unwrap_err().to_string();
        assert!(err.contains("unknown section `netwrks`") && err.contains(":1:"), "{err}");
    }

    #[test]
    fn overrides_apply_and_undeclared_ones_are_kept_for_the_layers() {
        let doc = ConfigDocument::parse(None, "[registers.sell_amount]\nmax_age_secs = 5\n".into()).unwrap();
        let cfg = CoreConfig::from_document(&doc).unwrap();
        assert_eq!(cfg.registers.get("sell_amount").unwrap().max_age, Some(Duration::from_secs(5)));
        let doc = ConfigDocument::parse(None, "[registers.nope]\nmax_age_secs = 5\n".into()).unwrap();
        assert_eq!(CoreConfig::from_document(&doc).unwrap().registers.unclaimed_overrides(), ["nope"]);
        let doc = ConfigDocument::parse(None, "[registers.\"bad key\"]\nmax_age_secs = 5\n".into()).unwrap();
        assert!(CoreConfig::from_document(&doc).is_err());
    }

    #[test]
    fn a_decimal_comma_is_read_from_the_context_bank_section() {
        let doc = ConfigDocument::parse(None, "[context_bank]\ndecimal_comma = true\n".into()).unwrap();
        assert!(CoreConfig::from_document(&doc).unwrap().decimal_comma);
        assert!(!CoreConfig::from_document(&ConfigDocument::empty()).unwrap().decimal_comma);
        let doc = ConfigDocument::parse(Some("h.toml".into()), "[context_bank]\ndecimal = true\n".into()).unwrap();
        let err = CoreConfig::from_document(&doc).unwrap_err().to_string();
        assert!(err.starts_with("h.toml:2:1: `context_bank.decimal`: unknown field"), "{err}");
        let services = crate::CoreServices::new(CoreConfig { decimal_comma: true, ..CoreConfig::default() }).unwrap();
        let ctx = services.new_session("s");
        ctx.context_bank.scan_input("send 0,5 USDC");
        assert!(ctx.context_bank.has_amount("0.5", "USDC"));
    }

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }
}
