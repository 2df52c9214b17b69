//! The one place where block permissions are checked.
//!
//! Every edit a tool asks for goes through [`crate::Memory`], which calls [`authorize`] inside the store's atomic
//! read-modify-write, so no tool (built-in or a replacement) can bypass it and no concurrent edit can slip between
//! the check and the write. Runtime writes ([`crate::EditOp::System`]) are the only ones exempt.

use crate::blocks::block::{EditOp, MemoryBlock, Permission};
use crate::error::{MemoryError, Result};

/// May `op` be applied to `block` (absent: it does not exist yet) by a tool called `via`?
///
/// | permission | create | update | append | replace |
/// |---|---|---|---|---|
/// | (missing) | yes | — | — | — |
/// | `read_write` | — | yes | yes | yes |
/// | `append` | — | no | yes | no |
/// | `read_only` | — | no | no | no |
pub fn authorize(block: Option<&MemoryBlock>, op: EditOp, via: &str) -> Result<()> {
    let Some(block) = block else {
        return Ok(());
    };
    let allowed = match (block.permission, op) {
        (_, EditOp::System) => true,
        (Permission::ReadWrite, _) => true,
        (Permission::Append, EditOp::Append) => true,
        (Permission::Append, _) | (Permission::ReadOnly, _) => false,
    };
    if allowed {
        Ok(())
    } else {
        Err(MemoryError::ReadOnly {
            label: block.label.clone(),
            permission: block.permission,
            attempted: via.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn block(p: Permission) -> MemoryBlock {
        MemoryBlock {
            label: "b".into(),
            value: String::new(),
            description: None,
            permission: p,
            char_limit: 10,
            pinned: false,
            written_by: None,
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }
    }

    #[test]
    fn the_permission_table() {
        use EditOp::{Append as A, Replace, System, Update};
        use Permission::{Append, ReadOnly, ReadWrite};
        for (p, op, ok) in [
            (ReadWrite, Update, true),
            (ReadWrite, A, true),
            (ReadWrite, Replace, true),
            (Append, A, true),
            (Append, Update, false),
            (Append, Replace, false),
            (ReadOnly, A, false),
            (ReadOnly, Update, false),
            (ReadOnly, System, true),
        ] {
            assert_eq!(authorize(Some(&block(p)), op, "t").is_ok(), ok, "{p:?} {op:?}");
        }
        assert!(authorize(None, EditOp::Create, "t").is_ok());
        let e = authorize(Some(&block(Append)), Update, "update_memory").unwrap_err();
        assert!(e.to_string().contains("append-only") && e.to_string().contains("append_memory"), "{e}");
    }
}
