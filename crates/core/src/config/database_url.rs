//! `[storage] url`: the PostgreSQL database several instances share. The URL usually carries a password, so it is
//! never shown whole: [`DatabaseUrl`]'s `Debug` and `Display` keep the scheme, host, port and database name only.
//!
//! ```
//! use holdfast_core::config::DatabaseUrl;
//! let url = DatabaseUrl::parse("postgres://holdfast:s3cret@db.internal:5432/holdfast?sslmode=require").unwrap();
//! assert_eq!(url.to_string(), "postgres://db.internal:5432/holdfast");
//! assert!(!format!("{url:?}").contains("s3cret"));
//! assert!(DatabaseUrl::parse("mysql://x/y").is_err());
//! ```

/// The environment variable that selects the database, over `[storage] url`.
pub const DATABASE_URL_ENV: &str = "HOLDFAST_DATABASE_URL";

/// A `postgres://` (or `postgresql://`) URL, secret in everything but [`DatabaseUrl::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    /// Checks the scheme and that a host is named. The message never quotes the URL (it may hold a password).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err("the database URL must start with postgres:// (the URL is not shown: it may hold a password)"
                .to_owned());
        };
        if !scheme.eq_ignore_ascii_case("postgres") && !scheme.eq_ignore_ascii_case("postgresql") {
            return Err(format!(
                "the database URL's scheme is `{}`; holdfast stores in SQLite (no URL) or PostgreSQL (postgres://…)",
                scheme.chars().filter(char::is_ascii_alphanumeric).take(20).collect::<String>()
            ));
        }
        let host = Self::host_part(rest);
        if host.is_empty() && !rest.contains("host=") {
            return Err("the database URL names no host (postgres://USER:PASSWORD@HOST:PORT/DATABASE)".to_owned());
        }
        Ok(Self(text.to_owned()))
    }

    fn host_part(rest: &str) -> &str {
        let authority = rest.split(['/', '?']).next().unwrap_or_default();
        authority.rsplit_once('@').map_or(authority, |(_, host)| host)
    }

    /// The whole URL, password included: only for the driver that connects with it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (scheme, rest) = self.0.split_once("://").unwrap_or(("postgres", ""));
        let host = Self::host_part(rest);
        let path = rest.split('?').next().unwrap_or_default();
        let database = path.split_once('/').map(|(_, db)| db).unwrap_or_default();
        write!(f, "{scheme}://{host}/{database}")
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DatabaseUrl({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_shows_the_password() {
        for text in [
            "postgres://u:pw-1@h/db",
            "postgresql://u:pw-1@h:5/db?password=pw-1",
            "postgres://u:p%40w-1@h/db?sslmode=require&password=pw-1",
        ] {
            let url = DatabaseUrl::parse(text).unwrap();
            assert!(!url.to_string().contains("pw-1"), "{url}");
            assert!(!format!("{url:?}").contains("pw-1"));
            assert_eq!(url.expose(), text);
        }
        let bad = DatabaseUrl::parse("redis://u:pw-1@h").unwrap_err();
        assert!(!bad.contains("pw-1") && bad.contains("redis"), "{bad}");
        assert!(!DatabaseUrl::parse("u:pw-1@h/db").unwrap_err().contains("pw-1"));
        assert!(DatabaseUrl::parse("postgres:///db").is_err(), "no host");
    }
}
