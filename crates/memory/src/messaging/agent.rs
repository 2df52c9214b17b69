//! Target kind `agent`: the directory of agents and a direct message's one recipient.

use super::router::MessageRouter;
use super::{Reach, list_strings};
use crate::agent_id::AgentId;
use crate::clock::fmt_time;
use crate::error::{MemoryError, Result};
use rusqlite::{OptionalExtension, params};

impl MessageRouter {
    /// Makes `agent` known, so other agents may message it.
    pub async fn register_agent(&self, agent: &AgentId) -> Result<()> {
        let (agent, now) = (agent.to_string(), fmt_time(self.now()));
        self.database()
            .call(move |c| {
                c.execute(
                    "INSERT OR IGNORE INTO messages_agents (agent_id, created_at) VALUES (?1, ?2)",
                    params![agent, now],
                )?;
                Ok(())
            })
            .await
    }

    /// Every known agent, by id.
    pub async fn agents(&self) -> Result<Vec<String>> {
        self.database().call(|c| list_strings(c, "SELECT agent_id FROM messages_agents ORDER BY agent_id", [])).await
    }
}

/// A direct message reaches `id`, which must be a known agent (an agent's own id is always known to it).
pub(super) fn reach(c: &rusqlite::Connection, id: String, sender: &str) -> Result<Reach> {
    if id != sender {
        known_agent(c, &id)?;
    }
    Ok(Reach { recipients: vec![id], webhook: None })
}

/// `Ok` when `id` is a known agent; otherwise `target_not_found` listing the known ones.
pub(super) fn known_agent(c: &rusqlite::Connection, id: &str) -> Result<()> {
    let found: Option<String> =
        c.query_row("SELECT agent_id FROM messages_agents WHERE agent_id = ?1", [id], |r| r.get(0)).optional()?;
    if found.is_some() {
        Ok(())
    } else {
        Err(MemoryError::TargetNotFound {
            kind: "agent",
            id: id.to_owned(),
            existing: list_strings(c, "SELECT agent_id FROM messages_agents ORDER BY agent_id", [])?,
        })
    }
}
