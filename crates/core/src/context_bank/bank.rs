//! One session's context bank: the items found in the user's words so far, shared by the session's clones.

use super::*;
use crate::event::{ContextBankUpdate, EventPayload};

/// Most items one session's bank keeps; later ones are dropped (the first mentions matter most).
pub const MAX_ITEMS: usize = 1000;

#[derive(Debug, Default)]
pub(super) struct BankState {
    pub(super) items: Vec<ContextItem>,
    pub(super) seen: HashSet<(ItemType, String, Option<String>)>,
    pub(super) authorizations: Vec<Authorization>,
    /// The items of the user's latest message, in the order written (each once), whether or not an earlier message
    /// had them too: what a walkthrough pre-fills from.
    pub(super) latest: Vec<ContextItem>,
    /// Counts the changes that are saved with the session (scans, spends, give-backs, clears).
    pub(super) version: u64,
}

/// One amount of one token that the user wrote in one message: it authorizes **one** action that moves value by
/// itself. The register a value-moving action reads its amount from carries the authorization's id (set by
/// `to_raw_amount`); the kernel spends it for the action's intent when the action goes out, so a second action —
/// in the same turn or a later one, on any front end — needs a new user message or the user's confirmation.
///
/// ```
/// use holdfast_core::{CoreServices, config::CoreConfig};
/// let ctx = CoreServices::new(CoreConfig::default()).unwrap().new_session("s");
/// ctx.context_bank.scan_input("swap 0.001 ETH for USDC");
/// let auth = ctx.context_bank.authorization("0.001", "ETH").unwrap();
/// assert_eq!(ctx.context_bank.spend(&auth.id, "intent-1"), Ok(true));
/// assert_eq!(ctx.context_bank.spend(&auth.id, "intent-1"), Ok(false), "a retry of the same intent");
/// assert!(ctx.context_bank.spend(&auth.id, "intent-2").is_err(), "another action");
/// ctx.context_bank.scan_input("and again: swap 0.001 ETH for USDC");
/// let fresh = ctx.context_bank.authorization("0.001", "ETH").unwrap();
/// assert_ne!(fresh.id, auth.id);
/// assert_eq!(ctx.context_bank.spend(&fresh.id, "intent-2"), Ok(true));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Authorization {
    /// Its id (`au_…`).
    pub id: String,
    /// The amount as the bank holds it (canonical decimal).
    pub amount: String,
    /// The token symbol it is bound to.
    pub symbol: String,
    /// When the user's message was read.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Every address the same message writes, as the bank holds them — in its quoted parts too, with a wrong checksum
    /// too, and every word shaped like an address that reads as none (`0x…` with a letter O for a zero, a homoglyph or
    /// an invisible mark inside, shown as written) and every word beginning with `0x` that is no address (the first
    /// part of one wrapped onto two lines) — except one it writes only as where something came from ("from
    /// 0x…"). A transfer of the amount goes by itself only when there is one: the user reads each of them as an
    /// address. An address from another message (a pasted one, an old one) makes a transfer wait for the user.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
    /// Those of `addresses` with a right checksum that the user's own words (outside quoted parts) write as where
    /// something goes, right after a recipient cue ("to 0x…", "pay 0x…"; see `ContextScanner`'s `as_a_recipient`):
    /// only such an address is a recipient the amount may go to without asking, and only when it is the message's one
    /// address and it names no address-book recipient. None (and no `names`) when the message holds a bidirectional
    /// control, which can draw it in another order than it is read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recipients: Vec<String>,
    /// The address book's names written in the same message (outside its quoted parts), as the book spells them: an
    /// address-book recipient the amount may go to without asking.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// The networks named in the same message (canonical names): when there are any, the amount goes by itself only
    /// on one of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<String>,
    /// The tokens the same message names in the user's own words (outside its quoted parts; symbols as the token
    /// table spells them), its amounts' tokens among them: a swap goes by itself only to buy one of them that is not
    /// the token sold ("I have 40 USDC. Swap it." names nothing to buy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<String>,
    /// Whether `networks` were named only inside the message's quoted parts: they narrow where the amount may go,
    /// but the user's own words named none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub networks_quoted: bool,
    /// Whether its message is the user's latest one. An amount from an earlier message (a pasted text that held
    /// one, an old request) moves nothing by itself once the user wrote again.
    #[serde(default)]
    pub latest: bool,
    /// Whether the amount was written only inside a quoted part of its message (a block quote, a fenced block, a
    /// double-quoted span): the user's words, but not a request. It moves nothing by itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quoted: bool,
    /// How the message's words hedge the amount, if they do ("don't", "did … go through?", "if …"; see
    /// [`super::Hedge`]): the user's words, but perhaps no request. It moves nothing by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedge: Option<super::Hedge>,
    /// Whether its message's own words bind more than one amount ("I have 40 USDC, send 10 USDC to alice", "swap
    /// 0.001 ETH for 5 USDC"): which of them goes where is not said, so none moves by itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub several: bool,
    /// What its message's own words ask to do with the amount, by the word before each place they write it ("send",
    /// "swap", "buy", "for"; see [`AmountRole`]): a transfer goes by itself only with [`AmountRole::Send`] among them,
    /// a swap only with [`AmountRole::Sell`]. Empty when no such word comes before it in its clause.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<AmountRole>,
    /// The rules its message was read by ([`READING`]): one saved by an earlier release, read by older rules (before
    /// hedges, several amounts and recipient cues), moves nothing by itself once restored.
    #[serde(default)]
    pub reading: u32,
    /// The intent of the action that spent it, once one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent_by: Option<String>,
}

/// The version of the rules by which the bank reads a message into authorizations. Bumped when a change to them would
/// have read an earlier message otherwise: 1 since hedging words, several amounts and recipient cues (2026-11-27); 2
/// since look-alikes of separators, digits of other scripts and currency signs make a number ambiguous, and the tokens
/// a message names are kept (2026-11-27); 3 since what the words ask to do with each amount ([`AmountRole`]) is kept
/// (2026-11-28).
pub const READING: u32 = 3;

/// One session's context bank. Clones share state.
///
/// Only the user's own words go in ([`ContextBank::scan_input`]); a tool asks it whether an amount of a token is
/// the user's ([`ContextBank::has_amount`]) before treating it as authorized.
///
/// ```
/// use holdfast_core::config::{NetworkTable, TokenTable};
/// use holdfast_core::{ContextBank, ContextScanner, EventBus, ItemType};
/// use std::sync::Arc;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let scanner = Arc::new(ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin())?);
/// let bank = ContextBank::new(scanner, EventBus::new("doc"));
/// bank.scan_input("swap 0.5 ETH for USDC on base, then send it to my 2 friends");
///
/// assert!(bank.has_amount("0.5", "ETH")); // bound: the number qualifies the token
/// assert!(!bank.has_amount("2", "USDC")); // bare: "2 friends" authorizes nothing
/// assert!(bank.items().iter().any(|i| i.item_type == ItemType::Network && i.value == "base"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ContextBank {
    pub(super) scanner: Arc<ContextScanner>,
    pub(super) state: Arc<RwLock<BankState>>,
    pub(super) events: EventBus,
}

impl ContextBank {
    /// An empty bank using `scanner`, publishing on `events`.
    pub fn new(scanner: Arc<ContextScanner>, events: EventBus) -> Self {
        Self { scanner, state: Arc::default(), events }
    }

    /// Scans one user-authored message. Returns the items that were new; publishes `context_bank.update` when any
    /// were.
    pub fn scan_input(&self, user_text: &str) -> Vec<ContextItem> {
        self.scan_pasted(user_text, &[])
    }

    /// [`ContextBank::scan_input`] for a message into which the user pasted the texts `pasted` (as the front end saw
    /// them arrive: a paste event of the web UI): a pasted text is read as quoted — the user's words, but no request
    /// ("please send 7 USDC to 0x…" pasted from someone else's message waits for the user) — unless it is a lone
    /// address or a lone number, which is the user's own.
    ///
    /// ```
    /// use holdfast_core::config::{NetworkTable, TokenTable};
    /// use holdfast_core::{ContextBank, ContextScanner, EventBus};
    /// use std::sync::Arc;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let bank = ContextBank::new(Arc::new(ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin())?), EventBus::new("doc"));
    /// let paste = "please send 7 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906".to_owned();
    /// bank.scan_pasted(&format!("is this legit? {paste}"), &[paste]);
    /// assert!(bank.authorization("7", "USDC").is_some_and(|a| a.quoted));
    /// // A pasted address after the user's own words is theirs.
    /// let address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906".to_owned();
    /// bank.scan_pasted(&format!("send 5 USDC to {address}"), &[address]);
    /// let five = bank.authorization("5", "USDC").ok_or("no authorization")?;
    /// assert!(!five.quoted && five.recipients.len() == 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn scan_pasted(&self, user_text: &str, pasted: &[String]) -> Vec<ContextItem> {
        let (found, found_roles) = self.scanner.scan_with_roles(user_text);
        // The items outside the parts that may be quoted (and the pasted ones); `None`: nothing in the message may be.
        let own_text = super::quoted::own_words_beside(user_text, super::quoted::pasted_parts(user_text, pasted));
        let own = own_text.as_deref().map(|own| self.scanner.scan_with_roles(own));
        let (own, own_roles) = match own {
            Some((items, roles)) => (Some(items), roles),
            None => (None, found_roles),
        };
        let mut names = self.scanner.recipient_names_in(own_text.as_deref().unwrap_or(user_text));
        let mut added = Vec::new();
        {
            let mut state = self.state.write();
            state.version += 1;
            // Every bound amount of this message is a fresh authorization, even one an earlier message also wrote.
            let now = chrono::Utc::now();
            // An address only in a quoted part is no recipient of the message's amounts; its networks are the ones
            // named outside the quoted parts, or, when none is, every one it names (the narrower).
            let asked = own.as_deref().unwrap_or(&found);
            let (mut addresses, mut recipients): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
            let whole = super::scanner::Said::new(user_text);
            let said = own_text.as_deref().map(super::scanner::Said::new);
            let said = said.as_ref().unwrap_or(&whole);
            // The message's addresses, which a transfer of its amount goes to by itself only when there is one: every
            // address it writes, in a quoted part or not, with a right checksum or not (a user reads each as an
            // address), except one it writes only as where something came from ("5 USDC from 0x…")…
            let mut counted = HashSet::new();
            for i in found.iter().filter(|i| i.item_type == ItemType::EthAddress) {
                if !counted.contains(&i.value) && !super::scanner::only_as_a_sender(&whole, &i.value) {
                    counted.insert(i.value.clone());
                    addresses.push(i.value.clone());
                }
            }
            // …and every word shaped like an address that reads as none (a letter O for a zero, a homoglyph, an
            // invisible mark inside): the user may take it for the recipient.
            addresses.extend(super::scanner::unreadable_addresses(user_text));
            // A recipient is one of them with a right checksum, in the user's own words, written as where something
            // goes ("to 0x…"), not only mentioned ("0x… got hacked", "to alice or 0x…").
            for i in asked {
                let valid = i.item_type == ItemType::EthAddress && !i.flags.contains(&ItemFlag::ChecksumMismatch);
                if valid
                    && counted.contains(&i.value)
                    && !recipients.contains(&i.value)
                    && super::scanner::as_a_recipient(said, &i.value)
                {
                    recipients.push(i.value.clone());
                }
            }
            // Bidirectional controls can draw the message in another order than it is read here ("0xA → 0xB" shown
            // as "0xB → 0xA"): nothing in it is a recipient by itself.
            if user_text.chars().any(crate::text::is_bidi_control) {
                recipients.clear();
                names.clear();
            }
            for earlier in &mut state.authorizations {
                earlier.latest = false;
            }
            let named = |items: &[ContextItem]| -> Vec<String> {
                items.iter().filter(|i| i.item_type == ItemType::Network).map(|i| i.value.clone()).collect()
            };
            let mut tokens: Vec<String> = Vec::new();
            for i in asked {
                let symbol = match (i.item_type, i.label.as_deref()) {
                    (ItemType::TokenSymbol, _) => i.value.as_str(),
                    (ItemType::Amount, Some(symbol)) => symbol,
                    _ => continue,
                };
                if !tokens.iter().any(|t| t == symbol) {
                    tokens.push(symbol.to_owned());
                }
            }
            let own_networks = named(asked);
            let networks_quoted = own_networks.is_empty() && !named(&found).is_empty();
            let networks = if own_networks.is_empty() { named(&found) } else { own_networks };
            // Words that speak of the amounts without asking for them hedge them all; so does a message that binds
            // more than one amount in its own words (which goes where is not said).
            let hedge = super::asked::message_hedge(user_text);
            let own_bound: HashSet<(&str, &str)> =
                bound_amounts(asked).into_iter().map(|(own, s)| (own.value.as_str(), s)).collect();
            let several = own_bound.len() > 1;
            // What the user's own words ask to do with each amount (every place they write it).
            let mut roles: HashMap<(&str, &str), Vec<AmountRole>> = HashMap::new();
            for (at, role) in &own_roles {
                if let Some(ContextItem { value, label: Some(symbol), .. }) = asked.get(*at) {
                    let of = roles.entry((value.as_str(), symbol.as_str())).or_default();
                    if !of.contains(role) {
                        of.push(*role);
                    }
                }
            }
            // Only the last `MAX_ITEMS` are kept: the earlier ones of a long message would be dropped at once.
            let bound = bound_amounts(&found);
            for (item, symbol) in bound.iter().skip(bound.len().saturating_sub(MAX_ITEMS)).copied() {
                let in_own_words = own_bound.contains(&(item.value.as_str(), symbol));
                let roles = roles.get(&(item.value.as_str(), symbol)).cloned().unwrap_or_default();
                state.authorizations.push(Authorization {
                    id: format!("au_{}", crate::confirm::random_id()),
                    amount: item.value.clone(),
                    symbol: symbol.to_owned(),
                    created_at: now,
                    addresses: addresses.clone(),
                    recipients: recipients.clone(),
                    names: names.clone(),
                    networks: networks.clone(),
                    tokens: tokens.clone(),
                    networks_quoted,
                    latest: true,
                    quoted: !in_own_words,
                    hedge: hedge.clone(),
                    several,
                    roles,
                    reading: READING,
                    spent_by: None,
                });
            }
            let excess = state.authorizations.len().saturating_sub(MAX_ITEMS);
            state.authorizations.drain(..excess);
            let mut latest: Vec<ContextItem> = Vec::new();
            for item in &found {
                if latest.len() < MAX_ITEMS && !latest.contains(item) {
                    latest.push(item.clone());
                }
            }
            state.latest = latest;
            for item in found {
                if state.items.len() >= MAX_ITEMS {
                    break;
                }
                let key = (
                    item.item_type,
                    item.value.clone(),
                    item.label.clone().filter(|_| item.item_type == ItemType::Amount),
                );
                if state.seen.insert(key) {
                    state.items.push(item.clone());
                    added.push(item);
                }
            }
        }
        if self.events.has_subscribers() {
            self.events.publish(EventPayload::ContextBankUpdate(ContextBankUpdate {
                items: self.items(),
                added: added.clone(),
                latest_message: self.latest_message(),
            }));
        }
        added
    }

    /// The items of the user's latest message, in the order written (empty before the first message, or when it had
    /// none).
    pub fn latest_message(&self) -> Vec<ContextItem> {
        self.state.read().latest.clone()
    }

    /// Every item, in order of first appearance.
    pub fn items(&self) -> Vec<ContextItem> {
        self.state.read().items.clone()
    }

    /// True when nothing has been extracted yet.
    pub fn is_empty(&self) -> bool {
        self.state.read().items.is_empty()
    }

    /// True when the user wrote `amount` of the token `symbol`: an amount item (compared exactly as decimals)
    /// bound to that symbol (ASCII case ignored) in one user message. A bare number — one with no token next to
    /// it, see "Binding an amount to its token" — authorizes no amount of any token.
    pub fn has_amount(&self, amount: &str, symbol: &str) -> bool {
        let Ok(wanted) = Decimal::parse("amount", amount) else { return false };
        let wanted = wanted.canonical();
        self.state.read().items.iter().any(|i| {
            i.item_type == ItemType::Amount
                && i.value == wanted
                && i.label.as_deref().is_some_and(|l| l.eq_ignore_ascii_case(symbol))
        })
    }

    /// The authorization for `amount` of `symbol` a value converted now carries: the newest one no action has
    /// spent, else the newest one (spent: the action reading it then waits for the user). `None` when the user never
    /// wrote that amount of that token.
    pub fn authorization(&self, amount: &str, symbol: &str) -> Option<Authorization> {
        let wanted = Decimal::parse("amount", amount).ok()?.canonical();
        let state = self.state.read();
        let mut matching =
            state.authorizations.iter().rev().filter(|a| a.amount == wanted && a.symbol.eq_ignore_ascii_case(symbol));
        let newest = matching.clone().next().cloned();
        matching.find(|a| a.spent_by.is_none()).cloned().or(newest)
    }

    /// The authorization `id`, if this bank holds it.
    pub fn authorization_by_id(&self, id: &str) -> Option<Authorization> {
        self.state.read().authorizations.iter().find(|a| a.id == id).cloned()
    }

    /// Every authorization, oldest first.
    pub fn authorizations(&self) -> Vec<Authorization> {
        self.state.read().authorizations.clone()
    }

    /// Spends authorization `id` for the action `intent`, atomically: `Ok(true)` when no action had spent it (this
    /// call spent it), `Ok(false)` when `intent` itself already had (a retry: nothing changed); otherwise `Err` with
    /// the authorization as it stands (spent by another action, or unknown to this bank: `spent_by` names why).
    pub fn spend(&self, id: &str, intent: &str) -> Result<bool, Box<Authorization>> {
        let mut state = self.state.write();
        let Some(a) = state.authorizations.iter_mut().find(|a| a.id == id) else {
            return Err(Box::new(Authorization {
                id: id.to_owned(),
                amount: String::new(),
                symbol: String::new(),
                created_at: chrono::Utc::now(),
                addresses: Vec::new(),
                recipients: Vec::new(),
                names: Vec::new(),
                networks: Vec::new(),
                tokens: Vec::new(),
                networks_quoted: false,
                latest: false,
                quoted: false,
                hedge: None,
                several: false,
                roles: Vec::new(),
                reading: READING,
                spent_by: Some("an authorization this session does not hold".into()),
            }));
        };
        match &a.spent_by {
            None => {
                a.spent_by = Some(intent.to_owned());
                state.version += 1;
                Ok(true)
            }
            Some(by) if by == intent => Ok(false),
            Some(_) => Err(Box::new(a.clone())),
        }
    }

    /// Records that authorization `id` was spent by the action `by` (another copy's, as the journal shows), whatever
    /// this bank held.
    pub fn spent_elsewhere(&self, id: &str, by: &str) {
        let mut state = self.state.write();
        if let Some(a) = state.authorizations.iter_mut().find(|a| a.id == id) {
            a.spent_by = Some(by.to_owned());
            state.version += 1;
        }
    }

    /// Gives authorization `id` back when `intent` spent it: that action did not go out after all.
    pub fn unspend(&self, id: &str, intent: &str) {
        let mut state = self.state.write();
        if let Some(a) = state.authorizations.iter_mut().find(|a| a.id == id && a.spent_by.as_deref() == Some(intent)) {
            a.spent_by = None;
            state.version += 1;
        }
    }

    /// The bank's saved part (its items, the latest message's, the authorizations) as JSON, taken under one lock so
    /// that a message scanned meanwhile is in all of it or none.
    pub(crate) fn saved_part(&self) -> serde_json::Result<String> {
        let state = self.state.read();
        crate::session_state::bank_part(&state.items, &state.latest, &state.authorizations)
    }

    /// How many saved-state changes this bank has had: a different number means its saved form changed.
    pub(crate) fn version(&self) -> u64 {
        self.state.read().version
    }

    /// Puts back items and authorizations an earlier process saved (see [`crate::session_state`]), keeping their
    /// order; an authorization read by older rules ([`READING`]) is no longer `latest`. Publishes nothing.
    pub(crate) fn restore(
        &self,
        items: Vec<ContextItem>,
        authorizations: Vec<Authorization>,
        latest: Vec<ContextItem>,
    ) {
        let mut state = self.state.write();
        state.latest = latest.into_iter().take(MAX_ITEMS).collect();
        // One read by older rules is no longer the latest request: it moves nothing by itself.
        state.authorizations.extend(authorizations.into_iter().map(|mut a| {
            if a.reading < READING {
                a.latest = false;
            }
            a
        }));
        let excess = state.authorizations.len().saturating_sub(MAX_ITEMS);
        state.authorizations.drain(..excess);
        for item in items {
            if state.items.len() >= MAX_ITEMS {
                break;
            }
            let key =
                (item.item_type, item.value.clone(), item.label.clone().filter(|_| item.item_type == ItemType::Amount));
            if state.seen.insert(key) {
                state.items.push(item);
            }
        }
    }

    /// Forgets everything.
    pub fn clear(&self) {
        let mut state = self.state.write();
        let version = state.version + 1;
        *state = BankState { version, ..BankState::default() };
        drop(state);
        self.events.publish(EventPayload::ContextBankUpdate(ContextBankUpdate {
            items: vec![],
            added: vec![],
            latest_message: vec![],
        }));
    }

    /// The agent-facing summary, or `None` when the bank is empty:
    ///
    /// ```text
    /// Addresses: 0x742d35Cc6634C0532925a3b844Bc9e7595f8FdF0
    /// Tokens: ETH (Ethereum), USDC (USD Coin)
    /// Networks: base (Base)
    /// Amounts: 0.001 ETH, 100 USDC
    /// Numbers without a token (authorize nothing): 2
    /// ```
    ///
    /// `Amounts` lists the amounts bound to a token; bare numbers are listed apart.
    pub fn format_for_agent(&self) -> Option<String> {
        let state = self.state.read();
        if state.items.is_empty() {
            return None;
        }
        let render = |t: ItemType, bound: bool| -> Vec<String> {
            state
                .items
                .iter()
                .filter(|i| i.item_type == t && (t != ItemType::Amount || i.label.is_some() == bound))
                .map(|i| match (t, &i.label) {
                    (ItemType::EthAddress, _) if i.flags.contains(&ItemFlag::ChecksumMismatch) => {
                        format!("{} (checksum mismatch: do not use without asking the user)", i.value)
                    }
                    (ItemType::Amount, Some(l)) => format!("{} {l}", i.value),
                    (ItemType::TokenSymbol | ItemType::Network, Some(l)) => format!("{} ({l})", i.value),
                    _ => i.value.clone(),
                })
                .collect()
        };
        let mut out = String::new();
        for (title, t, bound) in [
            ("Addresses", ItemType::EthAddress, true),
            ("Tokens", ItemType::TokenSymbol, true),
            ("Networks", ItemType::Network, true),
            ("Amounts", ItemType::Amount, true),
            ("Numbers without a token (authorize nothing)", ItemType::Amount, false),
        ] {
            let parts = render(t, bound);
            if !parts.is_empty() {
                let _ = writeln!(out, "{title}: {}", parts.join(", "));
            }
        }
        Some(out.trim_end().to_owned())
    }
}

/// The amounts of `items` bound to a token, each (amount, token) once, in the order written.
fn bound_amounts(items: &[ContextItem]) -> Vec<(&ContextItem, &str)> {
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let mut out: Vec<(&ContextItem, &str)> = Vec::new();
    for item in items {
        if let (ItemType::Amount, Some(symbol)) = (item.item_type, item.label.as_deref())
            && seen.insert((item.value.as_str(), symbol))
        {
            out.push((item, symbol));
        }
    }
    out
}
