//! The create and PATCH bodies of both versions, and how they change a contact.

use serde::Deserialize;
use serde_json::{Map, Value};
use validator::Validate;

use super::record::{ContactFields, CrmData};
use crate::error::{ApiError, ApiResult};
use crate::patch::Patch;
use crate::phone;
use crate::validate::CreateFields;

/// The `/v3` PATCH body, and the create's (`ContactCreate` in the document:
/// a create patches an empty contact). Every field optional. `null` clears a field;
/// `customFields` merges (a key set to `null` is removed). Limits: name, email
/// and location 128 characters; phone, external ids, origin and social ids 100;
/// `_id` 128; avatar 2,048; notes 10,000.
#[derive(Debug, Clone, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContactPatch {
    #[serde(default, rename = "_id")]
    #[validate(length(max = 128))]
    pub legacy_id: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 128))]
    pub name: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 128), custom(function = "crate::validate::email"))]
    #[schemars(email)]
    pub email: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 100))]
    pub phone: Patch<String>,
    /// find-or-create only: more phones to look the contact up by (at most 10).
    #[serde(default)]
    #[validate(length(min = 1, max = 10))]
    pub phones: Option<Vec<String>>,
    #[serde(default)]
    #[validate(length(max = 128))]
    pub location: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 2048))]
    pub avatar: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 10000))]
    pub notes: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 100))]
    pub external_id: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 100))]
    pub origin: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 100))]
    pub social_a_id: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 100))]
    pub social_b_id: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 100))]
    pub social_c_id: Patch<String>,
    #[schemars(with = "bool")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub is_imported: Option<bool>,
    #[schemars(with = "bool")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub has_conversation: Option<bool>,
    #[schemars(with = "bool")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub new_contact: Option<bool>,
    #[schemars(with = "bool")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub is_private: Option<bool>,
    #[schemars(with = "Map<String, Value>")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub custom_fields: Option<Map<String, Value>>,
    #[serde(default)]
    pub crm_data: Patch<CrmData>,
    #[serde(default, rename = "CustomerCustomField")]
    pub customer_custom_field: Patch<Map<String, Value>>,
}

/// The `/v1` PATCH body, and the create's (`ContactCreateV1`): the public fields, custom fields as `{ value }`.
#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContactPatchV1 {
    #[serde(default)]
    #[validate(length(max = 128))]
    pub name: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 128), custom(function = "crate::validate::email"))]
    #[schemars(email)]
    pub email: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 100))]
    pub phone: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 128))]
    pub location: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 2048))]
    pub avatar: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 10000))]
    pub notes: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 100))]
    pub external_id: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 100))]
    pub origin: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 100))]
    pub social_a_id: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 100))]
    pub social_b_id: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 100))]
    pub social_c_id: Patch<String>,
    #[schemars(with = "bool")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub is_imported: Option<bool>,
    #[schemars(with = "bool")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub has_conversation: Option<bool>,
    #[schemars(with = "bool")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub new_contact: Option<bool>,
    #[schemars(with = "bool")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub is_private: Option<bool>,
    /// key -> `{ "value": ... }`; a key set to `null` is removed.
    #[schemars(with = "Map<String, Value>")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub custom_fields: Option<Map<String, Value>>,
    #[serde(default)]
    pub crm_data: Patch<CrmData>,
}

/// What [`ContactPatch::apply`] checks of a new contact, for the document
/// (`http::Create`).
impl CreateFields for ContactPatch {
    const REQUIRED: &'static [&'static str] = &[];
    const ANY_OF: &'static [&'static str] = IDENTIFIED_BY;
}

impl CreateFields for ContactPatchV1 {
    const REQUIRED: &'static [&'static str] = &[];
    const ANY_OF: &'static [&'static str] = IDENTIFIED_BY;
}

/// A contact needs one of these; the error names the first.
const IDENTIFIED_BY: &[&str] = &["name", "phone", "email"];

impl TryFrom<ContactPatchV1> for ContactPatch {
    type Error = ApiError;

    fn try_from(v1: ContactPatchV1) -> ApiResult<Self> {
        let custom_fields = v1
            .custom_fields
            .map(|fields| {
                fields
                    .into_iter()
                    .map(|(key, wrapped)| match wrapped {
                        Value::Null => Ok((key, Value::Null)),
                        Value::Object(mut o) if o.len() == 1 && o.contains_key("value") => {
                            Ok((key, o.remove("value").unwrap_or(Value::Null)))
                        }
                        _ => Err(ApiError::field(
                            format!("customFields.{key}"),
                            "must be an object { \"value\": ... } or null",
                        )),
                    })
                    .collect::<ApiResult<Map<String, Value>>>()
            })
            .transpose()?;
        Ok(Self {
            name: v1.name,
            email: v1.email,
            phone: v1.phone,
            location: v1.location,
            avatar: v1.avatar,
            notes: v1.notes,
            external_id: v1.external_id,
            origin: v1.origin,
            social_a_id: v1.social_a_id,
            social_b_id: v1.social_b_id,
            social_c_id: v1.social_c_id,
            is_imported: v1.is_imported,
            has_conversation: v1.has_conversation,
            new_contact: v1.new_contact,
            is_private: v1.is_private,
            custom_fields,
            crm_data: v1.crm_data,
            ..Self::default()
        })
    }
}

/// A text field a patch sets or clears: trimmed, and empty means cleared.
fn text_value(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The canonical phone of an input, or a 400 naming `field`.
pub(super) fn canonical_phone(field: &str, raw: &str) -> ApiResult<String> {
    phone::canonical(raw).map_err(|e| ApiError::field(field, e.to_string()))
}

impl ContactPatch {
    /// Applies the input to a contact's fields.
    pub(super) fn apply(self, f: &mut ContactFields) -> ApiResult<()> {
        macro_rules! texts {
            ($($field:ident),*) => {$(
                if !self.$field.is_keep() {
                    f.$field = text_value(self.$field.value());
                }
            )*};
        }
        texts!(
            legacy_id,
            name,
            email,
            location,
            avatar,
            notes,
            external_id,
            origin,
            social_a_id,
            social_b_id,
            social_c_id
        );
        if !self.phone.is_keep() {
            f.phone = text_value(self.phone.value())
                .map(|raw| canonical_phone("phone", &raw))
                .transpose()?;
        }
        macro_rules! flags {
            ($($field:ident),*) => {$(
                if let Some(value) = self.$field {
                    f.$field = value;
                }
            )*};
        }
        flags!(is_imported, has_conversation, new_contact, is_private);
        if let Some(changes) = self.custom_fields {
            for (key, value) in changes {
                if value.is_null() {
                    f.custom_fields.remove(&key);
                } else {
                    f.custom_fields.insert(key, value);
                }
            }
        }
        self.crm_data.apply(&mut f.crm_data);
        self.customer_custom_field
            .apply(&mut f.customer_custom_field);
        if f.name.is_none() && f.phone.is_none() && f.email.is_none() {
            return Err(ApiError::field(
                IDENTIFIED_BY[0],
                "a contact needs a name, a phone or an e-mail",
            ));
        }
        Ok(())
    }
}
