//! Search over memory: the text search and the merge of value and history hits ([`query`]), and the optional
//! semantic ranking through an embeddings endpoint ([`embeddings`]).

pub mod embeddings;
pub mod query;
