//! A session's notes: small named values that other layers keep with a session and need back after a restart or an
//! unload — the web3 kernel's record of which intent spent a register it cleared, the agent's active skills. They are
//! saved with the session's state (a part of their own, [`crate::session_state::NOTES_PART`]) and never shown to the
//! model by themselves.
//!
//! ```
//! use holdfast_core::{CoreServices, config::CoreConfig};
//! let ctx = CoreServices::new(CoreConfig::default()).unwrap().new_session("s");
//! ctx.notes.set("active_skills", serde_json::json!(["swap"]));
//! assert_eq!(ctx.notes.get("active_skills"), Some(serde_json::json!(["swap"])));
//! ```

use parking_lot::Mutex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The most notes one session keeps; a new key beyond it is not kept (a note is a small bookkeeping value).
pub const MAX_NOTES: usize = 1000;

/// One session's notes. Clones share them.
#[derive(Debug, Clone, Default)]
pub struct SessionNotes {
    inner: Arc<Mutex<Notes>>,
}

#[derive(Debug, Default)]
struct Notes {
    values: BTreeMap<String, Value>,
    /// Counts the changes (what the session's next save writes).
    version: u64,
}

impl SessionNotes {
    /// The note `key`, if set.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.inner.lock().values.get(key).cloned()
    }

    /// Sets the note `key` (`Value::Null` removes it). `false`: a new key beyond [`MAX_NOTES`], not kept.
    pub fn set(&self, key: &str, value: Value) -> bool {
        self.update(key, |slot| *slot = Some(value).filter(|v| !v.is_null()))
    }

    /// Changes the note `key` in place, atomically: `f` gets the current value (`None`: unset) and leaves the new one.
    /// `false`: a new key beyond [`MAX_NOTES`], not kept.
    pub fn update(&self, key: &str, f: impl FnOnce(&mut Option<Value>)) -> bool {
        let mut notes = self.inner.lock();
        let old = notes.values.get(key).cloned();
        let mut slot = old.clone();
        f(&mut slot);
        if slot == old {
            return true;
        }
        match slot {
            Some(value) => {
                if old.is_none() && notes.values.len() >= MAX_NOTES {
                    return false;
                }
                notes.values.insert(key.to_owned(), value);
            }
            None => {
                notes.values.remove(key);
            }
        }
        notes.version += 1;
        true
    }

    /// How many changes the notes have had.
    pub(crate) fn version(&self) -> u64 {
        self.inner.lock().version
    }

    /// Every note.
    pub(crate) fn all(&self) -> BTreeMap<String, Value> {
        self.inner.lock().values.clone()
    }

    /// The notes' saved part as JSON.
    pub(crate) fn saved_part(&self) -> serde_json::Result<String> {
        serde_json::to_string(&self.inner.lock().values)
    }

    /// Puts back notes an earlier process saved (at most [`MAX_NOTES`]); counts no change.
    pub(crate) fn restore(&self, saved: BTreeMap<String, Value>) {
        self.inner.lock().values = saved.into_iter().take(MAX_NOTES).collect();
    }
}
