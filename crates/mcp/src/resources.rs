//! The session's state as MCP resources, readable and subscribable.
//!
//! | URI | content (JSON) | updated on |
//! |---|---|---|
//! | [`REGISTERS_URI`] | `{"session_id", "registers": {KEY: {value, source, origin, created_at, …}}}` | `register.update` |
//! | [`CONTEXT_BANK_URI`] | `{"session_id", "items": [{value, item_type, label, flags}]}` | `context_bank.update` |
//! | [`CONFIRMATIONS_URI`] | `{"session_id", "pending": [{id, tool, summary, reason, …}]}` | `confirmation.*` |
//!
//! Reading is always allowed and changes nothing (some clients let the model read resources, so no resource has a
//! side effect — in particular none approves or decides a confirmation). A subscriber gets `notifications/resources/updated` when its session's event bus publishes one of
//! the events above; the bus is per session, so no other session's updates ever reach it (invariant 14).

use holdfast_core::ToolContext;
use holdfast_core::event::{Event, names};
use parking_lot::Mutex;
use rmcp::model::{Resource, ResourceUpdatedNotificationParam};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// The session's registers.
pub const REGISTERS_URI: &str = "holdfast://session/registers";
/// The session's context bank.
pub const CONTEXT_BANK_URI: &str = "holdfast://session/context-bank";
/// The session's pending confirmations, with their decoded actions.
pub const CONFIRMATIONS_URI: &str = "holdfast://session/confirmations";

/// Every resource URI, in listing order.
pub const ALL_URIS: [&str; 3] = [REGISTERS_URI, CONTEXT_BANK_URI, CONFIRMATIONS_URI];

/// The resources as listed.
pub fn list() -> Vec<Resource> {
    let describe = |uri: &str, name: &str, title: &str, description: &str| {
        Resource::new(uri, name).with_title(title).with_description(description).with_mime_type("application/json")
    };
    vec![
        describe(
            REGISTERS_URI,
            "registers",
            "Registers",
            "This session's registers: every named value with its origin (user, config, tool, model, intrinsic), \
             the tool that wrote it and when.",
        ),
        describe(
            CONTEXT_BANK_URI,
            "context-bank",
            "Context bank",
            "Addresses, tokens, networks and amounts found in the user's own words (the user_request prompt).",
        ),
        describe(
            CONFIRMATIONS_URI,
            "confirmations",
            "Pending confirmations",
            "Value-moving actions waiting for the user's approval, each with its decoded action. One is pending \
             only while holdfast asks the user in an elicitation form; nothing the client sends can approve it.",
        ),
    ]
}

/// The JSON content of a resource, or `None` for an unknown URI.
pub fn read(uri: &str, ctx: &ToolContext) -> Option<Value> {
    let session_id = ctx.session_id.to_string();
    Some(match uri {
        REGISTERS_URI => json!({"session_id": session_id, "registers": ctx.registers.snapshot()}),
        CONTEXT_BANK_URI => json!({"session_id": session_id, "items": ctx.context_bank.items()}),
        CONFIRMATIONS_URI => json!({"session_id": session_id, "pending": ctx.confirmations.pending()}),
        _ => return None,
    })
}

/// The resources an event changes.
pub fn affected_by(event: &str) -> &'static [&'static str] {
    match event {
        names::REGISTER_UPDATE => &[REGISTERS_URI],
        names::CONTEXT_BANK_UPDATE => &[CONTEXT_BANK_URI],
        names::CONFIRMATION_REQUIRED | names::CONFIRMATION_RESOLVED | names::CONFIRMATION_WITHDRAWN => {
            &[CONFIRMATIONS_URI]
        }
        _ => &[],
    }
}

/// The URIs one MCP session subscribed to. Clones share the set.
pub type Subscriptions = Arc<Mutex<HashSet<String>>>;

/// Forwards the session's events to the client as `notifications/resources/updated` for subscribed URIs, until
/// the client goes away or the task is aborted.
pub async fn forward_updates(
    mut events: tokio::sync::broadcast::Receiver<Arc<Event>>,
    peer: Peer<RoleServer>,
    subscriptions: Subscriptions,
) {
    loop {
        let changed: &[&str] = match events.recv().await {
            Ok(event) => affected_by(event.name()),
            // Some events were missed: whatever is subscribed may have changed.
            Err(RecvError::Lagged(_)) => &ALL_URIS,
            Err(RecvError::Closed) => return,
        };
        let due: Vec<&str> = {
            let subscribed = subscriptions.lock();
            changed.iter().copied().filter(|uri| subscribed.contains(*uri)).collect()
        };
        for uri in due {
            if let Err(e) = peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)).await {
                tracing::debug!("resource update for {uri} not delivered ({e}); stopping the forwarder");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast_core::CoreServices;
    use holdfast_core::config::CoreConfig;

    #[test]
    fn each_resource_reads_its_own_session_state() {
        let services = CoreServices::new(CoreConfig::default()).unwrap();
        let ctx = services.new_session("s_test");
        ctx.context_bank.scan_input("swap 0.5 ETH for USDC");
        let bank = read(CONTEXT_BANK_URI, &ctx).unwrap();
        assert_eq!(bank["session_id"], "s_test");
        assert!(bank["items"].as_array().unwrap().iter().any(|i| i["value"] == "0.5"), "{bank}");
        assert!(read(REGISTERS_URI, &ctx).unwrap()["registers"].is_object());
        assert_eq!(read(CONFIRMATIONS_URI, &ctx).unwrap()["pending"], json!([]));
        assert!(read("holdfast://session/other", &ctx).is_none());
        assert_eq!(list().len(), ALL_URIS.len());
        assert_eq!(affected_by("register.update"), &[REGISTERS_URI]);
        assert!(affected_by("tool.call").is_empty());
        assert_eq!(affected_by("confirmation.withdrawn"), &[CONFIRMATIONS_URI], "a withdrawn question leaves the list");
    }
}
