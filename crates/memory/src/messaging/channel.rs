//! Target kind `channel`: named channels, their subscribers, and the outbound webhook a channel may have.

use super::Reach;
use super::router::MessageRouter;
use super::store::MessageStore;
use super::types::RoutedMessage;
use crate::agent_id::{AgentId, validate_id};
use crate::clock::fmt_time;
use crate::error::{MemoryError, Result};

impl MessageRouter {
    /// Defines (or redefines) a channel and its optional outbound webhook URL (`http://` or `https://`).
    pub async fn define_channel(&self, name: &str, webhook_url: Option<String>) -> Result<()> {
        validate_id("channel", name)?;
        if let Some(url) = &webhook_url {
            let parsed = reqwest::Url::parse(url).map_err(|e| MemoryError::invalid("webhook_url", e.to_string()))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(MemoryError::invalid("webhook_url", "must be an http or https URL"));
            }
        }
        let name = name.to_owned();
        self.store().define_channel(&name, webhook_url.as_deref()).await
    }

    /// Subscribes an agent to a channel (the channel must exist).
    pub async fn subscribe(&self, channel: &str, agent: &AgentId) -> Result<()> {
        let (s, agent) = (self.store(), agent.to_string());
        if s.subscribe(channel, &agent).await? {
            Ok(())
        } else {
            Err(MemoryError::TargetNotFound { kind: "channel", id: channel.to_owned(), existing: s.channels().await? })
        }
    }

    /// Unsubscribes an agent from a channel.
    pub async fn unsubscribe(&self, channel: &str, agent: &AgentId) -> Result<()> {
        let (channel, agent) = (channel.to_owned(), agent.to_string());
        self.store().unsubscribe(&channel, &agent).await
    }

    /// POSTs a stored message to a channel's webhook as JSON; the HTTP status, or `upstream_error`.
    pub(super) async fn post_webhook(&self, url: &str, m: &RoutedMessage) -> Result<String> {
        let body = serde_json::json!({
            "message_id": m.message_id,
            "channel": m.target_id,
            "from": m.from,
            "content": m.content,
            "metadata": m.metadata,
            "created_at": fmt_time(m.created_at),
        });
        let upstream = |detail: String| MemoryError::Upstream { service: format!("webhook POST to {url}"), detail };
        let response = self.http().post(url).json(&body).send().await.map_err(|e| upstream(e.to_string()))?;
        let status = response.status();
        if status.is_success() { Ok(status.to_string()) } else { Err(upstream(format!("HTTP {status}"))) }
    }
}

/// A channel message reaches every subscriber but the sender, and the channel's webhook if it has one.
pub(super) async fn reach(s: &dyn MessageStore, id: &str, sender: &str) -> Result<Reach> {
    let (webhook, subscribers) = info(s, id).await?;
    Ok(Reach { recipients: subscribers.into_iter().filter(|s| s != sender).collect(), webhook })
}

/// A channel's webhook and subscribers; `target_not_found` (listing the channels) when it does not exist.
pub(super) async fn info(s: &dyn MessageStore, id: &str) -> Result<(Option<String>, Vec<String>)> {
    match s.channel(id).await? {
        Some(info) => Ok(info),
        None => Err(MemoryError::TargetNotFound { kind: "channel", id: id.to_owned(), existing: s.channels().await? }),
    }
}
