//! The [`MessageStore`](super::MessageStore) calls both stores answer alike, over holdfast-store's
//! [`MessageTable`]: the conversion of this crate's types to and from the stored rows, and the decisions the table's
//! transactions call — the anti-loop windows a send finds ([`super::CooldownRule`]) and the pending-reminder cap.

use super::{
    ChannelRow, CooldownRule, HeldLock, InboxRow, NewMessage, NewReminder, OutboxRow, ReminderRow, StoredMessage,
    all_skipped, deferral, window_left,
};
use crate::clock::fmt_time;
use crate::error::{MemoryError, Result};
use crate::messaging::types::TargetType;
use holdfast_core::tool::BoxFuture;
use holdfast_store::messages::{self as rows, Added, AfterWindows, InboxLock, MessageTable, Sent, Windows};
use std::time::Duration;

fn inbox_row(r: rows::InboxRow) -> InboxRow {
    (r.inbox_id, r.message_id, r.sender, r.via, r.content, r.metadata, r.created_at, r.hops)
}

fn reminder_row(r: rows::ReminderRow) -> ReminderRow {
    (
        r.id,
        r.agent_id,
        r.due_at,
        r.message,
        r.target_type,
        r.target_id,
        r.created_at,
        r.fired_at,
        r.hops,
        r.session_id,
        r.asked_by,
    )
}

fn outbox_row(r: rows::OutboxRow) -> OutboxRow {
    (r.message_id, r.agent_id, r.session_id, r.user_id, r.content, r.metadata, r.created_at)
}

/// What a send decides once its windows are reserved, inside the table's transaction: a reminder (`fires`) whose
/// recipients include one inside its window waits until the last of those windows ends ([`MemoryError::Deferred`]);
/// a send whose every recipient is inside its window is refused when the rule says so ([`MemoryError::Cooldown`]);
/// anything else is stored.
fn decide(
    rule: &CooldownRule,
    sender: &str,
    fires: bool,
    delivered: &[String],
    skipped: &[(String, Duration)],
) -> AfterWindows<MemoryError> {
    if fires && let Some((to, until)) = deferral(rule, skipped) {
        let until = fmt_time(until);
        return AfterWindows::Defer { not_before: until.clone(), refusal: MemoryError::Deferred { to, until } };
    }
    if delivered.is_empty()
        && rule.refuse_when_all_skipped
        && let Some(refused) = all_skipped(sender, rule, skipped)
    {
        return AfterWindows::Refuse(refused);
    }
    AfterWindows::Store
}

pub(super) async fn store(table: &MessageTable, m: &NewMessage) -> Result<StoredMessage> {
    let row = rows::NewMessage {
        sender: m.sender.clone(),
        target_type: m.target_type.as_str().to_owned(),
        target_id: m.target_id.clone(),
        content: m.content.clone(),
        metadata: m.metadata.clone(),
        session_id: m.session_id.clone(),
        created_at: m.created_at.clone(),
        hops: m.hops,
        recipients: m.recipients.clone(),
        via: m.via.clone(),
        fires: m.fires.clone(),
        outbox: m.target_type == TargetType::User,
    };
    let windows = m.cooldown.map(|rule| Windows {
        now: fmt_time(rule.now),
        // A window too long for the calendar ends at its end (never a panic).
        until: fmt_time(
            chrono::Duration::from_std(rule.window)
                .ok()
                .and_then(|window| rule.now.checked_add_signed(window))
                .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC),
        ),
        left: move |until: &str| window_left(until, rule.now),
    });
    let (rule, sender, fires) = (m.cooldown, m.sender.clone(), m.fires.is_some());
    let decided = move |delivered: &[String], skipped: &[(String, Duration)]| match &rule {
        Some(rule) => decide(rule, &sender, fires, delivered, skipped),
        None => AfterWindows::Store,
    };
    match table.send(row, windows, decided).await? {
        Sent::Written(w) => Ok(StoredMessage { id: w.id, delivered: w.delivered, skipped: w.skipped }),
        Sent::AlreadyFired => Err(MemoryError::AlreadyFired),
        Sent::Refused(refused) => Err(refused),
    }
}

pub(super) async fn add_reminder(table: &MessageTable, r: &NewReminder, max_pending: u32) -> Result<i64> {
    let row = rows::NewReminder {
        agent_id: r.agent_id.clone(),
        due_at: r.due_at.clone(),
        message: r.message.clone(),
        target_type: r.target.kind.as_str().to_owned(),
        target_id: r.target.id.clone(),
        created_at: r.created_at.clone(),
        hops: r.hops,
        session_id: r.session_id.clone(),
        asked_by: r.asked_by.clone(),
    };
    let refuse = move |pending: u64| {
        let pending = u32::try_from(pending).unwrap_or(u32::MAX);
        (pending >= max_pending).then_some(MemoryError::TooManyReminders { pending })
    };
    match table.add_reminder(row, refuse).await? {
        Added::Inserted(id) => Ok(id),
        Added::Refused(refused) => Err(refused),
    }
}

pub(super) async fn channel(table: &MessageTable, name: &str) -> Result<Option<ChannelRow>> {
    Ok(table.channel(name).await?.map(|c| (c.webhook_url, c.subscribers)))
}

pub(super) async fn inbox_first(table: &MessageTable, agent: &str) -> Result<Option<InboxRow>> {
    Ok(table.inbox_first(agent).await?.map(inbox_row))
}

pub(super) async fn inbox_take(table: &MessageTable, agent: &str, at: &str) -> Result<Option<InboxRow>> {
    Ok(table.inbox_take(agent, at).await?.map(inbox_row))
}

pub(super) async fn inbox_pending(table: &MessageTable, agent: &str) -> Result<Vec<InboxRow>> {
    Ok(table.inbox_pending(agent).await?.into_iter().map(inbox_row).collect())
}

pub(super) async fn outbox(table: &MessageTable, agent: &str, limit: usize) -> Result<Vec<OutboxRow>> {
    Ok(table.outbox(agent, limit).await?.into_iter().map(outbox_row).collect())
}

pub(super) async fn reminders(table: &MessageTable, agent: &str, include_fired: bool) -> Result<Vec<ReminderRow>> {
    Ok(table.reminders(agent, include_fired).await?.into_iter().map(reminder_row).collect())
}

pub(super) async fn due_reminders(
    table: &MessageTable,
    now: &str,
    agents: Option<&[String]>,
) -> Result<Vec<ReminderRow>> {
    Ok(table.due_reminders(now, agents).await?.into_iter().map(reminder_row).collect())
}

/// The table's hold on an inbox, as an [`super::InboxHold`] holds it.
pub(super) struct TableHold(pub(super) InboxLock);

impl HeldLock for TableHold {
    fn still_held(&mut self) -> BoxFuture<'_, bool> {
        self.0.still_held()
    }

    fn previous_may_run(&self) -> bool {
        self.0.previous_may_run()
    }

    fn release(&mut self) -> BoxFuture<'_, ()> {
        self.0.release()
    }
}

/// The [`MessageStore`](super::MessageStore) methods both stores answer alike, over their `table` field (inside
/// the trait's `impl`).
macro_rules! over_table {
    () => {
        fn register_agent<'a>(&'a self, agent: &'a str, at: &'a str) -> BoxFuture<'a, Result<()>> {
            Box::pin(async move { Ok(self.table.register_agent(agent, at).await?) })
        }

        fn agents<'a>(&'a self) -> BoxFuture<'a, Result<Vec<String>>> {
            Box::pin(async move { Ok(self.table.agents().await?) })
        }

        fn agent_known<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<bool>> {
            Box::pin(async move { Ok(self.table.agent_known(agent).await?) })
        }

        fn define_group<'a>(&'a self, name: &'a str, members: &'a [String]) -> BoxFuture<'a, Result<()>> {
            Box::pin(async move { Ok(self.table.define_group(name, members).await?) })
        }

        fn group_pairs<'a>(&'a self) -> BoxFuture<'a, Result<Vec<(String, String)>>> {
            Box::pin(async move { Ok(self.table.group_pairs().await?) })
        }

        fn group_members<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<String>>> {
            Box::pin(async move { Ok(self.table.group_members(name).await?) })
        }

        fn define_channel<'a>(&'a self, name: &'a str, webhook_url: Option<&'a str>) -> BoxFuture<'a, Result<()>> {
            Box::pin(async move { Ok(self.table.define_channel(name, webhook_url).await?) })
        }

        fn channels<'a>(&'a self) -> BoxFuture<'a, Result<Vec<String>>> {
            Box::pin(async move { Ok(self.table.channels().await?) })
        }

        fn channel<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<ChannelRow>>> {
            Box::pin(super::table::channel(&self.table, name))
        }

        fn subscribe<'a>(&'a self, channel: &'a str, agent: &'a str) -> BoxFuture<'a, Result<bool>> {
            Box::pin(async move { Ok(self.table.subscribe(channel, agent).await?) })
        }

        fn unsubscribe<'a>(&'a self, channel: &'a str, agent: &'a str) -> BoxFuture<'a, Result<()>> {
            Box::pin(async move { Ok(self.table.unsubscribe(channel, agent).await?) })
        }

        fn store<'a>(&'a self, message: &'a NewMessage) -> BoxFuture<'a, Result<StoredMessage>> {
            Box::pin(super::table::store(&self.table, message))
        }

        fn inbox_first<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Option<InboxRow>>> {
            Box::pin(super::table::inbox_first(&self.table, agent))
        }

        fn inbox_take<'a>(&'a self, agent: &'a str, at: &'a str) -> BoxFuture<'a, Result<Option<InboxRow>>> {
            Box::pin(super::table::inbox_take(&self.table, agent, at))
        }

        fn inbox_ack<'a>(&'a self, agent: &'a str, inbox_id: i64, at: &'a str) -> BoxFuture<'a, Result<()>> {
            Box::pin(async move { Ok(self.table.inbox_ack(agent, inbox_id, at).await?) })
        }

        fn inbox_pending<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<InboxRow>>> {
            Box::pin(super::table::inbox_pending(&self.table, agent))
        }

        fn outbox<'a>(&'a self, agent: &'a str, limit: usize) -> BoxFuture<'a, Result<Vec<OutboxRow>>> {
            Box::pin(super::table::outbox(&self.table, agent, limit))
        }

        fn add_reminder<'a>(&'a self, reminder: &'a NewReminder, max_pending: u32) -> BoxFuture<'a, Result<i64>> {
            Box::pin(super::table::add_reminder(&self.table, reminder, max_pending))
        }

        fn reminders<'a>(&'a self, agent: &'a str, include_fired: bool) -> BoxFuture<'a, Result<Vec<ReminderRow>>> {
            Box::pin(super::table::reminders(&self.table, agent, include_fired))
        }

        fn cancel_reminder<'a>(&'a self, agent: &'a str, id: i64) -> BoxFuture<'a, Result<bool>> {
            Box::pin(async move { Ok(self.table.cancel_reminder(agent, id).await?) })
        }

        fn cancel_reminders_of_others<'a>(&'a self, agents: &'a [String]) -> BoxFuture<'a, Result<u64>> {
            Box::pin(async move { Ok(self.table.cancel_reminders_of_others(agents).await?) })
        }

        fn count_reminders_of_others<'a>(&'a self, agents: &'a [String]) -> BoxFuture<'a, Result<u64>> {
            Box::pin(async move { Ok(self.table.count_reminders_of_others(agents).await?) })
        }

        fn due_reminders<'a>(
            &'a self,
            now: &'a str,
            agents: Option<&'a [String]>,
        ) -> BoxFuture<'a, Result<Vec<ReminderRow>>> {
            Box::pin(super::table::due_reminders(&self.table, now, agents))
        }

        fn next_due<'a>(&'a self, agents: Option<&'a [String]>) -> BoxFuture<'a, Result<Option<String>>> {
            Box::pin(async move { Ok(self.table.next_due(agents).await?) })
        }

        fn kind(&self) -> &'static str {
            self.table.dialect()
        }
    };
}

pub(super) use over_table;

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn rule(refuse_when_all_skipped: bool, defer: bool) -> CooldownRule {
        CooldownRule { now: Utc::now(), window: Duration::from_secs(30), refuse_when_all_skipped, defer }
    }

    #[test]
    fn a_reminder_waits_for_the_last_window_and_a_send_with_no_recipient_left_is_refused() {
        let skipped = vec![("b".to_owned(), Duration::from_secs(5)), ("c".to_owned(), Duration::from_secs(20))];
        let deferring = rule(false, true);
        let AfterWindows::Defer { not_before, refusal } = decide(&deferring, "a", true, &[], &skipped) else {
            panic!("a reminder inside a window waits")
        };
        let until = fmt_time(deferring.now + chrono::Duration::seconds(20));
        assert_eq!(not_before, until);
        assert!(matches!(refusal, MemoryError::Deferred { to, until: u } if to == "c" && u == until));
        // Without a reminder to defer, or with someone reached, the send goes on.
        assert!(matches!(decide(&deferring, "a", false, &[], &skipped), AfterWindows::Store));
        assert!(matches!(decide(&rule(true, false), "a", false, &["d".to_owned()], &skipped), AfterWindows::Store));

        let AfterWindows::Refuse(refused) = decide(&rule(true, false), "a", false, &[], &skipped) else {
            panic!("everyone inside their window")
        };
        assert!(matches!(refused, MemoryError::Cooldown { from, to, retry_after, .. }
            if from == "a" && to == "b" && retry_after == Duration::from_secs(5)));
        let channel = decide(&rule(false, false), "a", false, &[], &skipped);
        assert!(matches!(channel, AfterWindows::Store), "a channel still goes out");
        assert!(matches!(decide(&rule(true, false), "a", false, &[], &[]), AfterWindows::Store), "nobody to skip");
    }
}
