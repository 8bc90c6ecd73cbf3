//! `crm load`: records an operator brings in as JSON lines, each naming its
//! `type`. A resource declares the line types it takes next to its own code
//! (an implementation of [`Loadable`] and a [`LineType::of`] in its
//! `line_types()`); `crate::domain::line_types` gathers them. This module knows
//! no resource: it finds a line's type, parses and validates the line strictly,
//! and hands it to its resource.

use std::future::Future;
use std::pin::Pin;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use validator::Validate;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, parse_json};
use crate::ids;
use crate::record::Stamps;
use crate::store::Store;

/// A line type of `crm load`: a body that loads itself into a workspace.
#[async_trait]
pub trait Loadable: DeserializeOwned + Validate + Send + 'static {
    /// The line's `type`, such as `product`.
    const TYPE: &'static str;

    /// Loads the record: loading the same line again changes nothing, and a
    /// changed line changes the record and moves its index items.
    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()>;
}

type LoadFuture<'a> = Pin<Box<dyn Future<Output = ApiResult<()>> + Send + 'a>>;

/// One entry of the registry.
#[derive(Clone, Copy)]
pub struct LineType {
    pub name: &'static str,
    run: for<'a> fn(&'a dyn Store, &'a Caller, Value) -> LoadFuture<'a>,
}

impl LineType {
    pub fn of<T: Loadable>() -> Self {
        Self {
            name: T::TYPE,
            run: run::<T>,
        }
    }
}

fn run<'a, T: Loadable>(store: &'a dyn Store, caller: &'a Caller, line: Value) -> LoadFuture<'a> {
    Box::pin(async move {
        // Re-read through serde_path_to_error so a problem names its field.
        let bytes = serde_json::to_vec(&line).map_err(ApiError::internal)?;
        let line: T = parse_json(&bytes)?;
        line.validate().map_err(crate::error::validation_error)?;
        line.load(store, caller).await
    })
}

/// Loads one line of a load file; answers its type.
pub async fn load_line(
    types: &[LineType],
    store: &dyn Store,
    caller: &Caller,
    text: &str,
) -> ApiResult<&'static str> {
    let mut line: serde_json::Map<String, Value> = parse_json(text.as_bytes())?;
    let Some(Value::String(name)) = line.remove("type") else {
        return Err(ApiError::field("type", "is required (the kind of record)"));
    };
    let Some(kind) = types.iter().find(|t| t.name == name) else {
        let known: Vec<&str> = types.iter().map(|t| t.name).collect();
        return Err(ApiError::field(
            "type",
            format!("must be one of {}", known.join(", ")),
        ));
    };
    (kind.run)(store, caller, Value::Object(line)).await?;
    Ok(kind.name)
}

/// A line that names its record's `id`, the rest of it being the resource's
/// create body `T` (`{"type":"tag","id":7,"name":"VIP"}`): a record of a
/// migration, or demo data that other lines point at by id.
#[derive(Debug)]
pub struct WithId<T> {
    pub id: u64,
    pub body: T,
}

impl<'de, T: DeserializeOwned> serde::Deserialize<'de> for WithId<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut map = serde_json::Map::deserialize(d)?;
        let id = take_id(&mut map).map_err(D::Error::custom)?;
        // The API's own reader: strict, and its errors name the field.
        let body = crate::error::from_value(&Value::Object(map))
            .map_err(|e| D::Error::custom(e.message))?;
        Ok(WithId { id, body })
    }
}

/// Takes a line's `id`, a positive number a JavaScript client holds exactly,
/// out of the line (the rest is the record's body).
pub fn take_id(line: &mut serde_json::Map<String, Value>) -> Result<u64, &'static str> {
    let id = line
        .remove("id")
        .ok_or("missing field `id` (a positive number)")?;
    id.as_u64()
        .filter(|id| (1..=ids::MAX_SAFE_ID).contains(id))
        .ok_or("field `id`: must be a whole number from 1 to 9007199254740991 (2^53 - 1)")
}

/// A line's body as written, for a record `R` whose line is read as its
/// create body when the record is new and as its update body when it exists
/// ([`RawLine::read`]).
#[derive(Debug, serde::Deserialize)]
#[serde(transparent)]
pub struct RawLine<R> {
    body: serde_json::Map<String, Value>,
    #[serde(skip)]
    record: std::marker::PhantomData<fn() -> R>,
}

impl<R> Validate for RawLine<R> {
    /// Read as its type, it is validated then.
    fn validate(&self) -> Result<(), validator::ValidationErrors> {
        Ok(())
    }
}

impl<R> RawLine<R> {
    /// The line as `T`: strictly, validated, its errors naming the field.
    pub fn read<T: DeserializeOwned + Validate>(self) -> ApiResult<T> {
        let body: T = crate::error::from_value(&Value::Object(self.body))?;
        body.validate().map_err(crate::error::validation_error)?;
        Ok(body)
    }
}

impl<T: Validate> Validate for WithId<T> {
    fn validate(&self) -> Result<(), validator::ValidationErrors> {
        self.body.validate()
    }
}

impl<T> WithId<T> {
    /// Loads the line's record, `R` at `key`: when the key holds none,
    /// `create` makes it under the line's id (the create's own code), with
    /// the creation time the id carries ([`Stamps::of_id`]); else
    /// `update` gives it the fields the line names (the update's own code,
    /// which writes nothing when they are already so).
    pub async fn create_or_update<R, C, CF, U, UF, V>(
        self,
        store: &dyn Store,
        key: &crate::store::Key,
        create: C,
        update: U,
    ) -> ApiResult<()>
    where
        R: crate::record::Record,
        C: FnOnce(u64, T, Stamps) -> CF,
        CF: Future<Output = Result<R, crate::record::CommitError>>,
        U: FnOnce(u64, T) -> UF,
        UF: Future<Output = ApiResult<V>>,
    {
        let WithId { id, body } = self;
        if crate::record::get::<R>(store, key, true).await?.is_some() {
            return update(id, body).await.map(drop);
        }
        match create(id, body, stamps_of_id(id)?).await {
            Ok(_) => Ok(()),
            // Created by another writer since the read above.
            Err(crate::record::CommitError::IdTaken) => Err(ApiError::conflict(format!(
                "{} {id} was created while this line loaded; load it again",
                R::TYPE
            ))),
            Err(crate::record::CommitError::Api(e)) => Err(e),
        }
    }
}

/// The stamps of a record loaded under its own id: ids are time-ordered, so it
/// was created when its id says; an id whose time is later than now is refused.
pub fn stamps_of_id(id: u64) -> ApiResult<Stamps> {
    if ids::id_time(id) > ids::now() {
        return Err(ApiError::field(
            "id",
            "is later than now (an id carries its creation time)",
        ));
    }
    Ok(Stamps::of_id(id))
}
