//! What a value-moving action may read, and how much it trusts it: typed register reads, the one model-input rule,
//! the user's authorizations, the pinned spender, and the intent key that makes a retry idempotent.

use super::{fingerprint, human};
use crate::journal::EntryKind;
use alloy::primitives::{Address, keccak256};
use holdfast_core::config::NetworkConfig;
use holdfast_core::registers::{SharedEntry, ValueType};
use holdfast_core::{AmountRole, ErrorCode, Origin, ToolContext, ToolError};

/// The registers a swap (and its approval) is built from besides the quote: any of them typed by the model makes
/// the action wait for the user.
pub const SWAP_INPUTS: &[&str] = &["wallet_address", "sell_token", "buy_token", "sell_amount"];

/// Reads the register named by `field` as a swap quote: it must be declared with the swap-quote type (so the store
/// ran the quote validator on every write to it). Anything else — a price, a scratch register — is
/// `register_type_mismatch` before any RPC call. Freshness is checked by the pipeline, after the idempotency lookup.
pub fn quote_register(ctx: &ToolContext, field: &str, key: &str) -> Result<SharedEntry, ToolError> {
    ctx.registers.require_typed(field, key, ValueType::SwapQuote)
}

/// The input rule of invariant 7, for every action: when any of `entries` holds a `model`-origin (or model-derived)
/// value, the reason the action waits for the user, naming the registers the model typed ("`sell_amount` was typed
/// by the model, not taken from your words") — or, when it typed none of them itself, those built from what it typed.
pub fn model_typed(entries: &[(String, SharedEntry)]) -> Option<String> {
    let model: Vec<&(String, SharedEntry)> = entries.iter().filter(|(_, e)| e.origin() == Origin::Model).collect();
    let (typed, built): (Vec<_>, Vec<_>) = model.into_iter().partition(|(_, e)| e.provenance.derived_from.is_empty());
    let (keys, verb) =
        if typed.is_empty() { (built, "built from values the model typed") } else { (typed, "typed by the model") };
    let named: Vec<String> = keys.iter().map(|(k, _)| format!("`{k}`")).collect();
    let list = match named.as_slice() {
        [] => return None,
        [one] => format!("{one} was"),
        [init @ .., last] => format!("{} and {last} were", init.join(", ")),
    };
    Some(format!("{list} {verb}, not taken from your words"))
}

/// The entries of `keys` this session holds, with their keys.
pub(crate) fn entries(ctx: &ToolContext, keys: &[&str]) -> Vec<(String, SharedEntry)> {
    keys.iter().filter_map(|k| ctx.registers.get(k).map(|e| ((*k).to_owned(), e))).collect()
}

/// True when the amount in `amount_key` was converted for the token now held in `token_key`: derived from that
/// register (by `to_raw_amount`) after it was last written. Otherwise the amount's origin says nothing about this
/// token (50 USDC in base units is 0.5 of an 8-decimals token), and the action waits for the user.
pub fn amount_bound(ctx: &ToolContext, amount_key: &str, token_key: &str) -> bool {
    let (Some(amount), Some(token)) = (ctx.registers.get(amount_key), ctx.registers.get(token_key)) else {
        return false;
    };
    amount.provenance.derived_from.iter().any(|k| k == token_key)
        && token.provenance.created_at <= amount.provenance.created_at
}

/// The confirmation reason for an amount that is not bound to its token.
pub fn unbound_reason(amount_key: &str, token_key: &str) -> String {
    format!("`{amount_key}` was not converted for the token now in `{token_key}`: check the amount")
}

/// The only spender an approval (or a quote's allowance issue) may name on `network`: its pinned
/// `allowance_spender`. None pinned → `policy_denied`.
pub fn pinned_spender(network: &NetworkConfig) -> Result<Address, ToolError> {
    network.contracts.allowance_spender.ok_or_else(|| {
        ToolError::new(ErrorCode::PolicyDenied, format!("no allowance spender is pinned for {}", network.name))
    })
}

/// The idempotency key of using `entries` for `purpose` in this session: the same register writes (same key,
/// time and value) give the same intent, so a retry finds the transaction already journaled for it.
pub fn intent_key(ctx: &ToolContext, purpose: &str, entries: &[(&str, &SharedEntry)]) -> String {
    let mut parts: Vec<String> = vec![purpose.to_owned(), ctx.session_id.to_string()];
    for (key, entry) in entries {
        parts.push((*key).to_owned());
        parts.push(entry.provenance.created_at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true));
        parts.push(keccak256(entry.value.to_string().as_bytes()).to_string());
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    fingerprint(&refs)
}

/// The amount an action moves, as the user's authorization covers it: the register that holds it and its human form
/// for messages.
#[derive(Debug, Clone)]
pub(crate) struct UserAmount {
    /// The register's key.
    pub key: String,
    /// Its entry as read.
    pub entry: SharedEntry,
}

impl UserAmount {
    /// The amount in `key`, if the session holds it.
    pub(crate) fn read(ctx: &ToolContext, key: &str) -> Option<Self> {
        ctx.registers.get(key).map(|entry| Self { key: key.to_owned(), entry })
    }
}

/// Why an action that could run by itself needs the user after all, by the authorization its amount carries: a
/// `user` amount moves value by itself once per message the user wrote it in. `None`: it may (the authorization is
/// unspent, or spent by this same `intent` — a retry). A `model` amount is the taint rule's, not this one's.
pub(crate) fn authorization_reason(
    ctx: &ToolContext,
    amount: &UserAmount,
    (mv, kind): (&super::pipeline::Move, EntryKind),
    intent: &str,
    network: &str,
) -> Option<String> {
    if amount.entry.origin() != Origin::User {
        return None;
    }
    let shown = &human(mv.amount, mv.decimals, &mv.symbol);
    let Some(id) = amount.entry.provenance.authorization.as_deref() else {
        return Some(format!(
            "`{}` holds {shown} from your words, but no message of yours authorizes moving it (a value saved before \
             authorizations were kept)",
            amount.key
        ));
    };
    // The networks holdfast can act on: with more than one, an amount whose message named none binds none of them.
    let reachable = ctx.config.networks.iter().filter(|n| !n.rpc_urls.is_empty()).count();
    match ctx.context_bank.authorization_by_id(id) {
        Some(a) if a.spent_by.is_none() || a.spent_by.as_deref() == Some(intent) => {
            // What moves is what the message wrote, whatever the registers went through since (a token looked up
            // again while the amount was converted, an amount converted for another token).
            let written = holdfast_core::amount::to_base_units("amount", &a.amount, mv.decimals, &mv.symbol);
            if !a.symbol.eq_ignore_ascii_case(&mv.symbol) || written.ok() != Some(mv.amount) {
                Some(format!(
                    "`{}` holds {shown}, but the message of yours it came from wrote {} {}; it needs your approval",
                    amount.key, a.amount, a.symbol
                ))
            } else if !a.latest {
                Some(format!("{shown} is from an earlier message of yours, not your latest; it needs your approval"))
            } else if a.quoted {
                Some(format!("{shown} is in a part of your message you quoted, not one you asked for"))
            } else if let Some(hedge) = &a.hedge {
                Some(hedge.reason(shown))
            } else if a.several {
                Some(format!(
                    "your message wrote more than one amount, and which of them goes where it did not say; {shown} \
                     needs your approval"
                ))
            } else if let Some(wanted) = role_for(kind)
                && !a.roles.contains(&wanted)
            {
                // "swap 1 USDC for ETH and send some of it to 0x…" writes 1 USDC to be sold, not sent; "buy 0.001 ETH
                // with USDC" writes 0.001 ETH to be bought, not sold.
                Some(match a.roles.first() {
                    Some(said) => format!(
                        "your message wrote {shown} to {}, not to {}; it needs your approval",
                        said.as_verb(),
                        wanted.as_verb()
                    ),
                    None => format!(
                        "your message did not say to {} {shown} (no \"{}\" before it); it needs your approval",
                        wanted.as_verb(),
                        wanted.as_verb()
                    ),
                })
            } else if a.networks.len() > 1 {
                // "on ethereum, the base fee is fine": which network the amount goes on is not said.
                Some(format!(
                    "your message named {} for {shown}, and on which of them it did not say; {network} needs your \
                     approval",
                    a.networks.join(" and ")
                ))
            } else if !a.networks.is_empty() && !a.networks.iter().any(|n| n == network) {
                Some(format!("your message named {} for {shown}, not {network}", a.networks.join(" or ")))
            } else if (a.networks.is_empty() || a.networks_quoted) && reachable > 1 {
                Some(format!(
                    "your message named no network for {shown} in your own words, and holdfast reaches {reachable}; \
                     {network} needs your approval"
                ))
            } else {
                None
            }
        }
        Some(_) => Some(format!(
            "{shown} from your message already authorized one action; another one needs your approval or a new message"
        )),
        None => Some(format!("`{}`: the message that authorized {shown} is no longer in this session", amount.key)),
    }
}

/// What the user's words must ask to do with an amount for an action of `kind` to move it by itself: a transfer's
/// amount written to be sent, a swap's (and its approval's) to be sold.
fn role_for(kind: EntryKind) -> Option<AmountRole> {
    match kind {
        EntryKind::Transfer => Some(AmountRole::Send),
        EntryKind::Swap | EntryKind::Approval => Some(AmountRole::Sell),
        EntryKind::Reset | EntryKind::Payment | EntryKind::Fund => None,
    }
}

/// What spending an amount's authorization did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Spent {
    /// The amount carries no authorization to spend (not the user's).
    Nothing,
    /// This call spent authorization `id`: an action that does not go out after all gives it back ([`give_back`]).
    Now(String),
    /// The same intent had spent `id` already (a retry): nothing to give back.
    Before(String),
    /// Another action spent it: the action may not run by itself.
    Elsewhere(String),
}

impl Spent {
    /// The authorization's id, whoever spent it.
    pub(crate) fn id(&self) -> Option<&str> {
        match self {
            Self::Nothing => None,
            Self::Now(id) | Self::Before(id) | Self::Elsewhere(id) => Some(id),
        }
    }

    /// The id this call spent, to give back if the action does not go out.
    pub(crate) fn by_this_call(&self) -> Option<&str> {
        match self {
            Self::Now(id) => Some(id),
            _ => None,
        }
    }
}

/// Spends the authorization `amount` carries for `intent` (atomically in the session's bank).
pub(crate) fn spend_authorization(ctx: &ToolContext, amount: &UserAmount, intent: &str) -> Spent {
    let Some(id) = amount.entry.provenance.authorization.as_deref().filter(|_| amount.entry.origin() == Origin::User)
    else {
        return Spent::Nothing;
    };
    match ctx.context_bank.spend(id, intent) {
        Ok(true) => Spent::Now(id.to_owned()),
        Ok(false) => Spent::Before(id.to_owned()),
        Err(_) => Spent::Elsewhere(id.to_owned()),
    }
}

/// Gives back an authorization [`spend_authorization`] spent, when its action did not go out.
pub(crate) fn give_back(ctx: &ToolContext, spent: Option<&str>, intent: &str) {
    if let Some(id) = spent {
        ctx.context_bank.unspend(id, intent);
    }
}

/// The session note that names the intent which spent register `key` (see [`spend`]).
fn spent_note(key: &str) -> String {
    format!("spent_register:{key}")
}

/// Clears `key` after its intent settled on chain, remembering the intent in the session's notes (saved with the
/// session, so after a restart too), so that a retry on the now-empty register returns that transaction instead of
/// `register_missing`.
pub fn spend(ctx: &ToolContext, key: &str, intent: &str) {
    ctx.notes.set(&spent_note(key), serde_json::Value::String(intent.to_owned()));
    ctx.registers.remove(key);
}

/// The intent that spent `key` in this session, if the kernel cleared it.
pub fn spent_by(ctx: &ToolContext, key: &str) -> Option<String> {
    ctx.notes.get(&spent_note(key)).and_then(|v| v.as_str().map(str::to_owned))
}
