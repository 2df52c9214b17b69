//! Reading one top-level section of a TOML document through serde, skipping every other section, so that a
//! section is deserialised from the document's text (keeping spans and key paths for errors) rather than from a
//! copy of its value.

use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::marker::PhantomData;

/// Deserialises the value of top-level key `name` as `T` (`None` when the document has no such key).
pub(super) struct Only<'a, T> {
    name: &'a str,
    _t: PhantomData<fn() -> T>,
}

impl<'a, T> Only<'a, T> {
    pub(super) fn new(name: &'a str) -> Self {
        Self { name, _t: PhantomData }
    }
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for Only<'_, T> {
    type Value = Option<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for Only<'_, T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a TOML document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == self.name {
                out = Some(map.next_value::<T>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(out)
    }
}
