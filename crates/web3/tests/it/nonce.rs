//! Where a nonce stands on chain (`Chain::nonce_use`), on the devnet's anvil, which keeps only recent states.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::Env;
use alloy::network::{EthereumWallet, TransactionBuilder};
use alloy::primitives::{Address, U256, address};
use alloy::providers::ProviderBuilder;
use alloy::rpc::types::TransactionRequest;

const THIEF: Address = address!("0x000000000000000000000000000000000000dEaD");

/// On a node that keeps only recent states (the devnet's anvil prunes to 1,024), a recent transaction's nonce is
/// still proven used — the search starts at the head — and an old one is `unknown`, never misjudged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recent_nonce_is_proven_on_a_node_that_prunes_old_states() {
    use alloy::providers::Provider;
    use alloy::providers::ext::AnvilApi;
    use holdfast_web3::chain::NonceUse;
    let env = Env::start().await;
    let provider = env.devnet.provider();
    let dev = env.devnet.wallet_address;
    provider.anvil_mine(Some(3_000), None).await.unwrap();
    let nonce = provider.get_transaction_count(dev).await.unwrap();
    let key = ProviderBuilder::new()
        .wallet(EthereumWallet::from(env.devnet.signer().unwrap()))
        .connect_http(env.devnet.rpc_url.parse().unwrap());
    let sent = key.send_transaction(TransactionRequest::default().with_to(THIEF).with_value(U256::from(1u8))).await;
    sent.unwrap().get_receipt().await.unwrap();
    provider.anvil_mine(Some(200), None).await.unwrap();
    let network = env.ctx.config.networks.resolve("base").unwrap().clone();
    let chain = env.web3.chain(&network).unwrap();
    match chain.nonce_use(dev, nonce).await.unwrap() {
        NonceUse::UsedBy(_) => {}
        other => panic!("a recent use is proven: {other:?}"),
    }
    // Used more than 1,024 blocks back would need pruned states: no proof, and no guess.
}
