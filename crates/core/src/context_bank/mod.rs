//! The context bank: addresses, token symbols, networks and amounts extracted from the user's own words by code.
//!
//! It reads only user-authored text (invariant 11) — callers pass the user's message, never tool output or model
//! text. Scanning is one pass of a word scanner over the text, 64 bytes at a time: branch-free byte classes mark the
//! word starts, and a word that may be a known one is looked up — ASCII case folded, in O(1) — in a table built once
//! from every token symbol, network name and alias. A word that starts with a digit is read as a number or a `0x`
//! address, and a multi-word alias ("base mainnet") is tried from its first word, longest name first.
//!
//! # Matching rules
//! - **Addresses**: `0x` + exactly 40 hex digits, not touching other letters or digits. All-lower/all-upper forms
//!   are stored in EIP-55 form; a mixed-case address with a wrong checksum is kept as typed and flagged
//!   `checksum_mismatch`.
//! - **Token symbols** must stand as whole words (the characters either side are not letters, digits or `_`).
//!   A symbol matches when written as in the token table or in capitals (`USDC`, `cbETH`, `CBETH`). Lower-case or
//!   title-case forms (`usdc`, `Usdc`) match only for symbols of three or more characters that are not ordinary
//!   words — a symbol is treated as an ordinary word when the token table marks it `word_like` or it is in
//!   [`ORDINARY_WORDS`]. So "one" or "gas" in a sentence is never a token, while "ONE" is.
//! - **Networks**: names and aliases from the network table, whole words, any case.
//! - **Amounts**: `12`, `0.001`, `.5`, `1,000.25` standing alone (a number glued to letters, or joined by `-`, `/`
//!   or `:` to another number — dates, times, ranges, versions — is not an amount). Every amount is kept, but only
//!   an amount **bound** to a token authorizes anything ([`ContextBank::has_amount`], invariant 11), and only one
//!   that reads one way (below).
//!
//! # Amounts exactly as written
//! A number is what a person sees as one: digit runs joined by `.`, `,`, an invisible character or a character drawn
//! like a point, a space or a fraction bar (a non-ASCII character that is no letter or digit: `0\u{2024}5`, `1⁄2`;
//! and `'`: `1'500`). It binds only when
//! it reads one way in the user's convention — `.` separates the fraction and `,` groups thousands, or the other way
//! round with `[context_bank] decimal_comma = true`:
//! - the decimal separator at most once, the other one only as a thousands grouping (a first group of one to three
//!   digits not starting with `0`, then groups of three): `1,000.25` reads 1000.25, while `0,50`, `1,5`, `0,001`
//!   and `1,0000` do not say whether the comma groups or separates;
//! - no zero-width or other invisible character ([`crate::is_invisible`]) inside it or right before it (`0.\u{200b}5`
//!   renders as `0.5`, and reading the `5` alone would be ten times that);
//! - no separator of the other convention right before it (`,5` with a decimal point);
//! - no look-alike of a separator inside it or between it and a digit (of any script) or separator before it
//!   (`0\u{2024}001`, `0.\u{200a}01`, `٠٫5`, `０．5`: reading the digits after it alone would be ten to a thousand
//!   times what the user sees), and no decimal separator after a digit with only blanks between (`0.  5`);
//! - no currency sign beside it, before or after, blanks between (`$20 ETH`, `ETH 20 €` are values in a currency,
//!   not 20 ETH).
//!
//! Such a number is kept as an item flagged [`ItemFlag::Ambiguous`], shown as written, binds nothing, and the
//! tokens next to it bind to no other number. So no amount with origin `user` is ever another number than the
//! whole one the user sees.
//!
//! # Binding an amount to its token
//! An amount binds to the token symbol it qualifies, in the same message, only when the two are adjacent words:
//! - **after**: the symbol directly follows the number, glued (`0.5ETH`) or after one to three spaces or tabs
//!   (`0.5 ETH`, `100 usdc`);
//! - **before**: the symbol directly precedes the number after one to three spaces or tabs (`USDC 100`), and no
//!   number in front of it is already bound to it (in `5 ETH 100`, `ETH` qualifies `5`; `100` stays bare).
//!
//! Nothing else may sit between them: no other word, no punctuation (`100, USDC`, `USDC: 100`, `100-USDC` bind
//! nothing), no line break. "Symbol" means a token item by the case rules above (`usdc 5` binds, `gas 5` and
//! `one 5` do not), and a multi-word network name is no symbol (`1 OP mainnet`). A symbol qualifies at most one
//! number: a symbol right after a number is claimed by it. When a number has a symbol right after it *and* an
//! unclaimed symbol right before it (`USDC 100 ETH`), it is ambiguous and binds neither. So "swap 0.5 ETH for 100
//! USDC" binds `0.5 → ETH` and `100 → USDC`, while "send it to my 2 friends" keeps `2` as a bare amount.
//! Dollar values (`$20 of USDC`, `20 dollars of USDC`) are **not** bound: `$20 of ETH` is a value in dollars, not
//! an amount of the token, so `20` stays bare there; the user writes `20 USDC`.
//!
//! # Quoted parts
//! What the user only quoted — a pasted text asked about — is the user's words but no request. When a message may
//! quote anything (quote characters, a fence, a `>` block quote, an indented block; read to fail closed, see
//! `quoted.rs`), a bound amount written only inside those parts is kept with its [`Authorization`] flagged `quoted`,
//! and an address written only there is none of the authorization's recipients (though it counts among its
//! addresses); an action with either waits for the user. What the front end reports as pasted
//! ([`ContextBank::scan_pasted`]: the web UI's paste events) is read as quoted too, but a lone address or number.
//!
//! # Recipients
//! An address a message writes right after a recipient cue ("to 0x…", "pay 0x…", with a few filler words such as "my
//! wallet" between) is one of its authorizations' `recipients`; one it only mentions ("0x… was hacked") is one of
//! their `addresses` but no recipient, and one written only right after "from" is neither. Every other address a user
//! reads in the message counts among its `addresses` — one in a quoted part, one with a wrong checksum, a word shaped
//! like an address that reads as none (a letter O for a zero, a homoglyph, an invisible mark inside), a word beginning
//! with `0x` that is no address (the first part of one wrapped onto two lines) — though none of
//! them is a recipient, and a message holding a bidirectional control has no recipient at all. A transfer goes by
//! itself only to the message's one address, written as a recipient, when the message names no address-book
//! recipient too.
//!
//! # Words that hedge
//! "Don't send 5 USDC to alice", "did the 5 USDC to alice go through?", "I sent 5 USDC to alice" and "if ETH drops,
//! sell 0.5 ETH" write an amount without asking for it. A declining, past or conditional word ("no", "sent", "if")
//! anywhere in the message, or a question that is no request ("can you …?" is one), flags every [`Authorization`] of
//! the message with a [`Hedge`]; a message whose own words bind more than one amount flags them `several`. An action
//! with either waits for the user. The words are read to fail closed (see `asked.rs`).
//!
//! # What an amount is for
//! Each amount the user's own words bind is read with the nearest word before it in its clause that says what
//! happens to it ([`AmountRole`]: sent, sold or got; `roles.rs`); a transfer goes by itself only with an amount
//! written to be sent, a swap only with one written to be sold.
//!
//! # The items' JSON shape
//! Each item is `{"value", "item_type", "label"?, "flags"?}` with `item_type` one of `eth_address`,
//! `token_symbol`, `network`, `amount`. For an amount, `value` is the canonical decimal and `label` is the symbol it
//! is bound to (as written in the token table); a bare amount — shown for reference, authorizing nothing — has no
//! `label`. The same number can appear twice, once bare and once bound (`2` and `2 USDC`).
//!
//! Items are deduplicated and kept in order of first appearance.

use crate::address::check_address;
use crate::amount::{Decimal, MAX_AMOUNT_CHARS};
use crate::config::{NetworkTable, TokenTable};
use crate::event::EventBus;
use indexmap::IndexMap;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

mod asked;
mod bank;
mod blocks;
mod quoted;
mod roles;
mod rules;
mod scanner;
#[cfg(test)]
mod tests;
mod word_table;

pub use asked::{CONDITIONS, DECLINING, Hedge, HedgeKind, PAST, QUESTION_OPENERS, REQUEST_OPENERS, REQUEST_VERBS};
pub use bank::{Authorization, ContextBank, MAX_ITEMS, READING};
pub use roles::{AmountRole, GETTING_WORDS, SELLING_WORDS, UNSAYING_WORDS};
pub use rules::{ContextItem, ItemFlag, ItemType, ORDINARY_WORDS};
pub use scanner::{ADDRESS_FILLERS, ContextScanner, RECIPIENT_CUES, SENDING_VERBS, ScannerBuildError};
#[allow(clippy::wildcard_imports)]
use {blocks::*, rules::*, scanner::*, word_table::*};
