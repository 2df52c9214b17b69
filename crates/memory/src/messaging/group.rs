//! Target kind `group`: named groups of agents, and the fan-out of a message to every member but its sender.

use super::router::MessageRouter;
use super::{Reach, list_strings};
use crate::agent_id::validate_id;
use crate::error::{MemoryError, Result};
use rusqlite::params;
use std::collections::BTreeMap;

impl MessageRouter {
    /// Defines (or redefines) a group with exactly these members.
    pub async fn define_group(&self, name: &str, members: &[String]) -> Result<()> {
        validate_id("group", name)?;
        for m in members {
            validate_id("members", m)?;
        }
        let (name, members) = (name.to_owned(), members.to_vec());
        self.database()
            .call(move |c| {
                let tx = c.transaction()?;
                tx.execute("DELETE FROM messages_groups WHERE name = ?1", [&name])?;
                for m in &members {
                    tx.execute(
                        "INSERT OR IGNORE INTO messages_groups (name, member) VALUES (?1, ?2)",
                        params![name, m],
                    )?;
                }
                tx.commit()?;
                Ok(())
            })
            .await
    }

    /// Every group with its members.
    pub async fn groups(&self) -> Result<BTreeMap<String, Vec<String>>> {
        self.database()
            .call(|c| {
                let mut stmt = c.prepare_cached("SELECT name, member FROM messages_groups ORDER BY name, member")?;
                let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
                let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for row in rows {
                    let (g, m) = row?;
                    out.entry(g).or_default().push(m);
                }
                Ok(out)
            })
            .await
    }
}

/// A group message reaches every member but the sender; a group of the sender alone is refused.
pub(super) fn reach(c: &rusqlite::Connection, id: &str, sender: &str) -> Result<Reach> {
    let members: Vec<String> = members(c, id)?.into_iter().filter(|m| m != sender).collect();
    if members.is_empty() {
        return Err(MemoryError::invalid("target.id", format!("group `{id}` has no members besides you")));
    }
    Ok(Reach { recipients: members, webhook: None })
}

/// A group's members; `target_not_found` (listing the groups) when it has none.
pub(super) fn members(c: &rusqlite::Connection, id: &str) -> Result<Vec<String>> {
    let members = list_strings(c, "SELECT member FROM messages_groups WHERE name = ?1 ORDER BY member", [id])?;
    if members.is_empty() {
        return Err(MemoryError::TargetNotFound {
            kind: "group",
            id: id.to_owned(),
            existing: list_strings(c, "SELECT DISTINCT name FROM messages_groups ORDER BY name", [])?,
        });
    }
    Ok(members)
}
