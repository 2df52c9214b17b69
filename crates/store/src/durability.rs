//! What an acknowledgement promises, per table: the one declaration `docs/reliability.md`'s table is made from (the
//! suite checks that the document holds exactly [`markdown_table`], and that every table a data dir or database has
//! is declared here).
//!
//! ```
//! let table = holdfast_store::durability::markdown_table();
//! assert!(table.starts_with("| data (tables) |"));
//! assert!(holdfast_store::durability::declared("session_parts"));
//! assert!(!holdfast_store::durability::declared("unknown"));
//! ```

/// One kind of data: its tables, when a write to them is acknowledged, and what that acknowledgement promises.
#[derive(Debug, Clone, Copy)]
pub struct Durable {
    /// The data, as the document names it (with its tables).
    pub data: &'static str,
    /// Its tables; a name ending in `*` covers every table starting with what comes before it.
    pub tables: &'static [&'static str],
    /// When a write is acknowledged.
    pub acknowledged: &'static str,
    /// What the acknowledgement promises.
    pub promise: &'static str,
}

/// Every table holdfast writes, by kind of data.
pub const DECLARED: &[Durable] = &[
    Durable {
        data: "journal (`journal`: value-moving entries and payments, which the caps are counted from)",
        tables: &["journal"],
        acknowledged: "a reservation, the signed bytes before broadcast, each status change",
        promise: "durable before the next step: the signed bytes are on disk before they leave the process, so a \
                  restart re-sends the identical transaction or finds it mined, never signs it anew",
    },
    Durable {
        data: "memory (`memory_blocks`, `memory_history` and their FTS5 indexes, `memory_embeddings`)",
        tables: &["memory_blocks", "memory_history", "memory_fts_*", "memory_embeddings"],
        acknowledged: "the tool's result (`update_memory`, `append_memory`, …)",
        promise: "the block, its history entry and its index rows, in one transaction",
    },
    Durable {
        data: "messages, groups, tasks, reminders (`messages_*`, `tasks_items`, `reminders_items`)",
        tables: &["messages_*", "tasks_items", "reminders_items"],
        acknowledged: "the tool's result",
        promise: "the row, in one transaction; a message with its inbox rows, the anti-loop windows it took and, for \
                  a reminder, its firing (or its wait, `not_before`)",
    },
    Durable {
        data: "sessions (`sessions`, `session_messages`, `session_links`)",
        tables: &["sessions", "session_messages", "session_links"],
        acknowledged: "the append returned; a link set",
        promise: "the history entry and the session's counters; a transport's link (an MCP session, an inbox \
                  conversation and the message it is answering)",
    },
    Durable {
        data: "session state (`session_state`: the revision; `session_parts`: one row per register with value, \
               origin, writer and time, one for the context bank, one for the confirmations, one for the session's \
               notes: the kernel's record of which intent spent a cleared register, the agent's active skills)",
        tables: &["session_state", "session_parts"],
        acknowledged: "every tool call that changed the session, a scanned user message, a decision",
        promise: "the parts that change changed, with the revision, in one transaction (a newer revision is never \
                  overwritten by an older one); a restart restores the session as it was, stale values stale and \
                  expired confirmations expired",
    },
    Durable {
        data: "migrations (`holdfast_migrations`; `memory_migrations` in files of older releases, read once)",
        tables: &["holdfast_migrations", "memory_migrations"],
        acknowledged: "at start, each step",
        promise: "a step and its record in one transaction: a start that dies half-way runs the step again, whole",
    },
    Durable {
        data: "event relay, PostgreSQL only (`holdfast_event_spill`, `holdfast_event_key`)",
        tables: &["holdfast_event_spill", "holdfast_event_key"],
        acknowledged: "before the notification that names it",
        promise: "nothing beyond the relay: a large event's body while it is relayed, and the key notifications are \
                  signed with",
    },
];

/// Whether `table` is declared.
pub fn declared(table: &str) -> bool {
    DECLARED.iter().flat_map(|d| d.tables).any(|t| match t.strip_suffix('*') {
        Some(prefix) => table.starts_with(prefix),
        None => table == *t,
    })
}

/// The document's table: a header, then one row per [`DECLARED`] entry.
pub fn markdown_table() -> String {
    let mut out =
        String::from("| data (tables) | acknowledged when | what the acknowledgement promises |\n|---|---|---|\n");
    for d in DECLARED {
        out.push_str(&format!("| {} | {} | {} |\n", d.data, d.acknowledged, d.promise));
    }
    out
}
