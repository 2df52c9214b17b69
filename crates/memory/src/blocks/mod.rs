//! Memory blocks: the block itself ([`block`]), one agent's view and only write path ([`memory`]), the one
//! permission check ([`permission`]), where blocks are stored ([`store`]) and how they are shown to the model
//! ([`render`]). Search over blocks is [`crate::search`]'s.

pub mod block;
pub mod memory;
pub mod permission;
pub mod render;
pub mod store;
