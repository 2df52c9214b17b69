//! Search over memory: query terms, hits, snippets and the merge of value and history hits.
//!
//! Ranking, as documented in the crate README:
//! - **text** (always): SQLite FTS5 with the `porter unicode61` tokenizer over every block's current value and every
//!   earlier value kept in the history, ranked by BM25 (on PostgreSQL: its text search, configured alike, ranked by
//!   `ts_rank`, normalized by the document's length). The query is split into words, each quoted, joined with `OR`: blocks matching more (and rarer)
//!   words rank higher. One hit per block: its current value when that
//!   matches, otherwise its best-matching earlier value (scored at [`HISTORY_WEIGHT`] of a value hit).
//! - **hybrid** (when an embeddings endpoint is configured): see [`crate::search::embeddings`].

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::HashSet;

/// History hits score this fraction of an equally good hit on a current value.
pub const HISTORY_WEIGHT: f64 = 0.75;
/// At most this many words of a query are used.
pub const MAX_TERMS: usize = 32;
/// Characters of context on each side of a snippet's first match (in-memory store and vector-only hits).
const SNIPPET_CONTEXT: usize = 60;

/// Where a hit was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HitSource {
    /// The block's current value.
    Value,
    /// An earlier value, from the edit history.
    History,
}

/// One text-search hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextHit {
    /// The block.
    pub label: String,
    /// Current value or history.
    pub source: HitSource,
    /// The matching passage, matches in `[brackets]`, cut with `…`.
    pub snippet: String,
    /// Higher is better (the negated BM25 rank for SQLite, `ts_rank` for PostgreSQL).
    pub score: f64,
    /// When that text was written.
    pub at: DateTime<Utc>,
}

/// The words of a query, lowercased, deduplicated, at most [`MAX_TERMS`].
pub fn query_terms(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| seen.insert(w.clone()))
        .take(MAX_TERMS)
        .collect()
}

/// An FTS5 MATCH expression for the terms: each quoted (so no query syntax leaks through), joined by `OR`.
pub fn fts_query(terms: &[String]) -> String {
    terms.iter().map(|t| format!("\"{}\"", t.replace('"', "\"\""))).collect::<Vec<_>>().join(" OR ")
}

/// Naive scoring for stores without an index: occurrences of each term (case-insensitive substring), weighted so
/// that matching more distinct terms wins. `None` when nothing matches.
pub fn naive_score(text: &str, terms: &[String]) -> Option<f64> {
    let lower = text.to_lowercase();
    let mut distinct = 0usize;
    let mut total = 0usize;
    for t in terms {
        let n = lower.matches(t.as_str()).count();
        if n > 0 {
            distinct += 1;
            total += n;
        }
    }
    (distinct > 0).then(|| distinct as f64 + (1.0 + total as f64).ln() / 10.0)
}

/// A snippet around the first occurrence of any term, matches bracketed, for stores without FTS5's `snippet()`.
pub fn naive_snippet(text: &str, terms: &[String]) -> String {
    let chars: Vec<char> = text.chars().collect();
    let lower: Vec<char> = chars.iter().map(|c| c.to_lowercase().next().unwrap_or(*c)).collect();
    let term_chars: Vec<Vec<char>> =
        terms.iter().map(|t| t.chars().collect()).filter(|t: &Vec<char>| !t.is_empty()).collect();
    let matches_at =
        |i: usize| term_chars.iter().find(|t| lower.get(i..i + t.len()) == Some(t.as_slice())).map(Vec::len);
    let first = (0..lower.len()).find(|&i| matches_at(i).is_some());
    let Some(first) = first else {
        return window(&chars, 0, SNIPPET_CONTEXT * 2);
    };
    let start = first.saturating_sub(SNIPPET_CONTEXT);
    let end = (first + SNIPPET_CONTEXT * 2).min(chars.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let mut i = start;
    while i < end {
        if let Some(len) = matches_at(i) {
            out.push('[');
            out.extend(&chars[i..(i + len).min(chars.len())]);
            out.push(']');
            i += len;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    if end < chars.len() {
        out.push('…');
    }
    out
}

fn window(chars: &[char], start: usize, len: usize) -> String {
    let end = (start + len).min(chars.len());
    let mut s: String = chars[start..end].iter().collect();
    if end < chars.len() {
        s.push('…');
    }
    s
}

/// Merges value and history hits: one hit per block (its value hit if any, else its best history hit, weighted by
/// [`HISTORY_WEIGHT`]), best first, at most `limit`. Ties break by label for determinism.
pub fn merge_hits(values: Vec<TextHit>, history: Vec<TextHit>, limit: usize) -> Vec<TextHit> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for hit in values {
        if seen.insert(hit.label.clone()) {
            out.push(hit);
        }
    }
    for mut hit in history {
        if seen.insert(hit.label.clone()) {
            hit.score *= HISTORY_WEIGHT;
            out.push(hit);
        }
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.label.cmp(&b.label)));
    out.truncate(limit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_words_only() {
        assert_eq!(query_terms("Dark-mode? \"OR\" NEAR(x) dark"), ["dark", "mode", "or", "near", "x"]);
        assert!(query_terms("  -- ** ").is_empty());
        assert_eq!(fts_query(&query_terms("a b")), "\"a\" OR \"b\"");
    }

    #[test]
    fn naive_snippets_bracket_matches() {
        let terms = query_terms("mode");
        assert_eq!(naive_snippet("prefers dark Mode always", &terms), "prefers dark [Mode] always");
        let long = format!("{}needle{}", "x".repeat(200), "y".repeat(200));
        let s = naive_snippet(&long, &query_terms("needle"));
        assert!(s.starts_with('…') && s.ends_with('…') && s.contains("[needle]"), "{s}");
        assert!(naive_score("abc", &query_terms("zzz")).is_none());
        assert!(naive_score("a b", &query_terms("a b")) > naive_score("a a a", &query_terms("a b")));
    }
}
