//! Target kind `channel`: named channels, their subscribers, and the outbound webhook a channel may have.

use super::router::MessageRouter;
use super::types::RoutedMessage;
use super::{Reach, list_strings};
use crate::agent_id::{AgentId, validate_id};
use crate::clock::fmt_time;
use crate::error::{MemoryError, Result};
use rusqlite::{OptionalExtension, params};

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
        self.database()
            .call(move |c| {
                c.execute(
                    "INSERT INTO messages_channels (name, webhook_url) VALUES (?1, ?2)
                     ON CONFLICT (name) DO UPDATE SET webhook_url = excluded.webhook_url",
                    params![name, webhook_url],
                )?;
                Ok(())
            })
            .await
    }

    /// Subscribes an agent to a channel (the channel must exist).
    pub async fn subscribe(&self, channel: &str, agent: &AgentId) -> Result<()> {
        let (channel, agent) = (channel.to_owned(), agent.to_string());
        self.database()
            .call(move |c| {
                if !exists(c, &channel)? {
                    return Err(MemoryError::TargetNotFound { kind: "channel", id: channel, existing: names(c)? });
                }
                c.execute(
                    "INSERT OR IGNORE INTO messages_subscriptions (channel, agent_id) VALUES (?1, ?2)",
                    params![channel, agent],
                )?;
                Ok(())
            })
            .await
    }

    /// Unsubscribes an agent from a channel.
    pub async fn unsubscribe(&self, channel: &str, agent: &AgentId) -> Result<()> {
        let (channel, agent) = (channel.to_owned(), agent.to_string());
        self.database()
            .call(move |c| {
                c.execute(
                    "DELETE FROM messages_subscriptions WHERE channel = ?1 AND agent_id = ?2",
                    params![channel, agent],
                )?;
                Ok(())
            })
            .await
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
pub(super) fn reach(c: &rusqlite::Connection, id: &str, sender: &str) -> Result<Reach> {
    let (webhook, subscribers) = info(c, id)?;
    Ok(Reach { recipients: subscribers.into_iter().filter(|s| s != sender).collect(), webhook })
}

fn exists(c: &rusqlite::Connection, id: &str) -> Result<bool> {
    Ok(c.query_row("SELECT 1 FROM messages_channels WHERE name = ?1", [id], |_| Ok(())).optional()?.is_some())
}

fn names(c: &rusqlite::Connection) -> Result<Vec<String>> {
    list_strings(c, "SELECT name FROM messages_channels ORDER BY name", [])
}

/// A channel's webhook and subscribers; `target_not_found` (listing the channels) when it does not exist.
pub(super) fn info(c: &rusqlite::Connection, id: &str) -> Result<(Option<String>, Vec<String>)> {
    let webhook: Option<Option<String>> =
        c.query_row("SELECT webhook_url FROM messages_channels WHERE name = ?1", [id], |r| r.get(0)).optional()?;
    let Some(webhook) = webhook else {
        return Err(MemoryError::TargetNotFound { kind: "channel", id: id.to_owned(), existing: names(c)? });
    };
    let subs =
        list_strings(c, "SELECT agent_id FROM messages_subscriptions WHERE channel = ?1 ORDER BY agent_id", [id])?;
    Ok((webhook, subs))
}
