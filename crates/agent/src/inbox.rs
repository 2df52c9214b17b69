//! The agent between messages: turns its inbox starts.
//!
//! A message to the agent — from another agent, a group, a channel — and a reminder that fires land in the agent's
//! durable inbox (`holdfast_memory::messaging`). [`spawn`] watches that inbox and answers each message with a turn of
//! its own ([`Agent::answer_message`]) in an **inbox session** (kind `inbox`) of that agent — one per sender
//! ([`conversation`]: another agent, a group, a channel, or the agent's own reminders), titled by whom it talks with
//! and found again after a restart through the session link `inbox:<agent id>/<sender>`. So each sender's exchange
//! has its own history and summaries, and one sender's words never sit in another's context; the agent's memory
//! stays one, as it is the agent's own. The final text of a turn that answers another
//! agent's direct message is sent back to it as a `reply`, which that agent reads but does not answer.
//!
//! **Stopping.** An inbox turn is registered in [`crate::turns::Turns`] like a user's, so `POST
//! /api/sessions/{id}/cancel` and the UI's stop button stop it (a page that goes away does not: it did not start
//! it). The turn ends as a stopped user's turn does ("Cancelled by the user."), the message is taken as answered
//! with that stop and never run again, and the sender of a direct message is told in a reply.
//!
//! **What such a turn may do.** The message is shown to the model as what it is — who sent it and how — and never as
//! the user's words: it does not feed the context bank. The turn has no user channel, so an action that needs the
//! user's confirmation is left pending for the user to decide in the UI (`Runtime::decide`), whatever the message
//! says.
//!
//! **Once, and nothing lost.** A message stays in the inbox until its turn has ended (and its reply was sent); only
//! then is it taken (acknowledged). Before the turn starts, the session link records the message being answered. If
//! the process dies during the turn, the message is found again at start; the link shows its turn already began, so
//! it is taken with a note in the session instead of a second turn. So each message is delivered at least once and
//! starts at most one turn — the turn is idempotent for a message id (a reminder's message id is its firing).
//! Reminders that came due while the process was down fire at start (the scheduler's first pass) and arrive here.
//!
//! **Several instances.** On a store several instances share (PostgreSQL), one instance at a time answers an
//! agent's inbox: the worker first takes the inbox's hold (an advisory lock the database frees when the holder's
//! connection dies; over TCP it notices within about 30 s), checks every 5 s that it still holds it, and cancels the
//! turn it is in when it does not. An instance that takes the hold from a holder that did not let go cleanly (it
//! died or lost its connection) waits 15 s before reading — longer than that holder takes to notice and cancel — so
//! it finds an interrupted turn's message as a restart would (above) instead of answering it a second time. A holder
//! that stops cleanly says so when it lets go (after its last turn ended), and the next holder reads at once.
//!
//! **Limits.** At most `[agent] inbox_turns_per_minute` turns per minute: more messages wait in the inbox (an
//! `agent.rate_limited` event says how long), none is dropped. Messages between agents carry the router's hop count
//! and a conversation stops at `[memory] max_hops` (a `message.hop_limit` event), so two agents answering each
//! other cannot run forever.

use crate::agent::{Agent, AgentError, CancelToken, StopReason};
use crate::turns::Started;
use holdfast_core::event::{AgentInboxTurn, AgentMessage, AgentRateLimited, EventPayload};
use holdfast_core::{ErrorCode, ToolContext, ToolError};
use holdfast_memory::{ConversationHops, Inbox, InboxHold, InboxMessage, SendOrigin};
use serde_json::json;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The kind of the sessions the inbox's turns run in (one per agent and sender). Users' turns are refused there.
pub const SESSION_KIND: &str = "inbox";

/// The window of `[agent] inbox_turns_per_minute`.
const RATE_WINDOW: Duration = Duration::from_secs(60);
/// How long the worker waits after a storage error before it looks at the inbox again.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(1);
/// How long one attempt to take the inbox waits for another instance to let go (then it tries again).
const HOLD_WAIT: Duration = Duration::from_secs(30);
/// How often the holder checks it still holds the inbox (a lost database connection loses it).
const HOLD_CHECK: Duration = Duration::from_secs(5);
/// How long an instance that took the hold on a shared store waits before reading: longer than the previous
/// holder needs to notice the loss and cancel its turn (a check, and its answer's timeout).
const TAKEOVER_GRACE: Duration = Duration::from_secs(15);

/// Checks `hold` every [`HOLD_CHECK`]; cancels `lost` when it is gone (`None`). Gives the hold back when `stop`
/// fires; aborting the task lets it go.
async fn watch(mut hold: InboxHold, lost: CancelToken, stop: CancelToken) -> Option<InboxHold> {
    loop {
        tokio::select! {
            () = tokio::time::sleep(HOLD_CHECK) => {}
            () = stop.cancelled() => return Some(hold),
        }
        if !hold.still_held().await {
            lost.cancel();
            return None;
        }
    }
}

/// Takes the hold on `inbox` (at once with one process on the store; on a shared store, when no other instance
/// reads it). `None` when cancelled first.
async fn take_hold(inbox: &Inbox, cancel: &CancelToken) -> Option<InboxHold> {
    loop {
        let taken = tokio::select! {
            h = inbox.hold(HOLD_WAIT) => h,
            () = cancel.cancelled() => return None,
        };
        match taken {
            Ok(Some(hold)) => return Some(hold),
            Ok(None) => tracing::debug!(agent = %inbox.agent(), "another instance reads this inbox"),
            Err(e) => {
                tracing::error!(error = %e, "the inbox could not be held");
                if pause(RETRY_AFTER_ERROR, cancel).await {
                    return None;
                }
            }
        }
    }
}

/// Starts answering `agent`'s inbox until `cancel` fires.
pub fn spawn(agent: Agent, cancel: CancelToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move { Worker { agent, recent: VecDeque::new() }.run(&cancel).await })
}

/// Refuses a user's message in an inbox session: it is the agent's own, where it answers other agents and reminders,
/// and a user's turn there could run beside an inbox turn and pass for it (`session_conflict`). The one check the
/// turn and the API's send both make (the API before it takes the session's turn slot).
pub async fn refuse_user_turn(sessions: &dyn crate::SessionStorage, session_id: &str) -> Result<(), ToolError> {
    if sessions.get(session_id).await?.is_some_and(|s| s.kind == SESSION_KIND) {
        return Err(ToolError::new(
            ErrorCode::SessionConflict,
            "this is the agent's inbox session, where it answers other agents and reminders; open a new session to \
             talk to it (pending actions here can still be approved or denied)",
        ));
    }
    Ok(())
}

/// The conversation a message to agent `receiver` belongs to: one per sender — another agent (its direct messages,
/// replies and the reminders it scheduled for `receiver`), a group, a channel, or `receiver`'s own reminders. Each
/// has its own inbox session, so one sender's words never sit in another's history. Returns the key (part of the
/// session link; ids have no `/`) and the session's title.
pub fn conversation(m: &InboxMessage, receiver: &str) -> (String, String) {
    match m.via.split_once(':') {
        Some(("group", g)) => (format!("group:{g}"), format!("group '{g}'")),
        Some(("channel", c)) => (format!("channel:{c}"), format!("channel '{c}'")),
        _ if m.via == "reminder" && m.from == receiver => ("reminders".to_owned(), "your reminders".to_owned()),
        _ => (format!("agent:{}", m.from), format!("agent '{}'", m.from)),
    }
}

/// How the model, the history and a confirmation's question name a reminder the agent scheduled for itself.
const OWN_REMINDER: &str = "a reminder the agent scheduled for itself";

/// Who sent a message to agent `receiver` and how, as the model and the history show it.
pub fn describe_sender(m: &InboxMessage, receiver: &str) -> String {
    match m.via.as_str() {
        // A reminder scheduled in a turn someone else started (another agent, an untrusted client) names them: the
        // words are theirs as much as the agent's. A reminder from a reminder's turn already names its origin.
        "reminder" if m.from == receiver => match m.metadata.as_ref().and_then(|v| v["asked_by"].as_str()) {
            Some(asked_by) if asked_by.starts_with(OWN_REMINDER) => asked_by.to_owned(),
            Some(asked_by) => format!("{OWN_REMINDER} while answering {asked_by}"),
            None => OWN_REMINDER.to_owned(),
        },
        // A reminder another agent scheduled for this one is that agent's words, not this agent's own note.
        "reminder" => format!("a reminder agent '{}' scheduled for you", m.from),
        "direct" => format!("agent '{}'", m.from),
        "reply" => format!("agent '{}' (its reply to your message)", m.from),
        via => match via.split_once(':') {
            Some(("group", g)) => format!("agent '{}' to group '{g}'", m.from),
            Some(("channel", c)) => format!("agent '{}' on channel '{c}'", m.from),
            _ => format!("agent '{}' ({via})", m.from),
        },
    }
}

struct Worker {
    agent: Agent,
    /// When the last turns started, oldest first, within [`RATE_WINDOW`].
    recent: VecDeque<Instant>,
}

impl Worker {
    async fn run(mut self, cancel: &CancelToken) {
        let inbox = self.agent.profile().handle.inbox();
        loop {
            let Some(hold) = take_hold(&inbox, cancel).await else { return };
            // An instance that lost the hold may still be in a turn: give it time to see the loss and stop, so
            // its message is found interrupted here rather than answered twice. One that let go cleanly (or never
            // held it) runs no turn: no wait.
            let grace = inbox.is_shared() && hold.previous_may_run();
            let (lost, stop) = (CancelToken::new(), CancelToken::new());
            let watcher = tokio::spawn(watch(hold, lost.clone(), stop.clone()));
            let cancelled = (grace && pause(TAKEOVER_GRACE, cancel).await) || self.serve(&inbox, &lost, cancel).await;
            stop.cancel();
            let hold = watcher.await.ok().flatten();
            if cancelled {
                // No turn runs any more: the next holder is told it need not wait.
                if let Some(hold) = hold {
                    hold.release().await;
                }
                return;
            }
            tracing::warn!(agent = %inbox.agent(), "the hold on the inbox was lost; taking it again");
        }
    }

    /// Answers messages until the hold is `lost` (`false`) or `cancel` fires (`true`). A turn running when the hold
    /// is lost is cancelled and its message left in the inbox.
    async fn serve(&mut self, inbox: &Inbox, lost: &CancelToken, cancel: &CancelToken) -> bool {
        loop {
            let next = tokio::select! {
                m = inbox.next() => m,
                () = cancel.cancelled() => return true,
                () = lost.cancelled() => return false,
            };
            let message = match next {
                Ok(m) => m,
                Err(e) => {
                    tracing::error!(error = %e, "the inbox could not be read");
                    if pause(RETRY_AFTER_ERROR, cancel).await {
                        return true;
                    }
                    continue;
                }
            };
            if let Some(wait) = self.wait_for_rate() {
                if let Ok(ctx) = self.session(&message).await {
                    ctx.events.publish(EventPayload::AgentRateLimited(AgentRateLimited {
                        agent_id: inbox.agent().to_owned(),
                        message_id: message.message_id.clone(),
                        retry_after_secs: wait.as_secs().max(1),
                    }));
                }
                tracing::info!(message = %message.message_id, wait_secs = wait.as_secs(), "inbox turns per minute reached");
                if pause(wait, cancel).await {
                    return true;
                }
                continue;
            }
            let turn = cancel.child_token();
            let handled = {
                let handling = self.handle(&message, &turn);
                tokio::pin!(handling);
                tokio::select! {
                    r = &mut handling => Some(r),
                    () = lost.cancelled() => {
                        tracing::warn!(message = %message.message_id, "the inbox hold was lost mid-turn; the turn is cancelled");
                        turn.cancel();
                        let _ = handling.await;
                        None
                    }
                }
            };
            let Some(handled) = handled else {
                self.note_lost_hold(&message).await;
                return false;
            };
            match handled {
                Ok(()) => {
                    if let Err(e) = inbox.ack(message.inbox_id).await {
                        tracing::error!(error = %e, message = %message.message_id, "an answered message stays in the inbox");
                    }
                }
                Err(_) if cancel.is_cancelled() => return true,
                Err(e) => {
                    // Storage failed before or while the turn ran: the message stays and is looked at again.
                    tracing::error!(error = %e, message = %message.message_id, "inbox turn failed");
                    if pause(RETRY_AFTER_ERROR, cancel).await {
                        return true;
                    }
                }
            }
        }
    }

    /// Says in the inbox session why its turn stopped when the hold was lost (the turn's own note reads like any
    /// cancellation).
    async fn note_lost_hold(&self, message: &InboxMessage) {
        let note = format!(
            "The turn answering {} was stopped by holdfast, not by the user: this instance lost its hold on the \
             agent's inbox (its database connection), and the instance that holds it now takes the message over.",
            message.message_id
        );
        let runtime = self.agent.runtime();
        if let Ok(ctx) = self.session(message).await
            && let Err(e) = runtime
                .sessions
                .append(&ctx.session_id, crate::NewMessage::text(crate::MessageRole::System, note))
                .await
        {
            tracing::warn!(error = %e, "the inbox session could not record why its turn stopped");
        }
    }

    /// How long to wait before another turn may start, if the window is full.
    fn wait_for_rate(&mut self) -> Option<Duration> {
        let now = Instant::now();
        while self.recent.front().is_some_and(|t| now.duration_since(*t) >= RATE_WINDOW) {
            self.recent.pop_front();
        }
        let limit = usize::try_from(self.agent.config().inbox_turns_per_minute.max(1)).unwrap_or(usize::MAX);
        if self.recent.len() < limit {
            return None;
        }
        self.recent.front().map(|t| RATE_WINDOW.saturating_sub(now.duration_since(*t)))
    }

    /// The session link of the conversation `message` belongs to, and its title.
    fn link(&self, message: &InboxMessage) -> (String, String) {
        let agent = self.agent.profile().name.as_str();
        let (sender, title) = conversation(message, agent);
        (link_key(agent, Some(&sender)), title)
    }

    /// The inbox session of the conversation `message` belongs to, created the first time.
    async fn session(&self, message: &InboxMessage) -> Result<ToolContext, ToolError> {
        let runtime = self.agent.runtime();
        let (key, title) = self.link(message);
        let known = runtime.sessions.link_get(&key).await?;
        if let Some(id) = known.as_ref().and_then(|l| l.get("session_id")).and_then(|v| v.as_str())
            && let Some(ctx) = runtime.session(id).await?
        {
            return Ok(ctx);
        }
        let (info, ctx) = runtime.open_session_as(SESSION_KIND, &self.agent.profile().name).await?;
        runtime.sessions.name_session(&info.id, &title).await?;
        runtime.sessions.link_merge(&key, json!({"session_id": info.id})).await?;
        Ok(ctx)
    }

    /// Whether a turn for `message` began before a restart: its conversation's link says so, or, for a turn begun
    /// by a release that kept one inbox session per agent, that session's link.
    async fn began(&self, key: &str, message: &InboxMessage) -> Result<bool, ToolError> {
        let sessions = &self.agent.runtime().sessions;
        let legacy = link_key(self.agent.profile().name.as_str(), None);
        for key in [key, legacy.as_str()] {
            let link = sessions.link_get(key).await?;
            if link.as_ref().and_then(|l| l.get("answering")).and_then(|v| v.as_str()) == Some(&message.message_id) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Answers one message: a turn, then the reply to an agent's direct message. `Err` only when storage failed and
    /// the message should be looked at again; a failed model call ends the turn (recorded) and the message is taken.
    async fn handle(&mut self, message: &InboxMessage, cancel: &CancelToken) -> Result<(), ToolError> {
        let runtime = self.agent.runtime();
        let (key, _) = self.link(message);
        let ctx = self.session(message).await?;
        if self.began(&key, message).await? {
            tracing::warn!(message = %message.message_id, "a turn for this message began before a restart; not run twice");
            let note = format!(
                "The turn answering {} was interrupted (the process stopped); it is not run again.",
                message.message_id
            );
            let system = crate::NewMessage::text(crate::MessageRole::System, note);
            runtime.sessions.append(&ctx.session_id, system).await?;
            return Ok(());
        }
        // A stop the user sends (`POST /api/sessions/{id}/cancel`, the UI's stop button) ends this turn the way a
        // user's turn ends; the message is then taken as answered with that stop, never run again. Registered
        // before the turn is marked begun: a user's send racing into this session (refused there a moment later)
        // is waited out, never taken for this message's turn.
        let user_stop = CancelToken::new();
        let _running = loop {
            if let Some(running) = runtime.turns.begin(&ctx.session_id, user_stop.clone(), Started::Inbox) {
                break running;
            }
            if pause(Duration::from_millis(100), cancel).await {
                return Err(ToolError::new(ErrorCode::Cancelled, "stopped before the inbox turn began"));
            }
        };
        runtime.sessions.link_merge(&key, json!({"answering": message.message_id})).await?;
        self.recent.push_back(Instant::now());

        let from = describe_sender(message, &self.agent.profile().name);
        ctx.extensions.insert(ConversationHops(message.hops));
        ctx.events.publish(EventPayload::AgentInboxTurn(AgentInboxTurn {
            message_id: message.message_id.clone(),
            from: message.from.clone(),
            via: message.via.clone(),
            hops: message.hops,
        }));
        tracing::info!(message = %message.message_id, from = %message.from, via = %message.via, hops = message.hops, "inbox turn");
        let answered = {
            let answering = self.agent.answer_message(&ctx, &from, &message.message_id, &message.content, cancel);
            tokio::pin!(answering);
            tokio::select! {
                r = &mut answering => r,
                () = user_stop.cancelled() => {
                    cancel.cancel();
                    answering.await
                }
            }
        };
        let outcome = match answered {
            Ok(outcome) => outcome,
            Err(AgentError::Llm(e)) => {
                // Recorded in the session; the message is not answered again (the model failed, not storage).
                let note = format!("The model could not answer {}: {}", message.message_id, ToolError::from(e));
                runtime
                    .sessions
                    .append(&ctx.session_id, crate::NewMessage::text(crate::MessageRole::System, note.clone()))
                    .await?;
                // The turn's end, as every turn says it (a page watching the session stops showing it running).
                ctx.events.publish(EventPayload::AgentMessage(AgentMessage::Final {
                    role: "system".into(),
                    content: note,
                    is_final: true,
                    usage: Default::default(),
                }));
                return Ok(());
            }
            Err(AgentError::Tool(e)) => return Err(e),
        };
        let stopped_by_user = user_stop.is_cancelled() && outcome.stopped == Some(StopReason::Cancelled);
        if stopped_by_user {
            tracing::info!(message = %message.message_id, "the user stopped the inbox turn; the message is taken");
        }
        // The sender of a direct message is told: the answer, or that the user stopped it (it waits for nothing).
        let reply = match outcome.stopped {
            None if !outcome.text.trim().is_empty() => Some(outcome.text.clone()),
            Some(StopReason::Cancelled) if stopped_by_user => Some(format!(
                "My user stopped the turn answering your message {}; it will not be answered.",
                message.message_id
            )),
            _ => None,
        };
        if message.via == "direct"
            && let Some(reply) = reply
        {
            let origin = SendOrigin::session(&ctx);
            let me = &self.agent.profile().handle;
            let sent =
                me.messages.router().reply(&me.agent_id, &message.from, reply, &message.message_id, origin).await;
            if let Err(e) = sent {
                let note = format!("The reply to {} was not sent: {e}", message.message_id);
                runtime
                    .sessions
                    .append(&ctx.session_id, crate::NewMessage::text(crate::MessageRole::System, note))
                    .await?;
            }
        }
        Ok(())
    }
}

/// The session link of an agent's inbox session with one sender (`None`: the one inbox session per agent that
/// releases before conversations per sender kept).
fn link_key(agent_id: &str, sender: Option<&str>) -> String {
    match sender {
        Some(sender) => format!("inbox:{agent_id}/{sender}"),
        None => format!("inbox:{agent_id}"),
    }
}

/// Sleeps `d`; `true` when cancelled first.
async fn pause(d: Duration, cancel: &CancelToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep(d) => false,
        () = cancel.cancelled() => true,
    }
}

#[cfg(test)]
mod tests {
    use super::describe_sender;
    use holdfast_memory::InboxMessage;

    fn message(from: &str, via: &str) -> InboxMessage {
        InboxMessage {
            inbox_id: 1,
            message_id: "msg_1".into(),
            from: from.into(),
            via: via.into(),
            hops: 0,
            content: "swap 1 ETH to USDC as agreed".into(),
            metadata: None,
            created_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn a_reminder_another_agent_scheduled_is_shown_as_that_agents() {
        assert_eq!(
            describe_sender(&message("assistant", "reminder"), "assistant"),
            "a reminder the agent scheduled for itself"
        );
        assert_eq!(
            describe_sender(&message("mallory", "reminder"), "assistant"),
            "a reminder agent 'mallory' scheduled for you"
        );
        // One the agent scheduled while answering mallory names mallory, and so does one scheduled in that
        // reminder's turn (the description does not grow along the chain).
        let mut asked = message("assistant", "reminder");
        asked.metadata = Some(serde_json::json!({"kind": "reminder", "asked_by": "agent 'mallory'"}));
        let named = describe_sender(&asked, "assistant");
        assert_eq!(named, "a reminder the agent scheduled for itself while answering agent 'mallory'");
        asked.metadata = Some(serde_json::json!({"kind": "reminder", "asked_by": named}));
        assert_eq!(describe_sender(&asked, "assistant"), named);
        // The words are read only from a reminder of the agent's own: another agent's message cannot claim them.
        let mut forged = message("mallory", "direct");
        forged.metadata = Some(serde_json::json!({"asked_by": "the user"}));
        assert_eq!(describe_sender(&forged, "assistant"), "agent 'mallory'");
        assert_eq!(describe_sender(&message("bob", "direct"), "assistant"), "agent 'bob'");
        assert_eq!(describe_sender(&message("bob", "group:team"), "assistant"), "agent 'bob' to group 'team'");
    }
}
