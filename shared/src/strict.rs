//! A JSON value read strictly by serde: a struct comes only from an object.
//!
//! serde's derived structs also accept an array of their fields in order
//! (`"crmData": [null, null]` reads as an empty `crmData`), which JSON
//! clients never mean and the OpenAPI document does not allow (contract
//! fuzzing found it). Bodies and grouped queries are read through [`Strict`],
//! which answers `deserialize_struct` with the object only; everything else
//! reads as serde_json's own `Value` does.

use serde::Deserializer;
use serde::de::value::{MapAccessDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{self, IntoDeserializer, Unexpected, Visitor};
use serde_json::{Error, Number, Value};

/// A borrowed JSON value as a strict deserializer.
#[derive(Clone, Copy)]
pub struct Strict<'a>(pub &'a Value);

impl<'de> IntoDeserializer<'de, Error> for Strict<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => n
            .as_f64()
            .map_or(Unexpected::Other("number"), Unexpected::Float),
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

fn visit_number<'de, V: Visitor<'de>>(n: &Number, visitor: V) -> Result<V::Value, Error> {
    if let Some(u) = n.as_u64() {
        visitor.visit_u64(u)
    } else if let Some(i) = n.as_i64() {
        visitor.visit_i64(i)
    } else {
        visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
    }
}

impl<'de> Deserializer<'de> for Strict<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => visit_number(n, visitor),
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => {
                let mut seq = SeqDeserializer::new(items.iter().map(Strict));
                let value = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(value)
            }
            Value::Object(map) => {
                let mut entries =
                    MapDeserializer::new(map.iter().map(|(k, v)| (k.as_str(), Strict(v))));
                let value = visitor.visit_map(&mut entries)?;
                entries.end()?;
                Ok(value)
            }
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(_) => self.deserialize_any(visitor),
            other => Err(de::Error::invalid_type(unexpected(other), &"an object")),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::String(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            Value::Object(map) if map.len() == 1 => {
                let (variant, value) = map.iter().next().expect("one entry");
                let entry = std::iter::once((variant.as_str(), Strict(value)));
                visitor.visit_enum(MapAccessDeserializer::new(MapDeserializer::new(entry)))
            }
            other => Err(de::Error::invalid_type(
                unexpected(other),
                &"a string or an object of one entry",
            )),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::Strict;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        a: Option<u64>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Kind {
        One,
        Two,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        inner: Option<Inner>,
        kind: Kind,
        list: Vec<u8>,
        name: String,
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let value = json!({ "inner": { "a": 7 }, "kind": "two", "list": [1, 2], "name": "x" });
        let outer = Outer::deserialize(Strict(&value)).unwrap();
        assert_eq!(outer.inner, Some(Inner { a: Some(7) }));
        assert_eq!(
            (outer.kind, outer.list, outer.name),
            (Kind::Two, vec![1, 2], "x".into())
        );
    }

    #[test]
    fn a_struct_is_never_read_from_an_array() {
        let value = json!({ "inner": [null], "kind": "one", "list": [], "name": "x" });
        let error = Outer::deserialize(Strict(&value)).unwrap_err().to_string();
        assert!(error.contains("expected an object"), "{error}");
        // serde_json alone accepts it.
        assert!(serde_json::from_value::<Outer>(value).is_ok());
    }
}
