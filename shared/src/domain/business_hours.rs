//! Business hours: the opening schedules of a workspace (the spec only reads
//! them: list and get). An operator loads them with `crm load`
//! (`{"type":"businessHour",...}`).
//!
//! A schedule: a name, an IANA time zone, the opening intervals of each weekday
//! (`0` Sunday to `6` Saturday, `"HH:MM"` to `"HH:MM"`), and holidays (dates).

use serde::{Deserialize, Serialize};
use validator::{Validate, ValidationError};

use crate::auth::Caller;
use crate::domain::catalog;
use crate::error::ApiResult;
use crate::ids::WorkspaceId;
use crate::keys;
use crate::keys::BusinessHourId;
use crate::page::{ListPage, Paging};
use crate::record::{Personal, Record, Stamps};
use crate::store::{Key, Store};

pub const LIST: &str = "BUSINESSHOUR";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[validate(schema(function = "ordered"))]
pub struct Interval {
    #[validate(range(max = 6))]
    pub day: u8,
    #[validate(custom(function = "clock"))]
    pub start: String,
    #[validate(custom(function = "clock"))]
    pub end: String,
}

/// `HH:MM`, 00:00 to 24:00.
fn clock(text: &str) -> Result<(), ValidationError> {
    let ok = text.len() == 5
        && text.as_bytes()[2] == b':'
        && matches!((text[..2].parse::<u8>(), text[3..].parse::<u8>()), (Ok(h), Ok(m)) if (h < 24 && m < 60) || (h == 24 && m == 0));
    if ok {
        Ok(())
    } else {
        Err(ValidationError::new("clock").with_message("must be a time HH:MM".into()))
    }
}

fn ordered(interval: &Interval) -> Result<(), ValidationError> {
    if interval.start < interval.end {
        Ok(())
    } else {
        Err(ValidationError::new("order").with_message("start must be before end".into()))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BusinessHourData {
    #[validate(length(min = 1, max = 128))]
    pub name: String,
    /// An IANA time zone, such as `America/Sao_Paulo`.
    #[validate(length(min = 1, max = 64))]
    pub timezone: String,
    #[serde(default)]
    #[validate(length(max = 70), nested)]
    pub intervals: Vec<Interval>,
    /// Dates (`YYYY-MM-DD`) when the schedule is closed.
    #[serde(default)]
    #[validate(length(max = 366))]
    pub holidays: Vec<chrono::NaiveDate>,
    #[serde(default)]
    pub is_default: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BusinessHour {
    pub id: BusinessHourId,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub data: BusinessHourData,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

crate::versioned!(BusinessHour);

impl catalog::Catalog for BusinessHour {
    const WHAT: &'static str = "business hour";
    const LIST: &'static str = LIST;
    type Id = BusinessHourId;
    fn key_of(workspace_id: WorkspaceId, id: BusinessHourId) -> Key {
        keys::business_hour(workspace_id, id)
    }
    fn partitions(workspace_id: WorkspaceId) -> Vec<String> {
        vec![keys::business_hours(workspace_id)]
    }
}

impl Record for BusinessHour {
    const EVENTS: Option<&'static str> = Some("businessHour");

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(BusinessHourView::from(self.clone()))
    }
    const TYPE: &'static str = "BusinessHour";
    const PERSONAL: Personal = Personal::none(&["holidays", "intervals", "name", "timezone"]);
    fn key(&self) -> Key {
        keys::business_hour(self.workspace_id, self.id)
    }
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BusinessHourView {
    pub id: String,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub data: BusinessHourData,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<BusinessHour> for BusinessHourView {
    fn from(b: BusinessHour) -> Self {
        Self {
            id: b.id.to_string(),
            workspace_id: b.workspace_id,
            data: b.data,
            stamps: b.stamps,
        }
    }
}

/// A `businessHour` line of `crm load`.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BusinessHourLine {
    #[validate(range(min = 1, max = 9007199254740991u64))]
    pub id: u64,
    #[serde(flatten)]
    #[validate(nested)]
    pub data: BusinessHourData,
}

/// The `crm load` lines of this resource: `businessHour`.
pub fn line_types() -> Vec<crate::load::LineType> {
    vec![crate::load::LineType::of::<BusinessHourLine>()]
}

#[async_trait::async_trait]
impl crate::load::Loadable for BusinessHourLine {
    const TYPE: &'static str = "businessHour";

    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()> {
        load(store, caller, self).await
    }
}

pub async fn load(store: &dyn Store, caller: &Caller, line: BusinessHourLine) -> ApiResult<()> {
    let ws = caller.workspace_id;
    let build = |stored: Option<BusinessHour>| match stored {
        Some(stored) => BusinessHour {
            data: line.data.clone(),
            ..stored
        },
        None => BusinessHour {
            id: BusinessHourId(line.id),
            workspace_id: ws,
            data: line.data.clone(),
            stamps: Stamps::new(),
            version: 1,
        },
    };
    catalog::load(
        store,
        caller,
        BusinessHourId(line.id),
        build,
        "businessHour.load",
    )
    .await?;
    Ok(())
}

pub async fn get(
    store: &dyn Store,
    caller: &Caller,
    id: BusinessHourId,
) -> ApiResult<BusinessHour> {
    catalog::get(store, caller, id).await
}

pub async fn list(
    store: &dyn Store,
    caller: &Caller,
    paging: Paging,
) -> ApiResult<ListPage<BusinessHour>> {
    catalog::list(store, caller, paging).await
}

/// The stored items of item_shapes/business_hours.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip, texts_declared};

    #[test]
    fn business_hours_keep_their_shape() {
        round_trip::<crate::domain::business_hours::BusinessHour>("BusinessHour");
        texts_declared::<crate::domain::business_hours::BusinessHour>();
    }
}
