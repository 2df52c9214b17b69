//! What an agent keeps for later: [`tasks`] it tracks across turns, [`reminders`] delivered when due, and [`when`]
//! (the times the model writes, parsed).

pub mod reminders;
pub mod task;
pub mod task_store;
pub mod tasks;
pub mod when;
