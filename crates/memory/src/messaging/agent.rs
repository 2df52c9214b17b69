//! Target kind `agent`: the directory of agents and a direct message's one recipient.

use super::Reach;
use super::router::MessageRouter;
use super::store::MessageStore;
use crate::agent_id::AgentId;
use crate::clock::fmt_time;
use crate::error::{MemoryError, Result};

impl MessageRouter {
    /// Makes `agent` known, so other agents may message it.
    pub async fn register_agent(&self, agent: &AgentId) -> Result<()> {
        let (agent, now) = (agent.to_string(), fmt_time(self.now()));
        self.store().register_agent(&agent, &now).await
    }

    /// Every known agent, by id.
    pub async fn agents(&self) -> Result<Vec<String>> {
        self.store().agents().await
    }
}

/// A direct message reaches `id`, which must be a known agent (an agent's own id is always known to it).
pub(super) async fn reach(s: &dyn MessageStore, id: String, sender: &str) -> Result<Reach> {
    if id != sender {
        known_agent(s, &id).await?;
    }
    Ok(Reach { recipients: vec![id], webhook: None })
}

/// `Ok` when `id` is a known agent; otherwise `target_not_found` listing the known ones.
pub(super) async fn known_agent(s: &dyn MessageStore, id: &str) -> Result<()> {
    if s.agent_known(id).await? {
        Ok(())
    } else {
        Err(MemoryError::TargetNotFound { kind: "agent", id: id.to_owned(), existing: s.agents().await? })
    }
}
