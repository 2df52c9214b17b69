//! The log: `tracing` on stderr, with the crates that would log secrets held back.

/// Crates whose logs carry secrets, with the most they log unless the filter names them:
/// - whole URLs at debug, and RPC node URLs carry API keys (alloy's HTTP transport puts the node URL on a span;
///   reqwest logs redirect targets): `info`;
/// - MCP session ids at info (rmcp's "create new session"), which with a client's token reach its session: `warn`.
const SECRET_LOGGING_TARGETS: &[(&str, &str)] =
    &[("alloy_transport_http", "info"), ("reqwest", "info"), ("rmcp", "warn")];

/// Whether a directive of `spec` names `target` itself or a module inside it (`reqwest=debug`,
/// `alloy_transport_http::layer=trace`) — not a target that merely contains the text (`my_reqwest_shim=off`).
fn names_target(spec: &str, target: &str) -> bool {
    spec.split(',').any(|directive| {
        let name = directive.split(['=', '[']).next().unwrap_or_default().trim();
        name == target || name.strip_prefix(target).is_some_and(|rest| rest.starts_with("::"))
    })
}

/// Sets up the log: `tracing` events on stderr, as JSON lines when `json` (status lines too, see
/// [`crate::console`]) or text, filtered by `HOLDFAST_LOG`, else `RUST_LOG` (the usual `EnvFilter` syntax, e.g.
/// `RUST_LOG=info,holdfast_web3=debug`), else warnings only.
pub(crate) fn init(json: bool) {
    // HOLDFAST_LOG first, then RUST_LOG; a filter that does not parse falls through to the next.
    let spec = ["HOLDFAST_LOG", "RUST_LOG"]
        .into_iter()
        .filter_map(|var| std::env::var(var).ok())
        .find(|spec| tracing_subscriber::EnvFilter::try_new(spec).is_ok())
        .unwrap_or_else(|| "warn".to_owned());
    let mut filter = tracing_subscriber::EnvFilter::new(&spec);
    for (target, level) in SECRET_LOGGING_TARGETS.iter().filter(|(t, _)| !names_target(&spec, t)) {
        if let Ok(directive) = format!("{target}={level}").parse() {
            filter = filter.add_directive(directive);
        }
    }
    if json {
        crate::console::use_json();
        if !names_target(&spec, crate::console::TARGET)
            && let Ok(directive) = format!("{}=info", crate::console::TARGET).parse()
        {
            filter = filter.add_directive(directive);
        }
    }
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if json {
        builder.json().with_current_span(true).init();
    } else {
        // Colours only on a terminal: a log file gets plain text.
        builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init();
    }
}

#[cfg(test)]
mod tests {
    use super::names_target;

    #[test]
    fn only_a_directive_for_the_target_itself_lifts_the_url_clamp() {
        for spec in ["reqwest=debug", "info,reqwest=trace", "alloy_transport_http::layer=trace", "reqwest"] {
            assert!(names_target(spec, "reqwest") || names_target(spec, "alloy_transport_http"), "{spec}");
        }
        for spec in ["trace", "trace,my_reqwest_shim=off", "reqwest_middleware=debug", "debug,holdfast_web3=trace"] {
            assert!(!names_target(spec, "reqwest"), "{spec}");
        }
    }
}
