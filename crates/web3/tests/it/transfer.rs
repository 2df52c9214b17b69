//! `transfer` on the devnet: the recipient comes from the user's words or the address book, never typed by the model
//! without a confirmation that shows it; caps, idempotency and the journal come from the kernel.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::{Env, Tweaks};
use alloy::primitives::{Address, U256, address};
use holdfast_core::ErrorCode;
use holdfast_devnet::{NATIVE, USDC};
use serde_json::{Value, json};

const FRIEND: Address = address!("0x90F79bf6EB2c4f870365E785982E1f101E93b906");

pub(crate) fn to_register() -> Value {
    json!({"network": "base", "token_register": "transfer_token", "amount_register": "transfer_amount",
           "preset": null, "recipient_register": "recipient_address"})
}

fn to_alice() -> Value {
    json!({"network": "base", "token_register": "transfer_token", "amount_register": "transfer_amount",
           "preset": "alice", "recipient_register": null})
}

pub(crate) async fn prepare(env: &Env, user: &str, symbol: &str, amount: &str) {
    env.ctx.context_bank.scan_input(user);
    env.ok("token_lookup", json!({"symbol": symbol, "network": "base", "cache_as": "transfer_token"})).await;
    env.ok(
        "to_raw_amount",
        json!({"amount": amount, "token_register": "transfer_token", "cache_as": "transfer_amount"}),
    )
    .await;
}

async fn balance(env: &Env, token: Address, owner: Address) -> U256 {
    env.devnet.balance_of(token, owner).await.unwrap()
}

#[tokio::test]
async fn five_usdc_to_the_address_the_user_wrote_moves_exactly_once() {
    let env = Env::start().await;
    prepare(&env, "send 5 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906 on base", "USDC", "5").await;
    let picked = env.ok("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    assert_eq!(picked["origin"], "user");
    let (mine, theirs, nonce) = (env.balance(USDC).await, balance(&env, USDC, FRIEND).await, env.nonce().await);

    let out = env.ok("transfer", to_register()).await;
    assert_eq!(out["status"], "confirmed", "{out}");
    assert_eq!(out["summary"]["recipient"], FRIEND.to_checksum(None));
    assert_eq!(out["summary"]["recipient_source"], "user");
    assert_eq!(env.balance(USDC).await, mine - U256::from(5_000_000u64));
    assert_eq!(balance(&env, USDC, FRIEND).await, theirs + U256::from(5_000_000u64));
    assert_eq!(env.nonce().await, nonce + 1);

    let again = env.ok("transfer", to_register()).await;
    assert_eq!((&again["hash"], &again["journal_id"]), (&out["hash"], &out["journal_id"]), "the same transfer");
    assert_eq!(env.nonce().await, nonce + 1, "never a second one");
    let journal = env.web3.journal().for_session("session-1").await.unwrap();
    let transfers: Vec<_> = journal.iter().filter(|e| e.kind == holdfast_web3::EntryKind::Transfer).collect();
    assert_eq!(transfers.len(), 1);
    assert_eq!(transfers[0].status, holdfast_web3::EntryStatus::Confirmed);
    assert_eq!(transfers[0].to, FRIEND.to_checksum(None));
}

#[tokio::test]
async fn a_recipient_typed_by_the_model_waits_for_the_user_and_shows_the_full_address() {
    let env = Env::start().await;
    prepare(&env, "send 1 USDC to my friend", "USDC", "1").await;
    let typed = "0x8ba1f109551bD432803012645Ac136ddd64DBA72";
    env.ok("register_set", json!({"key": "recipient_address", "value": typed})).await;
    let nonce = env.nonce().await;
    let err = env.err("transfer", to_register()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    let details = err.details.unwrap();
    assert_eq!(details["summary"]["recipient"], typed);
    assert_eq!(details["summary"]["recipient_source"], "model");
    assert!(details["reason"].as_str().unwrap().contains("typed by the model"), "{details}");
    assert_eq!(env.nonce().await, nonce, "nothing sent");
    // A context_address with no address in the user's words has nothing to give.
    let err = env.err("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    assert_eq!(err.code, ErrorCode::RegisterMissing);
}

#[tokio::test]
async fn the_address_book_and_the_register_are_one_or_the_other() {
    let env = Env::start().await;
    prepare(&env, "send 0.001 ETH to alice", "ETH", "0.001").await;
    let both = json!({"network": "base", "token_register": "transfer_token", "amount_register": "transfer_amount",
                      "preset": "alice", "recipient_register": "recipient_address"});
    assert_eq!(env.err("transfer", both).await.code, ErrorCode::PresetConflict);
    let unknown = json!({"network": "base", "token_register": "transfer_token", "amount_register": "transfer_amount",
                         "preset": "mallory", "recipient_register": null});
    assert_eq!(env.err("transfer", unknown).await.code, ErrorCode::UnknownPreset);
    let before = balance(&env, NATIVE, FRIEND).await;
    let out = env.ok("transfer", to_alice()).await;
    assert_eq!(out["status"], "confirmed", "{out}");
    assert_eq!(out["summary"]["recipient_source"], "address book alice");
    assert_eq!(balance(&env, NATIVE, FRIEND).await, before + U256::from(1_000_000_000_000_000u64));
}

/// An amount the user only mentioned (what a swap should return) does not go to an address-book recipient by itself:
/// the message named nobody. Named, it goes.
#[tokio::test]
async fn an_amount_the_user_sent_nowhere_does_not_go_to_the_address_book_by_itself() {
    let env = Env::start().await;
    prepare(&env, "swap 0.001 ETH for 5 USDC", "USDC", "5").await;
    let (mine, theirs, nonce) = (env.balance(USDC).await, balance(&env, USDC, FRIEND).await, env.nonce().await);
    let err = env.err("transfer", to_alice()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    let reason = err.details.unwrap()["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("`alice`") && reason.contains("not the one name of the message"), "{reason}");
    assert_eq!((env.nonce().await, env.balance(USDC).await), (nonce, mine), "nothing sent");

    prepare(&env, "now send 5 USDC to Alice", "USDC", "5").await;
    let out = env.ok("transfer", to_alice()).await;
    assert_eq!(out["status"], "confirmed", "{out}");
    assert_eq!(balance(&env, USDC, FRIEND).await, theirs + U256::from(5_000_000u64));
}

/// An address the user wrote only as where something came from is no recipient of the message's amount: sending the
/// 5 USDC back to the sender ("I got 5 USDC from 0x…") waits for the user.
#[tokio::test]
async fn an_amount_does_not_go_by_itself_to_the_address_it_came_from() {
    let env = Env::start().await;
    prepare(&env, "I got 5 USDC from 0x90F79bf6EB2c4f870365E785982E1f101E93b906, nice", "USDC", "5").await;
    let picked = env.ok("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    assert_eq!(picked["origin"], "user", "the user's words still hold the address: {picked}");
    let (mine, nonce) = (env.balance(USDC).await, env.nonce().await);
    let err = env.err("transfer", to_register()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    let reason = err.details.unwrap()["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("is not the one address of the message that gave the amount"), "{reason}");
    assert_eq!((env.nonce().await, env.balance(USDC).await), (nonce, mine), "nothing sent");
}

/// "I have 40 USDC, send 10 USDC to 0x…": the model sends the 40. "send 5 USDC to alice or 0x…": the model picks
/// either. "0x… was hacked, the thief took 50 USDC": the model sends the 50 there. None goes by itself (before: 40 USDC
/// to the address, 5 USDC to whichever the model picked, 50 USDC to the hacked wallet).
#[tokio::test]
async fn an_amount_goes_by_itself_only_as_the_one_amount_to_the_one_recipient_of_its_message() {
    let env = Env::start().await;
    let other = "0x000000000000000000000000000000000000dEaD";
    let (mine, nonce) = (env.balance(USDC).await, env.nonce().await);
    prepare(&env, &format!("I have 40 USDC, send 10 USDC to {other}"), "USDC", "40").await;
    env.ok("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    let err = env.err("transfer", to_register()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    assert!(err.message.contains("more than one amount"), "{}", err.message);

    prepare(&env, &format!("send 5 USDC to alice or {other}"), "USDC", "5").await;
    env.ok("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    let err = env.err("transfer", to_register()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    assert!(err.message.contains("not the one address"), "{}", err.message);
    let err = env.err("transfer", to_alice()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    assert!(err.message.contains("not the one name"), "{}", err.message);
    assert_eq!((env.nonce().await, env.balance(USDC).await), (nonce, mine), "nothing sent");

    // An address the message only mentions: "0x… got hacked, the thief took 50 USDC" (before: 50 USDC to it).
    prepare(&env, &format!("{other} was hacked, the thief took 50 USDC"), "USDC", "50").await;
    env.ok("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    let err = env.err("transfer", to_register()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    assert!(err.message.contains("written as where it goes"), "{}", err.message);
    assert_eq!((env.nonce().await, env.balance(USDC).await), (nonce, mine), "nothing sent");

    // The honest control: one amount, one recipient.
    let theirs = balance(&env, USDC, FRIEND).await;
    prepare(&env, "send 5 USDC to alice", "USDC", "5").await;
    assert_eq!(env.ok("transfer", to_alice()).await["status"], "confirmed");
    assert_eq!(balance(&env, USDC, FRIEND).await, theirs + U256::from(5_000_000u64));
}

#[tokio::test]
async fn transfers_and_swaps_share_the_days_cap() {
    let tweaks = Tweaks {
        toml_replace: vec![("native_per_day = \"5\"".into(), "native_per_day = \"0.0025\"".into())],
        ..Tweaks::default()
    };
    let env = Env::start_with(tweaks).await;
    prepare(&env, "send 0.002 ETH to alice", "ETH", "0.002").await;
    assert_eq!(env.ok("transfer", to_alice()).await["status"], "confirmed");
    let nonce = env.nonce().await;
    // A new amount (a new intent): 0.002 + 0.001 is above 0.0025.
    prepare(&env, "and 0.001 ETH more to alice", "ETH", "0.001").await;
    let err = env.err("transfer", to_alice()).await;
    assert_eq!(err.code, ErrorCode::PolicyDenied, "{err:?}");
    assert!(err.message.contains("daily cap"), "{}", err.message);
    // A swap of the same asset counts against the same total.
    let quote = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert!(quote.get("error").is_none(), "{quote}");
    let err = env.err("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert_eq!(err.code, ErrorCode::PolicyDenied, "{err:?}");
    assert_eq!(env.nonce().await, nonce, "nothing sent past the cap");
}

#[tokio::test]
async fn an_amount_converted_for_another_token_waits_for_the_user() {
    let env = Env::start().await;
    // "5 USDC" becomes 5,000,000 base units; then the token register is switched to ETH.
    prepare(&env, "send 5 USDC to alice", "USDC", "5").await;
    env.ok("token_lookup", json!({"symbol": "ETH", "network": "base", "cache_as": "transfer_token"})).await;
    let nonce = env.nonce().await;
    let err = env.err("transfer", to_alice()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    assert!(err.details.unwrap()["reason"].as_str().unwrap().contains("not converted for the token"));
    assert_eq!(env.nonce().await, nonce);
}

#[tokio::test]
async fn in_a_turn_the_user_did_not_start_even_an_auto_approved_transfer_waits_for_the_user() {
    let env = Env::start().await;
    // Everything as in the auto-approved case: the user's own words, the user's own recipient …
    prepare(&env, "send 5 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906 on base", "USDC", "5").await;
    env.ok("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    // … but the turn running now was started by another agent.
    env.ctx.extensions.insert(holdfast_core::confirm::TurnStarter::Other("agent 'mallory'".into()));
    let (mine, nonce) = (env.balance(USDC).await, env.nonce().await);
    let err = env.err("transfer", to_register()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    let reason = err.details.unwrap()["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("started by agent 'mallory'"), "{reason}");
    assert_eq!((env.balance(USDC).await, env.nonce().await), (mine, nonce), "nothing moved");
    // The user's own turn: the same transfer runs without asking.
    env.ctx.extensions.insert(holdfast_core::confirm::TurnStarter::User);
    let out = env.ok("transfer", to_register()).await;
    assert_eq!(out["status"], "confirmed", "{out}");
}

/// The user approved a transfer another agent's turn asked for; before the approval's re-run, that turn repeats the
/// call: it is asked again (before: it used the user's approval), and the re-run, which carries the approval's id,
/// sends it.
#[tokio::test]
async fn an_approval_is_used_by_its_own_re_run_not_by_a_turn_that_repeats_the_call() {
    let env = Env::start().await;
    prepare(&env, "send 5 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906 on base", "USDC", "5").await;
    env.ok("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    let inbox = env.ctx.with_extension(holdfast_core::confirm::TurnStarter::Other("agent 'mallory'".into()));
    let nonce = env.nonce().await;
    let asked = env.registry.call("transfer", to_register(), &inbox).await.unwrap_err();
    assert_eq!(asked.code, ErrorCode::ConfirmationRequired, "{asked:?}");
    let id = asked.details.unwrap()["confirmation_id"].as_str().unwrap().to_owned();
    env.decide(&id, holdfast_core::UserDecision::Approve).unwrap();
    let again = env.registry.call("transfer", to_register(), &inbox).await.unwrap_err();
    assert_eq!(again.code, ErrorCode::ConfirmationRequired, "the repeat is asked again: {again:?}");
    assert_eq!(env.nonce().await, nonce, "nothing sent by the repeat");
    let out = env.rerun(&id, "transfer", to_register()).await.unwrap();
    assert_eq!(out["status"], "confirmed", "{out}");
    assert_eq!(env.nonce().await, nonce + 1);
}

#[tokio::test]
async fn one_amount_from_the_users_words_moves_once_per_message() {
    let env = Env::start().await;
    prepare(&env, "send 0.001 ETH to alice", "ETH", "0.001").await;
    let first = env.ok("transfer", to_alice()).await;
    assert_eq!(first["status"], "confirmed", "{first}");
    // The same call again is the same transaction, not a second authorization.
    let again = env.ok("transfer", to_alice()).await;
    assert_eq!(again["hash"], first["hash"]);
    // A second transfer of the same amount without a new message (a new intent: the amount register rewritten from
    // the same words) waits for the user.
    env.ok(
        "to_raw_amount",
        json!({"amount": "0.001", "token_register": "transfer_token", "cache_as": "transfer_amount"}),
    )
    .await;
    let nonce = env.nonce().await;
    let err = env.err("transfer", to_alice()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    let reason = err.details.unwrap()["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("already authorized one action"), "{reason}");
    assert_eq!(env.nonce().await, nonce, "nothing sent");
    // The user's next message authorizes one more.
    env.ctx.context_bank.scan_input("send 0.001 ETH to alice again");
    env.ok(
        "to_raw_amount",
        json!({"amount": "0.001", "token_register": "transfer_token", "cache_as": "transfer_amount"}),
    )
    .await;
    let second = env.ok("transfer", to_alice()).await;
    assert_eq!(second["status"], "confirmed", "{second}");
    assert_ne!(second["hash"], first["hash"]);
}
