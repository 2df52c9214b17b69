//! `x402_fetch {preset, network, cache_as}`: fetches a configured preset and stores the result in a register.
//!
//! The model picks a preset name; the URL is built by code from configuration and registers (invariant 13). When the
//! server answers HTTP 402, the x402 client ([`crate::x402`]) pays it if — and only if — one offered requirement
//! passes the payment policy. A swap quote is validated by the store's validator as it is written (invariant 3) and
//! stored with origin `tool` (or `model` when a register it was built from was typed by the model).

use crate::Web3;
use crate::kernel::human;
use crate::presets::PresetKind;
use crate::quote::validate_quote;
use crate::x402::{PaymentSummary, PresetRequest};
use holdfast_core::registers::{RegisterWrite, ValueType, validate_key};
use holdfast_core::{AiTool, ErrorCode, Origin, ToolContext, ToolError, ToolKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// Largest response body accepted.
pub(super) const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// Parameters of `x402_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchInput {
    /// A configured preset: `swap_quote` or `token_price`.
    pub preset: String,
    /// The network, e.g. `base`.
    pub network: String,
    /// Register to store the result in (use the preset's own: `swap_quote`, `token_price`).
    pub cache_as: String,
}

/// A stored swap quote, summarised.
#[derive(Debug, Serialize, JsonSchema)]
pub struct QuoteSummary {
    /// What is sold, human units.
    pub sell: String,
    /// Expected amount bought, human units.
    pub buy: String,
    /// Minimum amount bought, human units.
    pub min_buy: String,
    /// True when an approval is needed first (`token_approve`).
    pub allowance_required: bool,
    /// True when the quoter reports the wallet's balance is too low.
    pub balance_insufficient: bool,
}

/// Result of `x402_fetch`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FetchOutput {
    /// The preset run.
    pub preset: String,
    /// The network.
    pub network: String,
    /// The URL built from configuration and registers.
    pub url: String,
    /// The register written.
    pub cached_as: String,
    /// The stored value's origin.
    pub origin: Origin,
    /// Registers the request was built from.
    pub derived_from: Vec<String>,
    /// For swap quotes: what the quote says.
    pub quote: Option<QuoteSummary>,
    /// The x402 payment made for this request, if the server asked for one.
    pub payment: Option<PaymentSummary>,
}

/// The `x402_fetch` tool.
#[derive(Debug, Clone)]
pub struct X402Fetch(pub Arc<Web3>);

impl AiTool for X402Fetch {
    type Input = FetchInput;
    type Output = FetchOutput;

    fn name(&self) -> &str {
        "x402_fetch"
    }

    fn description(&self) -> &str {
        "Fetch a configured preset (e.g. `swap_quote`, which reads wallet_address, sell_token, buy_token and \
         sell_amount) and store the result in a register. You choose the preset; the URL is built from \
         configuration and registers. If the server asks for an x402 payment, it is paid automatically when it \
         fits the payment policy (per-request cap, daily budget, allowed asset and payee); otherwise \
         `payment_refused` and nothing is paid. `payment_failed` means a payment was sent but bought nothing; do \
         not retry in a loop: after two such payments to one payee or server within an hour, it is refused. Swap quotes are validated before they are stored (`quote_rejected`)."
    }

    fn kind(&self) -> ToolKind {
        // It may pay (x402): value-moving, like every tool that signs.
        ToolKind::ValueMoving
    }

    fn examples(&self) -> Vec<Value> {
        vec![serde_json::json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"})]
    }

    async fn execute(&self, input: FetchInput, ctx: &ToolContext) -> Result<FetchOutput, ToolError> {
        validate_key("cache_as", &input.cache_as)?;
        let network = ctx.config.networks.resolve(&input.network)?.clone();
        let preset = self.0.presets().get(&input.preset)?;
        let built = preset.build(&input.preset, &network, &ctx.registers)?;

        // The register the answer goes to is checked before anything is fetched: a write refused after a paid
        // fetch would have paid for nothing (the model chooses `cache_as`).
        let origin = if built.model_tainted { Origin::Model } else { Origin::Tool };
        let write = RegisterWrite::new(&input.cache_as, Value::Null, origin, self.name())
            .preset(&input.preset)
            .derived_from(built.registers_read.clone());
        let holds = match preset.kind {
            PresetKind::SwapQuote => ValueType::SwapQuote,
            PresetKind::TokenPrice => ValueType::TokenPrice,
            PresetKind::Json => ValueType::Object,
        };
        ctx.registers.check_write(&write, holds)?;

        let request = PresetRequest { preset_name: &input.preset, preset, network: &network, url: &built.url };
        let fetched = crate::x402::fetch(&self.0, ctx, &request, MAX_RESPONSE_BYTES).await?;
        let payment = fetched.payment.clone();
        let stored = self.store(&input, &network, &built, (write, preset.kind), fetched, ctx).await;
        // An error after a payment says so: the model must not take it for "nothing happened" and pay again.
        stored.map_err(|e| match &payment {
            Some(paid) => crate::x402::after_payment(e, paid),
            None => e,
        })
    }
}

impl X402Fetch {
    /// Checks what was fetched (as a preset of `kind` answers) and stores it under `write`'s key.
    async fn store(
        &self,
        input: &FetchInput,
        network: &holdfast_core::config::NetworkConfig,
        built: &crate::presets::BuiltRequest,
        (write, kind): (RegisterWrite, PresetKind),
        fetched: crate::x402::Fetched,
        ctx: &ToolContext,
    ) -> Result<FetchOutput, ToolError> {
        let (status, body, payment) = (fetched.status, fetched.body, fetched.payment);
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
            return Err(ToolError::new(
                ErrorCode::UpstreamError,
                format!("preset `{}`: HTTP {}: {text}", input.preset, status.as_u16()),
            ));
        }
        let mut value: Value = serde_json::from_slice(&body).map_err(|e| {
            ToolError::new(
                ErrorCode::UpstreamError,
                format!("preset `{}`: the response is not JSON: {e}", input.preset),
            )
        })?;
        let Value::Object(map) = &mut value else {
            return Err(ToolError::new(
                ErrorCode::UpstreamError,
                format!("preset `{}`: the response is not a JSON object", input.preset),
            ));
        };
        if kind == PresetKind::SwapQuote {
            // The chain id and taker the request was built with, where the response does not echo them.
            map.entry("chainId").or_insert_with(|| Value::from(network.chain_id));
            if let Some(taker) = built.query.get("taker") {
                map.entry("taker").or_insert_with(|| Value::String(taker.clone()));
            }
            if map.get("liquidityAvailable") == Some(&Value::Bool(false)) {
                return Err(ToolError::new(
                    ErrorCode::UpstreamError,
                    format!("preset `{}`: the quoter has no liquidity for this pair and amount", input.preset),
                ));
            }
        }

        // Validate before anything is stored, whichever register the caller named.
        let quote = match kind {
            PresetKind::SwapQuote => {
                let q = validate_quote(&value, &ctx.registers, &ctx.config.networks, Some(network))?;
                Some(QuoteSummary {
                    sell: human(q.sell_amount, q.sell.decimals, &q.sell.symbol),
                    buy: human(q.buy_amount, q.buy.decimals, &q.buy.symbol),
                    min_buy: human(q.min_buy_amount, q.buy.decimals, &q.buy.symbol),
                    allowance_required: q.allowance_issue.is_some(),
                    balance_insufficient: !matches!(value.pointer("/issues/balance"), None | Some(Value::Null)),
                })
            }
            PresetKind::TokenPrice | PresetKind::Json => None,
        };
        let entry = ctx.registers.set(RegisterWrite { value, ..write })?;
        // What the payment bought is stored: it no longer counts against its payee (`kernel::payment::MAX_UNDELIVERED`).
        if let Some(paid) = &payment {
            crate::kernel::payment::delivered(&self.0, &paid.journal_id).await;
        }
        Ok(FetchOutput {
            preset: input.preset.clone(),
            network: network.name.clone(),
            url: built.url.to_string(),
            cached_as: input.cache_as.clone(),
            origin: entry.origin(),
            derived_from: built.registers_read.clone(),
            quote,
            payment,
        })
    }
}
