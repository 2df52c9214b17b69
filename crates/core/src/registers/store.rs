//! The register store: one per session, shared by clones.
//!
//! Every rule about registers is enforced here and nowhere else: key syntax, declared writers and origins, intrinsic
//! registers, value types and suffix rules, size limits, model taint, staleness, and which registers a value-moving
//! tool may consume.

use super::{
    Origin, Provenance, RegisterDecl, RegisterDeclarations, RegisterEntry, SharedEntry, ValueType, lookup_path,
    path::RegisterPath, validate_key,
};
use crate::error::{ErrorCode, ToolError};
use crate::event::{EventBus, EventPayload, RegisterUpdate};
use chrono::Utc;
use parking_lot::RwLock;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Resolves intrinsic registers (such as `wallet_address`) on first read.
pub trait IntrinsicProvider: Send + Sync + fmt::Debug {
    /// The value of `key`, or `None` when this provider does not know the key.
    fn resolve(&self, key: &str) -> Option<Result<Value, ToolError>>;
}

/// A write request: the value plus everything the store needs to decide whether to accept it.
#[derive(Debug, Clone)]
pub struct RegisterWrite {
    /// Target key.
    pub key: String,
    /// The value.
    pub value: Value,
    /// The origin the writer claims. The store lowers it to `model` when any source register is model-tainted.
    pub origin: Origin,
    /// The writing tool.
    pub tool: String,
    /// The preset the tool ran, if any.
    pub preset: Option<String>,
    /// Registers the value was derived from.
    pub derived_from: Vec<String>,
    /// The user's authorization a `user` value carries (kept only when the stored origin is `user`).
    pub authorization: Option<String>,
}

impl RegisterWrite {
    /// A write of `value` to `key` by `tool` with `origin`.
    pub fn new(key: impl Into<String>, value: Value, origin: Origin, tool: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value,
            origin,
            tool: tool.into(),
            preset: None,
            derived_from: Vec::new(),
            authorization: None,
        }
    }

    /// Records the user's authorization the value carries ([`crate::context_bank::ContextBank::authorization`]).
    pub fn authorized_by(mut self, authorization: Option<String>) -> Self {
        self.authorization = authorization;
        self
    }

    /// Records the preset the tool ran.
    pub fn preset(mut self, preset: impl Into<String>) -> Self {
        self.preset = Some(preset.into());
        self
    }

    /// Records the registers the value came from.
    pub fn derived_from<I, S>(mut self, keys: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.derived_from = keys.into_iter().map(Into::into).collect();
        self
    }
}

/// Size limits the store enforces.
#[derive(Debug, Clone, Copy)]
pub struct StoreLimits {
    /// Most registers one session may hold.
    pub max_registers: usize,
    /// Largest serialised value a `model`-origin write may carry.
    pub max_model_value_bytes: usize,
    /// Largest serialised value any write may carry.
    pub max_value_bytes: usize,
}

impl Default for StoreLimits {
    fn default() -> Self {
        Self { max_registers: 256, max_model_value_bytes: 4096, max_value_bytes: 1 << 20 }
    }
}

/// An ordered copy of every entry, cheap to take (entries are shared).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub struct RegisterSnapshot(pub BTreeMap<String, SharedEntry>);

struct Inner {
    entries: RwLock<HashMap<String, SharedEntry>>,
    decls: Arc<RegisterDeclarations>,
    intrinsics: RwLock<Option<Arc<dyn IntrinsicProvider>>>,
    events: EventBus,
    limits: StoreLimits,
    /// Counts the writes and removals of saved (non-intrinsic) registers.
    version: std::sync::atomic::AtomicU64,
    /// The keys written or removed since the session's last save: what its next save writes.
    dirty: parking_lot::Mutex<std::collections::HashSet<String>>,
}

/// The register store of one session. Clones share state.
///
/// Every write carries its provenance (origin, writing tool, preset, what it was derived from); the store checks
/// the value's type and the register's declared writers, and a value derived from a `model` value is itself `model`.
///
/// ```
/// use holdfast_core::config::CoreConfig;
/// use holdfast_core::{CoreServices, ErrorCode, Origin, RegisterWrite};
/// use serde_json::json;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let ctx = CoreServices::new(CoreConfig::default())?.new_session("doc");
/// let registers = &ctx.registers;
///
/// // A scratch `*_address` register holds an address, stored EIP-55 checksummed.
/// let typed = json!("0x90f79bf6eb2c4f870365e785982e1f101e93b906");
/// registers.set(RegisterWrite::new("payee_address", typed, Origin::User, "context_address"))?;
/// assert_eq!(registers.require("payee_address")?.value, "0x90F79bf6EB2c4f870365E785982E1f101E93b906");
///
/// // What is not an address is refused, whoever writes it.
/// let bad = RegisterWrite::new("other_address", json!("0x90f7"), Origin::User, "context_address");
/// assert_eq!(registers.set(bad).unwrap_err().code, ErrorCode::InvalidAddress);
///
/// // Taint: a value derived from a model value counts as the model's.
/// registers.set(RegisterWrite::new("guess_amount", json!("1000"), Origin::Model, "register_set"))?;
/// let derived = RegisterWrite::new("half_amount", json!("500"), Origin::Tool, "my_tool").derived_from(["guess_amount"]);
/// assert_eq!(registers.set(derived)?.origin(), Origin::Model);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RegisterStore {
    inner: Arc<Inner>,
}

impl fmt::Debug for RegisterStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisterStore").field("keys", &self.keys()).finish_non_exhaustive()
    }
}

impl RegisterStore {
    /// A store enforcing `decls`, publishing on `events`.
    pub fn new(decls: Arc<RegisterDeclarations>, events: EventBus) -> Self {
        Self::with_limits(decls, events, StoreLimits::default())
    }

    /// A store with explicit limits.
    pub fn with_limits(decls: Arc<RegisterDeclarations>, events: EventBus, limits: StoreLimits) -> Self {
        Self {
            inner: Arc::new(Inner {
                entries: RwLock::new(HashMap::new()),
                decls,
                intrinsics: RwLock::new(None),
                events,
                limits,
                version: std::sync::atomic::AtomicU64::new(0),
                dirty: parking_lot::Mutex::default(),
            }),
        }
    }

    /// Installs the provider that resolves intrinsic registers.
    pub fn set_intrinsic_provider(&self, provider: Arc<dyn IntrinsicProvider>) {
        *self.inner.intrinsics.write() = Some(provider);
    }

    /// The declarations this store enforces.
    pub fn declarations(&self) -> &RegisterDeclarations {
        &self.inner.decls
    }

    /// The declaration of `key`, if declared.
    pub fn declaration(&self, key: &str) -> Option<&Arc<RegisterDecl>> {
        self.inner.decls.get(key)
    }

    /// The event bus the store publishes on.
    pub fn events(&self) -> &EventBus {
        &self.inner.events
    }

    /// Whether `write` would be allowed by who writes it, before its value exists: the key's syntax, its writers,
    /// the origin it would have (tainted by what it derives from), room for a new register, and whether a value of
    /// type `holds` can be stored under the key's type. A tool whose value costs something to get (a paid fetch)
    /// asks first, so that nothing is paid for a write that would be refused; [`RegisterStore::set`] checks all of
    /// it again, with the value.
    ///
    /// ```
    /// use holdfast_core::config::CoreConfig;
    /// use holdfast_core::registers::{Origin, RegisterWrite, ValueType};
    /// use holdfast_core::{CoreServices, ErrorCode};
    /// use serde_json::Value;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let session = CoreServices::new(CoreConfig::default())?.new_session("doc");
    /// let regs = &session.registers;
    /// // An object can go to a scratch register, never to one whose name says it holds an address…
    /// regs.check_write(&RegisterWrite::new("price", Value::Null, Origin::Tool, "x402_fetch"), ValueType::Object)?;
    /// let err = regs
    ///     .check_write(&RegisterWrite::new("payee_address", Value::Null, Origin::Tool, "x402_fetch"), ValueType::Object)
    ///     .unwrap_err();
    /// assert_eq!(err.code, ErrorCode::RegisterWriteDenied);
    /// // …and nothing was written.
    /// assert!(regs.get("price").is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub fn check_write(&self, write: &RegisterWrite, holds: ValueType) -> Result<(), ToolError> {
        let (_, value_type) = self.check_writer(write)?;
        let key = &write.key;
        if !value_type.can_hold(holds) {
            return Err(ToolError::new(
                ErrorCode::RegisterWriteDenied,
                format!("`{key}` holds a {}; a {} cannot be stored there", value_type.as_str(), holds.as_str()),
            ));
        }
        let entries = self.inner.entries.read();
        if !entries.contains_key(key) && entries.len() >= self.inner.limits.max_registers {
            return Err(ToolError::new(
                ErrorCode::RegisterWriteDenied,
                format!("`{key}`: this session already holds {} registers", entries.len()),
            ));
        }
        Ok(())
    }

    /// The rules on who writes: the key's and sources' syntax, the declaration's writers and origins. Returns the
    /// origin the value gets (a value derived from a model value is model) and the key's type.
    fn check_writer(&self, write: &RegisterWrite) -> Result<(Origin, ValueType), ToolError> {
        let RegisterWrite { key, origin, tool, preset, derived_from, .. } = write;
        validate_key("key", key)?;
        for source in derived_from {
            validate_key("derived_from", source)?;
        }
        // Taint: a value derived from a model value is model.
        let tainted = derived_from.iter().any(|k| self.peek(k).is_some_and(|e| e.origin() == Origin::Model));
        let origin = if tainted { Origin::Model } else { *origin };
        let decl = self.inner.decls.get(key);
        if let Some(decl) = decl {
            decl.check_writer(tool, preset.as_deref(), origin)?;
        }
        Ok((origin, decl.map_or_else(|| ValueType::for_scratch_key(key), |d| d.value_type)))
    }

    /// Writes a register, enforcing every rule. Returns the stored entry.
    pub fn set(&self, write: RegisterWrite) -> Result<SharedEntry, ToolError> {
        let (origin, value_type) = self.check_writer(&write)?;
        let RegisterWrite { key, value, tool, preset, derived_from, authorization, .. } = write;
        let decl = self.inner.decls.get(&key);
        let value = value_type.check(&key, value)?;
        self.check_size(&key, &value, origin)?;
        match decl.and_then(|d| d.validator.as_ref()) {
            Some(validator) => validator.validate(&key, &value, self)?,
            // Fail closed: a quote register nobody validates holds nothing.
            None if value_type == ValueType::SwapQuote => {
                return Err(ToolError::new(
                    ErrorCode::RegisterWriteDenied,
                    format!("`{key}` holds swap quotes, but no quote validator is installed for it"),
                ));
            }
            None => {}
        }

        // Only a value that is still the user's carries their authorization.
        let authorization = authorization.filter(|_| origin == Origin::User);
        let entry = Arc::new(RegisterEntry {
            value,
            provenance: Provenance {
                origin,
                source: tool,
                preset,
                created_at: Utc::now(),
                derived_from,
                authorization,
            },
        });
        {
            let mut entries = self.inner.entries.write();
            if !entries.contains_key(&key) && entries.len() >= self.inner.limits.max_registers {
                return Err(ToolError::new(
                    ErrorCode::RegisterWriteDenied,
                    format!("`{key}`: this session already holds {} registers", entries.len()),
                ));
            }
            entries.insert(key.clone(), Arc::clone(&entry));
            self.inner.dirty.lock().insert(key.clone());
            self.inner.version.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        self.publish_set(&key, &entry);
        Ok(entry)
    }

    fn check_size(&self, key: &str, value: &Value, origin: Origin) -> Result<(), ToolError> {
        let limit = if origin == Origin::Model {
            self.inner.limits.max_model_value_bytes
        } else {
            self.inner.limits.max_value_bytes
        };
        let size = serde_json::to_vec(value).map_or(usize::MAX, |v| v.len());
        if size > limit {
            return Err(ToolError::new(
                ErrorCode::RegisterWriteDenied,
                format!("`{key}`: value is {size} bytes; the limit for {} values is {limit}", origin.as_str()),
            ));
        }
        Ok(())
    }

    fn publish_set(&self, key: &str, entry: &RegisterEntry) {
        let events = &self.inner.events;
        if !events.has_subscribers() {
            return;
        }
        events.publish(EventPayload::RegisterUpdate(RegisterUpdate::Set { key: key.to_owned(), entry: entry.clone() }));
    }

    /// Reads an entry without resolving intrinsics.
    pub(crate) fn peek(&self, key: &str) -> Option<SharedEntry> {
        self.inner.entries.read().get(key).cloned()
    }

    /// Reads an entry. Intrinsic registers are resolved (and cached) on first read. O(1) in the value's size.
    pub fn get(&self, key: &str) -> Option<SharedEntry> {
        if let Some(entry) = self.peek(key) {
            return Some(entry);
        }
        self.resolve_intrinsic(key).and_then(Result::ok)
    }

    fn resolve_intrinsic(&self, key: &str) -> Option<Result<SharedEntry, ToolError>> {
        let provider = self.inner.intrinsics.read().clone()?;
        let value = match provider.resolve(key)? {
            Ok(v) => v,
            Err(e) => return Some(Err(e)),
        };
        let value_type = self.inner.decls.get(key).map_or_else(|| ValueType::for_scratch_key(key), |d| d.value_type);
        let value = match value_type.check(key, value) {
            Ok(v) => v,
            Err(e) => return Some(Err(e)),
        };
        let entry = Arc::new(RegisterEntry {
            value,
            provenance: Provenance {
                origin: Origin::Intrinsic,
                source: "intrinsic".to_owned(),
                preset: None,
                created_at: Utc::now(),
                derived_from: Vec::new(),
                authorization: None,
            },
        });
        let stored = {
            let mut entries = self.inner.entries.write();
            Arc::clone(entries.entry(key.to_owned()).or_insert(entry))
        };
        self.publish_set(key, &stored);
        Some(Ok(stored))
    }

    /// Reads an entry or fails with `register_missing` (or the intrinsic provider's error).
    pub fn require(&self, key: &str) -> Result<SharedEntry, ToolError> {
        if let Some(entry) = self.peek(key) {
            return Ok(entry);
        }
        match self.resolve_intrinsic(key) {
            Some(result) => result,
            None => Err(ToolError::new(ErrorCode::RegisterMissing, format!("register `{key}` holds no value"))),
        }
    }

    /// Reads a register that must be fresh: older than its declared maximum age → `register_stale`.
    pub fn require_fresh(&self, key: &str) -> Result<SharedEntry, ToolError> {
        let entry = self.require(key)?;
        self.check_fresh(key, &entry)?;
        Ok(entry)
    }

    /// Fails with `register_stale` when `entry`, read earlier from register `key`, is now older than the key's declared
    /// maximum age (whatever the register holds now).
    pub fn check_fresh(&self, key: &str, entry: &RegisterEntry) -> Result<(), ToolError> {
        if let Some(max_age) = self.inner.decls.get(key).and_then(|d| d.max_age) {
            let age = entry.age();
            if age > max_age {
                return Err(ToolError::new(
                    ErrorCode::RegisterStale,
                    format!("register `{key}` is {:.1}s old; the limit is {}s", age.as_secs_f64(), max_age.as_secs()),
                ));
            }
        }
        Ok(())
    }

    /// Reads a register for a value-moving tool: it must be declared (scratch registers are never consumed), hold
    /// a value, and be fresh.
    pub fn require_declared(&self, field: &str, key: &str) -> Result<SharedEntry, ToolError> {
        validate_key(field, key)?;
        if self.inner.decls.get(key).is_none() {
            if self.peek(key).is_none() {
                // Nothing by that name at all: say so, rather than call a name the model made up a scratch register.
                self.require(key)?;
            }
            return Err(ToolError::new(
                ErrorCode::RegisterWriteDenied,
                format!("`{field}`: `{key}` is a scratch register; value-moving tools read only declared registers"),
            ));
        }
        self.require_fresh(key)
    }

    /// Reads a declared register of type `wanted` for a value-moving tool, fresh or not (the caller decides what
    /// age means): a scratch register, an undeclared key or a register declared with another type →
    /// `register_type_mismatch` before anything else is looked at.
    pub fn require_typed(&self, field: &str, key: &str, wanted: ValueType) -> Result<SharedEntry, ToolError> {
        validate_key(field, key)?;
        let declared = self.inner.decls.get(key).map(|d| d.value_type);
        if declared.is_none() && self.peek(key).is_none() {
            self.require(key)?;
        }
        if declared != Some(wanted) {
            let held = match declared {
                Some(t) => format!("is declared to hold a {}", t.as_str()),
                None => "is a scratch register".to_owned(),
            };
            return Err(ToolError::new(
                ErrorCode::RegisterTypeMismatch,
                format!("`{field}`: `{key}` {held}, not a {}", wanted.as_str()),
            ));
        }
        self.require(key)
    }

    /// Reads a value below a register: `swap_quote.transaction.to`, `route.fills.0.source`.
    pub fn get_path(&self, path: &str) -> Result<Value, ToolError> {
        let parsed = RegisterPath::parse("path", path)?;
        let entry = self.require(parsed.key)?;
        lookup_path(&entry.value, &parsed.segments).cloned().map_err(|failed_at| {
            let resolved = parsed.segments[..failed_at].join(".");
            let prefix = if resolved.is_empty() { parsed.key.to_owned() } else { format!("{}.{resolved}", parsed.key) };
            ToolError::new(
                ErrorCode::RegisterMissing,
                format!("`path`: {prefix} has no {:?}", parsed.segments[failed_at]),
            )
        })
    }

    /// True when any of `keys` holds a `model`-origin (or model-tainted) value — the input test of invariant 7.
    pub fn any_model_origin(&self, keys: &[&str]) -> bool {
        keys.iter().any(|k| self.peek(k).is_some_and(|e| e.origin() == Origin::Model))
    }

    /// True when `key` holds no value or its value is older than `max_age`.
    pub fn is_stale(&self, key: &str, max_age: Duration) -> bool {
        self.peek(key).is_none_or(|e| e.age() > max_age)
    }

    /// Removes a register, returning its last entry.
    pub fn remove(&self, key: &str) -> Option<SharedEntry> {
        let mut entries = self.inner.entries.write();
        let removed = entries.remove(key);
        if removed.is_some() {
            self.inner.dirty.lock().insert(key.to_owned());
            self.inner.version.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        drop(entries);
        if removed.is_some() {
            self.inner.events.publish(EventPayload::RegisterUpdate(RegisterUpdate::Remove {
                key: key.to_owned(),
                created_at: Utc::now(),
            }));
        }
        removed
    }

    /// The keys currently held, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.inner.entries.read().keys().cloned().collect();
        keys.sort_unstable();
        keys
    }

    /// Puts back entries an earlier process saved (see [`crate::session_state`]); they were checked when they were
    /// written. Entries with an invalid key, and those beyond the register limit, are dropped. Publishes nothing.
    pub(crate) fn restore(&self, saved: impl IntoIterator<Item = (String, RegisterEntry)>) {
        let mut entries = self.inner.entries.write();
        for (key, entry) in saved {
            if validate_key("key", &key).is_err() || entries.len() >= self.inner.limits.max_registers {
                tracing::warn!(key = %crate::text::preview(&key), "a saved register was not restored");
                continue;
            }
            entries.insert(key, Arc::new(entry));
        }
    }

    /// The keys written or removed since they were last taken: a save takes them and writes their entries (or their
    /// removal).
    pub(crate) fn take_dirty(&self) -> std::collections::HashSet<String> {
        std::mem::take(&mut *self.inner.dirty.lock())
    }

    /// Puts keys back for the next save (the one that took them failed).
    pub(crate) fn mark_dirty(&self, keys: impl IntoIterator<Item = String>) {
        self.inner.dirty.lock().extend(keys);
    }

    /// Every key held is to be written by the next save (a state loaded in the older whole-state form).
    pub(crate) fn mark_all_dirty(&self) {
        let keys: Vec<String> = self.inner.entries.read().keys().cloned().collect();
        self.mark_dirty(keys);
    }

    /// How many writes and removals this store has had: a different number means its saved form may have changed.
    pub(crate) fn version(&self) -> u64 {
        self.inner.version.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A consistent copy of every entry.
    pub fn snapshot(&self) -> RegisterSnapshot {
        let entries = self.inner.entries.read();
        RegisterSnapshot(entries.iter().map(|(k, v)| (k.clone(), Arc::clone(v))).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store() -> RegisterStore {
        RegisterStore::new(Arc::new(RegisterDeclarations::default()), EventBus::new("t"))
    }

    #[derive(Debug)]
    struct Wallet;
    impl IntrinsicProvider for Wallet {
        fn resolve(&self, key: &str) -> Option<Result<Value, ToolError>> {
            (key == "wallet_address").then(|| Ok(json!("0x742d35cc6634c0532925a3b844bc9e7595f8fdf0")))
        }
    }

    #[test]
    fn register_set_cannot_write_declared_registers_it_does_not_own() {
        let s = store();
        for key in ["wallet_address", "sell_token", "buy_token"] {
            let err = s.set(RegisterWrite::new(key, json!("x"), Origin::Model, "register_set")).unwrap_err();
            assert_eq!(err.code, ErrorCode::RegisterWriteDenied, "{key}");
            assert!(s.get(key).is_none());
        }
        s.set(RegisterWrite::new("sell_amount", json!("1000"), Origin::Model, "register_set")).unwrap();
        assert_eq!(s.get("sell_amount").unwrap().origin(), Origin::Model);
    }

    #[test]
    fn intrinsic_registers_resolve_lazily_and_refuse_every_writer() {
        let s = store();
        assert!(s.get("wallet_address").is_none());
        s.set_intrinsic_provider(Arc::new(Wallet));
        let e = s.get("wallet_address").unwrap();
        assert_eq!(e.value, json!("0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0"));
        assert_eq!(e.origin(), Origin::Intrinsic);
        for (tool, origin) in [("local_burner_wallet", Origin::Intrinsic), ("register_set", Origin::Model)] {
            let w =
                RegisterWrite::new("wallet_address", json!("0x0000000000000000000000000000000000000001"), origin, tool);
            assert_eq!(s.set(w).unwrap_err().code, ErrorCode::RegisterWriteDenied);
        }
        assert_eq!(s.get("wallet_address").unwrap().value, e.value);
    }

    #[test]
    fn any_model_origin_sees_typed_and_tainted_values() {
        let s = store();
        s.set(RegisterWrite::new("note", json!("typed"), Origin::Model, "register_set")).unwrap();
        s.set(RegisterWrite::new("fetched", json!(1), Origin::Tool, "t")).unwrap();
        assert!(!s.any_model_origin(&["fetched", "absent"]));
        assert!(s.any_model_origin(&["fetched", "note"]));
        s.set(RegisterWrite::new("derived", json!(2), Origin::Tool, "t").derived_from(["note"])).unwrap();
        assert!(s.any_model_origin(&["derived"]));
    }

    #[test]
    fn model_taint_propagates_through_derived_from() {
        let s = store();
        s.set(RegisterWrite::new("note", json!("model said so"), Origin::Model, "register_set")).unwrap();
        let derived = RegisterWrite::new("sell_token", token(), Origin::Config, "token_lookup").derived_from(["note"]);
        assert_eq!(s.set(derived).unwrap_err().code, ErrorCode::RegisterWriteDenied);
        let derived = RegisterWrite::new("scratch", json!(1), Origin::Tool, "some_tool").derived_from(["note"]);
        assert_eq!(s.set(derived).unwrap().origin(), Origin::Model);
    }

    fn token() -> Value {
        json!({"address": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "symbol": "USDC", "decimals": 6, "network": "base"})
    }

    #[test]
    fn scratch_suffix_rules_apply_to_every_writer() {
        let s = store();
        let bad = RegisterWrite::new("payout_address", json!("0x12"), Origin::Tool, "any_tool");
        assert_eq!(s.set(bad).unwrap_err().code, ErrorCode::InvalidAddress);
        let bad = RegisterWrite::new("fee_amount", json!("-3"), Origin::Model, "register_set");
        assert_eq!(s.set(bad).unwrap_err().code, ErrorCode::InvalidAmount);
    }

    #[test]
    fn model_values_are_size_limited() {
        let s = store();
        let big = RegisterWrite::new("note", json!("x".repeat(5000)), Origin::Model, "register_set");
        let err = s.set(big).unwrap_err();
        assert_eq!(err.code, ErrorCode::RegisterWriteDenied);
        assert!(err.message.contains("`note`"));
    }

    #[test]
    fn path_access_and_staleness() {
        let s = store();
        s.set(RegisterWrite::new("route", json!({"fills": [{"source": "Venue"}]}), Origin::Tool, "t")).unwrap();
        assert_eq!(s.get_path("route.fills.0.source").unwrap(), json!("Venue"));
        let err = s.get_path("route.fills.3.source").unwrap_err();
        assert_eq!(err.code, ErrorCode::RegisterMissing);
        assert!(err.message.contains("route.fills has no \"3\""), "{}", err.message);
        assert_eq!(s.get_path("nothing.x").unwrap_err().code, ErrorCode::RegisterMissing);
        assert!(!s.is_stale("route", Duration::from_secs(60)));
        assert!(s.is_stale("route", Duration::ZERO) || s.get("route").unwrap().age() == Duration::ZERO);
        assert!(s.is_stale("absent", Duration::from_secs(60)));
    }

    #[test]
    fn typed_reads_refuse_other_types_and_unvalidated_quotes_are_never_stored() {
        let mut decls = RegisterDeclarations::default();
        decls.declare(RegisterDecl::new("quote", ValueType::SwapQuote).writer(super::super::WriterRule::tool("t")));
        decls.declare(RegisterDecl::new("price", ValueType::TokenPrice).writer(super::super::WriterRule::tool("t")));
        let s = RegisterStore::new(Arc::new(decls), EventBus::new("t"));
        let denied = s.set(RegisterWrite::new("quote", json!({"buyAmount": "1"}), Origin::Tool, "t")).unwrap_err();
        assert_eq!(denied.code, ErrorCode::RegisterWriteDenied);
        assert!(denied.message.contains("no quote validator"), "{}", denied.message);
        s.set(RegisterWrite::new("price", json!({"buyAmount": "1"}), Origin::Tool, "t")).unwrap();
        let err = s.require_typed("from_register", "price", ValueType::SwapQuote).unwrap_err();
        assert_eq!(err.code, ErrorCode::RegisterTypeMismatch);
        assert!(err.message.contains("token price"), "{}", err.message);
        s.set(RegisterWrite::new("scratch", json!({}), Origin::Tool, "t")).unwrap();
        let err = s.require_typed("from_register", "scratch", ValueType::SwapQuote).unwrap_err();
        assert_eq!(err.code, ErrorCode::RegisterTypeMismatch);
        assert_eq!(s.require_typed("f", "quote", ValueType::SwapQuote).unwrap_err().code, ErrorCode::RegisterMissing);
        // A name nothing was ever written to is missing, not "a scratch register".
        let made_up = s.require_typed("from_register", "nonexistent", ValueType::SwapQuote).unwrap_err();
        assert_eq!(made_up.code, ErrorCode::RegisterMissing, "{}", made_up.message);
        assert!(!made_up.message.contains("scratch"), "{}", made_up.message);
    }

    #[test]
    fn value_moving_reads_refuse_scratch_and_missing_registers() {
        let s = store();
        s.set(RegisterWrite::new("my_quote", json!({}), Origin::Model, "register_set")).unwrap();
        assert_eq!(s.require_declared("from_register", "my_quote").unwrap_err().code, ErrorCode::RegisterWriteDenied);
        assert_eq!(s.require_declared("from_register", "sell_amount").unwrap_err().code, ErrorCode::RegisterMissing);
        assert_eq!(s.require_declared("from_register", "made_up").unwrap_err().code, ErrorCode::RegisterMissing);
    }

    #[tokio::test]
    async fn every_change_is_published() {
        let s = store();
        let mut rx = s.events().subscribe();
        s.set(RegisterWrite::new("a", json!(1), Origin::Tool, "t")).unwrap();
        s.remove("a");
        let set = rx.recv().await.unwrap();
        assert_eq!(
            (set.name(), &set.data()["key"], &set.data()["action"]),
            ("register.update", &json!("a"), &json!("set"))
        );
        assert_eq!(set.data()["origin"], "tool");
        let removed = rx.recv().await.unwrap();
        assert_eq!(removed.data()["action"], "remove");
    }

    #[test]
    fn clones_share_state_and_snapshots_are_ordered() {
        let s = store();
        let c = s.clone();
        c.set(RegisterWrite::new("b", json!(2), Origin::Tool, "t")).unwrap();
        s.set(RegisterWrite::new("a", json!(1), Origin::Tool, "t")).unwrap();
        let snap = serde_json::to_value(s.snapshot()).unwrap();
        assert_eq!(snap.as_object().unwrap().keys().collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(snap["a"]["source"], "t");
    }
}
