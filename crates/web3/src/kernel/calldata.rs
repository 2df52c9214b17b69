//! The calldata of the pinned swap target, decoded and checked argument by argument against the validated quote and
//! the registers — before anything is simulated, so a check never rests on a simulation alone.
//!
//! The network's `contracts.swap_abi` says what the target takes:
//!
//! - `holdfast-venue` (the devnet's venue): `sell(sellToken, buyToken, sellAmount, minBuyAmount, recipient)` — the
//!   sell token and amount are the quote's (the registers'), the buy token is the quote's, the minimum is at least the
//!   quote's `minBuyAmount`, and the recipient is the wallet;
//! - `0x-allowance-holder` (Base's 0x AllowanceHolder): `exec(operator, token, amount, target, data)` — `operator`
//!   and `target` are one settlement contract on the network's allow-list (`contracts.settlers`, or the current
//!   taker-submitted Settler 0x's registry names on chain), `token` and `amount` are the sell token and amount, and
//!   `data` is that Settler's `execute((recipient, buyToken, minAmountOut), actions, zid)` with the wallet as
//!   recipient, the buy token, and a minimum at least the quote's `minBuyAmount`. The route (`actions`) is not
//!   decoded: the exact simulation's balance deltas check what it does.
//!
//! Any other selector, a network without a `swap_abi`, or any mismatch is `quote_rejected`, naming the argument.

use crate::chain::Chain;
use crate::quote::ValidQuote;
use alloy::primitives::{Address, U256};
use alloy::sol;
use alloy::sol_types::SolCall;
use holdfast_core::config::{NATIVE_TOKEN_ADDRESS, NetworkConfig, SwapAbi};
use holdfast_core::{ErrorCode, ToolError};

sol! {
    /// The devnet venue's one entry point.
    interface IHoldfastVenue {
        function sell(address sellToken, address buyToken, uint256 sellAmount, uint256 minBuyAmount, address recipient) external payable returns (uint256);
    }

    /// 0x's AllowanceHolder entry point.
    interface IAllowanceHolder {
        function exec(address operator, address token, uint256 amount, address target, bytes data) external payable returns (bytes memory);
    }

    /// 0x Settler's taker-submitted entry point.
    interface ISettler {
        struct AllowedSlippage {
            address recipient;
            address buyToken;
            uint256 minAmountOut;
        }
        function execute(AllowedSlippage slippage, bytes[] actions, bytes32 zidAndAffiliate) external payable returns (bool);
    }

    /// 0x's Settler registry: token 2's owner is the current taker-submitted Settler.
    interface ISettlerRegistry {
        function ownerOf(uint256 tokenId) external view returns (address);
    }
}

/// The registry's token of taker-submitted Settlers.
const TAKER_SUBMITTED: u8 = 2;

/// What the calldata says, for the summary the user sees.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct DecodedCall {
    /// The function called (`sell`, `exec → execute`).
    pub function: String,
    /// Who receives what is bought.
    pub recipient: String,
    /// The minimum output the call itself enforces, base units.
    pub min_out: String,
    /// The settlement contract called through, for an AllowanceHolder `exec`.
    pub settler: Option<String>,
}

fn reject(what: impl std::fmt::Display) -> ToolError {
    ToolError::new(ErrorCode::QuoteRejected, format!("`transaction.data`: {what}"))
}

fn expect_eq<T: PartialEq + std::fmt::Display>(arg: &str, got: T, want: T, what: &str) -> Result<(), ToolError> {
    if got == want { Ok(()) } else { Err(reject(format!("`{arg}` is {got}, not {what} {want}"))) }
}

/// Who must receive what is bought, as a refusal names it.
const WHO: &str = "the wallet (or its smart account)";

/// Decodes and checks the quote's calldata for `network`'s pinned target; `wallet` (the smart account, when the key
/// signs for one) must receive what is bought.
pub async fn check_swap(
    chain: &Chain,
    network: &NetworkConfig,
    q: &ValidQuote,
    wallet: Address,
) -> Result<DecodedCall, ToolError> {
    let abi = network.contracts.swap_abi.ok_or_else(|| {
        reject(format!(
            "{} has no `contracts.swap_abi`: holdfast cannot decode what the swap target would do, so it sends \
             nothing",
            network.name
        ))
    })?;
    let data = q.data.as_ref();
    let selector: [u8; 4] = data.get(..4).and_then(|s| s.try_into().ok()).unwrap_or_default();
    let unknown = || {
        reject(format!(
            "selector 0x{} is not a call holdfast can check on {}'s swap target ({})",
            alloy::primitives::hex::encode(selector),
            network.name,
            abi.as_str()
        ))
    };
    match abi {
        SwapAbi::HoldfastVenue => {
            if selector != IHoldfastVenue::sellCall::SELECTOR {
                return Err(unknown());
            }
            let call = IHoldfastVenue::sellCall::abi_decode_with_config(data, strict())
                .map_err(|e| reject(format!("undecodable sell: {e}")))?;
            expect_eq("sellToken", call.sellToken, q.sell.address, "the sell token")?;
            expect_eq("buyToken", call.buyToken, q.buy.address, "the buy token")?;
            expect_eq("sellAmount", call.sellAmount, q.sell_amount, "the sell amount")?;
            at_least("minBuyAmount", call.minBuyAmount, q.min_buy_amount)?;
            expect_eq("recipient", call.recipient, wallet, WHO)?;
            Ok(DecodedCall {
                function: "sell".into(),
                recipient: call.recipient.to_checksum(None),
                min_out: call.minBuyAmount.to_string(),
                settler: None,
            })
        }
        SwapAbi::ZeroExAllowanceHolder => {
            if selector != IAllowanceHolder::execCall::SELECTOR {
                return Err(unknown());
            }
            let exec = IAllowanceHolder::execCall::abi_decode_with_config(data, strict())
                .map_err(|e| reject(format!("undecodable exec: {e}")))?;
            expect_eq("operator", exec.operator, exec.target, "the target")?;
            let allowed = allowed_settlers(chain, network).await?;
            if !allowed.contains(&exec.target) {
                let shown: Vec<String> = allowed.iter().map(|a| a.to_checksum(None)).collect();
                return Err(reject(format!(
                    "`target` {} is not an allowed settlement contract on {} ({})",
                    exec.target,
                    network.name,
                    if shown.is_empty() {
                        "none is configured or named by the registry".into()
                    } else {
                        shown.join(", ")
                    }
                )));
            }
            let token =
                if q.sell.is_native() && exec.token == Address::ZERO { NATIVE_TOKEN_ADDRESS } else { exec.token };
            expect_eq("token", token, q.sell.address, "the sell token")?;
            expect_eq("amount", exec.amount, q.sell_amount, "the sell amount")?;
            let inner = exec.data.as_ref();
            if inner.get(..4) != Some(&ISettler::executeCall::SELECTOR[..]) {
                return Err(reject("the settlement call is not the Settler's taker-submitted `execute`"));
            }
            let settle = ISettler::executeCall::abi_decode_with_config(inner, strict())
                .map_err(|e| reject(format!("undecodable execute: {e}")))?;
            let slippage = settle.slippage;
            expect_eq("slippage.recipient", slippage.recipient, wallet, WHO)?;
            expect_eq("slippage.buyToken", slippage.buyToken, q.buy.address, "the buy token")?;
            at_least("slippage.minAmountOut", slippage.minAmountOut, q.min_buy_amount)?;
            Ok(DecodedCall {
                function: "exec → execute".into(),
                recipient: slippage.recipient.to_checksum(None),
                min_out: slippage.minAmountOut.to_string(),
                settler: Some(exec.target.to_checksum(None)),
            })
        }
    }
}

fn at_least(arg: &str, got: U256, quote_min: U256) -> Result<(), ToolError> {
    if got >= quote_min {
        Ok(())
    } else {
        Err(reject(format!("`{arg}` is {got}, below the quote's minBuyAmount {quote_min}")))
    }
}

/// The settlement contracts an `exec` may call on `network`: the configured ones, and the registry's current one when
/// every configured RPC node names the same (one node alone cannot make an attacker's contract a Settler).
pub async fn allowed_settlers(chain: &Chain, network: &NetworkConfig) -> Result<Vec<Address>, ToolError> {
    let mut allowed = network.contracts.settlers.clone();
    if let Some(registry) = network.contracts.settler_registry {
        let call = ISettlerRegistry::ownerOfCall { tokenId: U256::from(TAKER_SUBMITTED) };
        let answers = chain.call_each(registry, call.abi_encode().into()).await;
        // A reverting registry means Settler is paused: then it names none.
        let named: Vec<Option<Address>> = answers
            .iter()
            .map(|(_, out)| {
                out.as_ref().ok().and_then(|out| ISettlerRegistry::ownerOfCall::abi_decode_returns(out).ok())
            })
            .collect();
        if let Some(Some(current)) = named.first()
            && *current != Address::ZERO
            && named.iter().all(|n| *n == Some(*current))
        {
            allowed.push(*current);
        }
    }
    Ok(allowed)
}

/// Strict ABI decoding for the calls a swap sends (the venue's `sell`, AllowanceHolder's `exec` and the Settler's
/// `execute` inside it): no bytes after the encoding, canonical offsets and padding. Bytes a hostile quoter appends
/// would be ignored by the contract but paid for in gas on every swap. The Settler's `actions` are not decoded (their
/// size, like any route's gas, is bounded by `auto_max_gas`).
fn strict() -> alloy::sol_types::abi::AbiDecoderConfig {
    alloy::sol_types::abi::AbiDecoderConfig::new().strict(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quote::TokenRef;
    use alloy::primitives::{Bytes, address};
    use holdfast_core::config::NetworkTable;

    const WALLET: Address = address!("0x00000000000000000000000000000000000a11ce");
    const SETTLER: Address = address!("0x00000000000000000000000000000000005e771e");
    const USDC: Address = address!("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");

    fn network(abi: Option<SwapAbi>) -> NetworkConfig {
        let mut n = NetworkTable::builtin().resolve("base").unwrap().clone();
        n.rpc_urls = vec!["http://127.0.0.1:9".into()];
        n.contracts.swap_abi = abi;
        n.contracts.settlers = vec![SETTLER];
        n.contracts.settler_registry = None;
        n
    }

    fn quote(network: &NetworkConfig, data: Vec<u8>) -> ValidQuote {
        let token = |address, symbol: &str, decimals| TokenRef {
            address,
            symbol: symbol.into(),
            decimals,
            network: "base".into(),
        };
        ValidQuote {
            network: network.clone(),
            sell: token(USDC, "USDC", 6),
            buy: token(NATIVE_TOKEN_ADDRESS, "ETH", 18),
            taker: WALLET,
            sell_amount: U256::from(10_000_000u64),
            buy_amount: U256::from(3_000_000_000_000_000u64),
            min_buy_amount: U256::from(2_970_000_000_000_000u64),
            to: network.contracts.swap_target.unwrap(),
            data: Bytes::from(data),
            value: U256::ZERO,
            allowance_issue: None,
        }
    }

    fn exec(f: impl Fn(&mut IAllowanceHolder::execCall, &mut ISettler::executeCall)) -> Vec<u8> {
        let mut settle = ISettler::executeCall {
            slippage: ISettler::AllowedSlippage {
                recipient: WALLET,
                buyToken: NATIVE_TOKEN_ADDRESS,
                minAmountOut: U256::from(2_970_000_000_000_000u64),
            },
            actions: vec![Bytes::from(vec![1, 2, 3])],
            zidAndAffiliate: Default::default(),
        };
        let mut call = IAllowanceHolder::execCall {
            operator: SETTLER,
            token: USDC,
            amount: U256::from(10_000_000u64),
            target: SETTLER,
            data: Bytes::new(),
        };
        f(&mut call, &mut settle);
        if call.data.is_empty() {
            call.data = settle.abi_encode().into();
        }
        call.abi_encode()
    }

    async fn check(network: &NetworkConfig, data: Vec<u8>) -> Result<DecodedCall, ToolError> {
        let chain = Chain::new(network).unwrap();
        check_swap(&chain, network, &quote(network, data), WALLET).await
    }

    #[tokio::test]
    async fn an_allowance_holder_exec_is_checked_argument_by_argument() {
        let net = network(Some(SwapAbi::ZeroExAllowanceHolder));
        let ok = check(&net, exec(|_, _| {})).await.unwrap();
        assert_eq!((ok.function.as_str(), ok.settler), ("exec → execute", Some(SETTLER.to_checksum(None))));
        let other = address!("0x000000000000000000000000000000000000dEaD");
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("`operator`", exec(|c, _| c.operator = other)),
            ("`target`", exec(|c, _| (c.operator, c.target) = (other, other))),
            ("`token`", exec(|c, _| c.token = other)),
            ("`amount`", exec(|c, _| c.amount = U256::from(3_000_000_000u64))),
            ("`slippage.recipient`", exec(|_, s| s.slippage.recipient = other)),
            ("`slippage.buyToken`", exec(|_, s| s.slippage.buyToken = USDC)),
            ("`slippage.minAmountOut`", exec(|_, s| s.slippage.minAmountOut = U256::from(1u8))),
            ("not the Settler's", exec(|c, _| c.data = Bytes::from(vec![0xde, 0xad, 0xbe, 0xef]))),
            ("selector 0xa9059cbb", {
                let mut d = exec(|_, _| {});
                d[..4].copy_from_slice(&[0xa9, 0x05, 0x9c, 0xbb]);
                d
            }),
            // Bytes after an encoding (paid for in gas, ignored by the contract): after `exec`'s, and after the
            // `execute` inside it.
            ("undecodable exec", {
                let mut d = exec(|_, _| {});
                d.extend_from_slice(&[0xff; 64]);
                d
            }),
            (
                "undecodable execute",
                exec(|c, s| {
                    let mut inner = s.abi_encode();
                    inner.extend_from_slice(&[0xff; 64]);
                    c.data = Bytes::from(inner);
                }),
            ),
        ];
        for (needle, data) in cases {
            let err = check(&net, data).await.unwrap_err();
            assert_eq!(err.code, ErrorCode::QuoteRejected, "{needle}");
            assert!(err.message.contains(needle), "{needle}: {}", err.message);
        }
        // The devnet's venue calldata means nothing to an AllowanceHolder network, and no decoder refuses everything.
        let sell = IHoldfastVenue::sellCall {
            sellToken: USDC,
            buyToken: NATIVE_TOKEN_ADDRESS,
            sellAmount: U256::from(10_000_000u64),
            minBuyAmount: U256::from(2_970_000_000_000_000u64),
            recipient: WALLET,
        }
        .abi_encode();
        assert!(check(&net, sell.clone()).await.unwrap_err().message.contains("is not a call holdfast can check"));
        assert!(check(&network(None), sell.clone()).await.unwrap_err().message.contains("no `contracts.swap_abi`"));
        assert_eq!(check(&network(Some(SwapAbi::HoldfastVenue)), sell).await.unwrap().function, "sell");
    }
}
