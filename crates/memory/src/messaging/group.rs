//! Target kind `group`: named groups of agents, and the fan-out of a message to every member but its sender.

use super::Reach;
use super::router::MessageRouter;
use super::store::MessageStore;
use crate::agent_id::validate_id;
use crate::error::{MemoryError, Result};
use std::collections::BTreeMap;

impl MessageRouter {
    /// Defines (or redefines) a group with exactly these members.
    pub async fn define_group(&self, name: &str, members: &[String]) -> Result<()> {
        validate_id("group", name)?;
        for m in members {
            validate_id("members", m)?;
        }
        let (name, members) = (name.to_owned(), members.to_vec());
        self.store().define_group(&name, &members).await
    }

    /// Every group with its members.
    pub async fn groups(&self) -> Result<BTreeMap<String, Vec<String>>> {
        let pairs = self.store().group_pairs().await?;
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (g, m) in pairs {
            out.entry(g).or_default().push(m);
        }
        Ok(out)
    }
}

/// A group message reaches every member but the sender; a group of the sender alone is refused.
pub(super) async fn reach(s: &dyn MessageStore, id: &str, sender: &str) -> Result<Reach> {
    let members: Vec<String> = members(s, id).await?.into_iter().filter(|m| m != sender).collect();
    if members.is_empty() {
        return Err(MemoryError::invalid("target.id", format!("group `{id}` has no members besides you")));
    }
    Ok(Reach { recipients: members, webhook: None })
}

/// A group's members; `target_not_found` (listing the groups) when it has none.
pub(super) async fn members(s: &dyn MessageStore, id: &str) -> Result<Vec<String>> {
    let members = s.group_members(id).await?;
    if members.is_empty() {
        let mut existing: Vec<String> = s.group_pairs().await?.into_iter().map(|(g, _)| g).collect();
        existing.dedup();
        return Err(MemoryError::TargetNotFound { kind: "group", id: id.to_owned(), existing });
    }
    Ok(members)
}
