//! Partition values of a file as the log holds them, interned per reader.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;

/// Partition values in log order: `(column, value)`, `None` for null. Shared and immutable: a
/// table has few distinct partition tuples, so the log readers intern them (one allocation per
/// distinct tuple rather than three per file), and a verdict on a tuple can be cached by
/// [`PartitionValues::id`].
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct PartitionValues(Arc<[PartitionValue]>);

/// One partition column's physical name and serialized value (None for null).
pub type PartitionValue = (Box<str>, Option<Box<str>>);

impl PartitionValues {
    /// Identifies the shared tuple while `self` is alive (equal ids imply equal values).
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as *const u8 as usize
    }
}

impl std::ops::Deref for PartitionValues {
    type Target = [(Box<str>, Option<Box<str>>)];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl fmt::Debug for PartitionValues {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<Vec<(Box<str>, Option<Box<str>>)>> for PartitionValues {
    fn from(v: Vec<(Box<str>, Option<Box<str>>)>) -> Self {
        PartitionValues(v.into())
    }
}

impl<K: Into<Box<str>>, V: Into<Box<str>>> FromIterator<(K, Option<V>)> for PartitionValues {
    fn from_iter<I: IntoIterator<Item = (K, Option<V>)>>(iter: I) -> Self {
        PartitionValues(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.map(Into::into)))
                .collect(),
        )
    }
}

/// Interns partition tuples while one reader works through a commit or checkpoint part.
#[derive(Default)]
pub struct PartitionInterner {
    /// Keyed by the raw JSON text of a commit's `partitionValues` object.
    by_json: hashbrown::HashMap<Box<str>, PartitionValues>,
    /// Keyed by the values themselves.
    by_value: hashbrown::HashTable<PartitionValues>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl PartitionInterner {
    /// The tuple of a `partitionValues` JSON object (raw text), parsed once per distinct text.
    pub fn json(&mut self, raw: &str) -> Result<PartitionValues, String> {
        if let Some(pv) = self.by_json.get(raw) {
            return Ok(pv.clone());
        }
        let parsed: PartitionValuesSeed =
            serde_json::from_str(raw).map_err(|e| format!("partitionValues: {e}"))?;
        let pv = self.values(parsed.0.iter().map(|(k, v)| (&**k, v.as_deref())));
        self.by_json.insert(raw.into(), pv.clone());
        Ok(pv)
    }

    /// The tuple with these `(column, value)` pairs.
    pub fn values<'a>(
        &mut self,
        pairs: impl Iterator<Item = (&'a str, Option<&'a str>)> + Clone,
    ) -> PartitionValues {
        let hash = hash_pairs(&self.hasher, pairs.clone());
        let same = |pv: &PartitionValues| {
            let mut it = pairs.clone();
            pv.iter().all(|(a, b)| {
                it.next()
                    .is_some_and(|(k, v)| &**a == k && b.as_deref() == v)
            }) && it.next().is_none()
        };
        if let Some(pv) = self.by_value.find(hash, same) {
            return pv.clone();
        }
        let pv: PartitionValues = pairs.collect();
        let hasher = &self.hasher;
        self.by_value.insert_unique(hash, pv.clone(), |p| {
            hash_pairs(hasher, p.iter().map(|(k, v)| (&**k, v.as_deref())))
        });
        pv
    }
}

fn hash_pairs<'a>(
    hasher: &hashbrown::DefaultHashBuilder,
    pairs: impl Iterator<Item = (&'a str, Option<&'a str>)>,
) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = hasher.build_hasher();
    for (k, v) in pairs {
        k.hash(&mut h);
        v.hash(&mut h);
    }
    h.finish()
}

struct PartitionValuesVisitor;

impl<'de> Visitor<'de> for PartitionValuesVisitor {
    type Value = Vec<(Box<str>, Option<Box<str>>)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of partition column to string or null")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some((k, v)) = map.next_entry::<Cow<'de, str>, Option<Cow<'de, str>>>()? {
            out.push((k.into(), v.map(Into::into)));
        }
        Ok(out)
    }
}

struct PartitionValuesSeed(Vec<(Box<str>, Option<Box<str>>)>);

impl<'de> Deserialize<'de> for PartitionValuesSeed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PartitionValuesVisitor)
            .map(PartitionValuesSeed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interned_partition_tuples_are_shared_and_exact() {
        let mut i = PartitionInterner::default();
        let a = i.json(r#"{"p":"1","q":null}"#).unwrap();
        let b = i.json(r#"{"p":"1","q":null}"#).unwrap();
        let c = i.values([("p", Some("1")), ("q", None)].into_iter());
        assert_eq!(a.id(), b.id());
        assert_eq!(a.id(), c.id());
        assert_eq!(&*a, &[("p".into(), Some("1".into())), ("q".into(), None)]);
        let d = i.values([("p", Some("1")), ("q", Some("1"))].into_iter());
        let e = i.values([("p", Some("1"))].into_iter());
        assert!(d.id() != a.id() && e.id() != a.id() && d != a && e != a);
        assert_eq!(i.json(r#"{"p":"\u0031"}"#).unwrap().id(), e.id());
        assert!(i
            .json(r#"{"p":1}"#)
            .unwrap_err()
            .contains("partitionValues"));
    }
}
