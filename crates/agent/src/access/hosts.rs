//! The `Host` values (and so the origins) that name a server: loopback with the bound port, the bound IP, and the
//! names the operator lists (`allowed_hosts`).

use super::AccessError;
use std::net::{IpAddr, SocketAddr};

/// One allowed host: a lower-case name or IP (IPv6 without brackets) and, optionally, the only port it may carry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostEntry {
    host: String,
    port: Option<u16>,
}

/// The `Host` values (and so the origins) that name this server.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    port: u16,
    bound_ip: Option<IpAddr>,
    extra: Vec<HostEntry>,
}

/// The loopback names every server answers to (with its bound port).
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

impl HostPolicy {
    /// The policy of a server bound to `bound` (the real address, after binding): loopback names with the bound
    /// port, the bound IP itself (unless it is the unspecified address), and each of `allowed_hosts` — `name`
    /// (with no port or the bound port, as behind a reverse proxy) or `name:port` (exactly that port).
    pub fn new(bound: SocketAddr, allowed_hosts: &[String]) -> Result<Self, AccessError> {
        let extra = allowed_hosts.iter().map(|entry| parse_entry(entry)).collect::<Result<Vec<_>, _>>()?;
        let ip = bound.ip();
        Ok(Self { port: bound.port(), bound_ip: (!ip.is_unspecified()).then_some(ip), extra })
    }

    /// The policy with no configured names.
    pub fn loopback(bound: SocketAddr) -> Self {
        let ip = bound.ip();
        Self { port: bound.port(), bound_ip: (!ip.is_unspecified()).then_some(ip), extra: Vec::new() }
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether a `Host` header value names this server.
    pub fn allows_host(&self, value: &str) -> bool {
        parse_authority(value).is_some_and(|(host, port)| self.allows(&host, port, 80))
    }

    /// Whether an `Origin` header value is this server's own origin (`http`/`https` and an allowed host).
    pub fn allows_origin(&self, value: &str) -> bool {
        let value = value.trim();
        let Some((scheme, rest)) = value.split_once("://") else { return false };
        let default_port = match scheme.to_ascii_lowercase().as_str() {
            "http" => 80,
            "https" => 443,
            _ => return false,
        };
        if rest.contains('/') {
            return false;
        }
        parse_authority(rest).is_some_and(|(host, port)| self.allows(&host, port, default_port))
    }

    fn allows(&self, host: &str, port: Option<u16>, default_port: u16) -> bool {
        let effective = port.unwrap_or(default_port);
        let own = LOOPBACK_NAMES.contains(&host)
            || self.bound_ip.is_some_and(|ip| host.parse::<IpAddr>().is_ok_and(|h| h == ip));
        if own && effective == self.port {
            return true;
        }
        self.extra.iter().any(|e| {
            e.host == host
                && match e.port {
                    Some(p) => effective == p,
                    None => port.is_none() || port == Some(self.port),
                }
        })
    }
}

/// `host[:port]` → (lower-case host without IPv6 brackets, port). `None` for anything else (user info, paths…).
pub(crate) fn parse_authority(value: &str) -> Option<(String, Option<u16>)> {
    let value = value.trim();
    if value.is_empty() || value.contains(['@', '/', '?', '#', ' ', '*']) {
        return None;
    }
    let authority: axum::http::uri::Authority = value.parse().ok()?;
    let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    if host.is_empty() {
        return None;
    }
    Some((host, authority.port_u16()))
}

fn parse_entry(entry: &str) -> Result<HostEntry, AccessError> {
    let invalid = |reason: &str| AccessError::InvalidHost { entry: entry.to_owned(), reason: reason.to_owned() };
    if entry.contains("://") {
        return Err(invalid("give a host name or host:port, not a URL"));
    }
    let (host, port) = parse_authority(entry).ok_or_else(|| invalid("not a host name or host:port"))?;
    if !host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'_')) {
        return Err(invalid("not a host name or host:port"));
    }
    Ok(HostEntry { host, port })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn loopback() -> SocketAddr {
        ([127, 0, 0, 1], 8700).into()
    }

    #[test]
    fn hosts_are_loopback_with_the_port_or_configured() {
        let policy = HostPolicy::new(loopback(), &["holdfast.lan".into(), "Proxy.Example:8443".into()]).unwrap();
        for ok in [
            "localhost:8700",
            "127.0.0.1:8700",
            "[::1]:8700",
            "LOCALHOST:8700",
            "holdfast.lan",
            "holdfast.lan:8700",
            "proxy.example:8443",
        ] {
            assert!(policy.allows_host(ok), "{ok}");
        }
        for bad in [
            "attacker.example",
            "attacker.example:8700",
            "localhost",
            "localhost:8701",
            "127.0.0.1",
            "holdfast.lan:9000",
            "proxy.example",
            "user@localhost:8700",
            "",
            "localhost.attacker.example:8700",
        ] {
            assert!(!policy.allows_host(bad), "{bad}");
        }
        for ok in ["http://localhost:8700", "http://127.0.0.1:8700", "https://holdfast.lan", "http://[::1]:8700"] {
            assert!(policy.allows_origin(ok), "{ok}");
        }
        for bad in [
            "null",
            "https://attacker.example",
            "http://localhost:8701",
            "http://localhost",
            "file://",
            "http://localhost:8700/x",
        ] {
            assert!(!policy.allows_origin(bad), "{bad}");
        }
        for bad in ["http://x.example", "a b", "*.example", ""] {
            assert!(HostPolicy::new(loopback(), &[bad.into()]).is_err(), "{bad:?}");
        }
        let lan = HostPolicy::loopback(([192, 168, 1, 5], 8700).into());
        assert!(lan.allows_host("192.168.1.5:8700") && !lan.allows_host("192.168.1.6:8700"));
        let any = HostPolicy::loopback(([0, 0, 0, 0], 8700).into());
        assert!(any.allows_host("localhost:8700") && !any.allows_host("0.0.0.0:8700"));
    }
}
