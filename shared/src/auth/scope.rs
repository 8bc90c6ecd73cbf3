//! What a token may do: scopes per resource group, and what each operation
//! needs ([`Need`], declared on its route).
//!
//! `<resource>:read` reads a group's records, `<resource>:write` also changes
//! them (a token that may change a record may read it); `*:read` and
//! `*:write` are the same for every group of the token's workspace; `admin`
//! is all of that and the operator routes, in any workspace. A token stored
//! with no scopes (made before scopes existed, when a token could do
//! everything in its workspace) holds `*:write`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ApiError;

/// Declares [`Resource`] (its `ALL`, its `name()`) and the events each
/// group's records make, from one list: a new group's scope resource and
/// event types are one entry, and the scope that reads an event cannot be
/// forgotten (an event carries its record, so reading it takes its
/// group's read scope; `crate::domain::events` filters the feed and the
/// webhooks by it).
macro_rules! resources {
    ($($variant:ident => $name:literal {
        $($event:ident: [$($verb:ident),* $(,)?]),* $(,)?
    },)+) => {
        /// The resource groups scopes are given for.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Resource {
            $($variant,)+
        }

        impl Resource {
            pub const ALL: &[Resource] = &[$(Resource::$variant,)+];

            /// Every event type (`contact.created`), by group.
            pub const EVENT_TYPES: &[&str] = &[
                $($($(concat!(stringify!($event), ".", stringify!($verb)),)*)*)+
            ];

            /// Which group reads each event resource (the part of a type
            /// before the dot).
            pub const EVENTS_READ_BY: &[(&str, Resource)] = &[
                $($((stringify!($event), Resource::$variant),)*)+
            ];

            /// Its name in a scope (`custom-fields:read`).
            pub fn name(self) -> &'static str {
                match self {
                    $(Resource::$variant => $name,)+
                }
            }
        }
    };
}

// Organizations and conversations are shown through contacts, and imports
// are contacts' (`/v3/contacts/import`); snapshots are dashboards';
// sessions are reports'; orders, checkout links, welcome messages and churn
// reasons are the workspace's. `webhook.ping` is sent by a test delivery
// alone, never stored in the feed.
resources! {
    Contacts => "contacts" {
        contact: [created, updated, merged, erased],
        import: [created, completed],
        organization: [created, updated],
        conversation: [created, updated],
    },
    Deals => "deals" { deal: [created, updated, won, lost, reopened] },
    Tags => "tags" { tag: [created, updated, deleted] },
    Products => "products" { product: [created, updated] },
    Campaigns => "campaigns" {
        campaign: [created, updated, scheduled, started, paused, finished, canceled, failed],
    },
    Reports => "reports" { session: [upserted] },
    Dashboards => "dashboards" { dashboard: [created], snapshot: [created, updated] },
    CustomFields => "custom-fields" { customField: [created, updated] },
    BusinessHours => "business-hours" { businessHour: [created, updated] },
    Workspaces => "workspaces" {
        workspace: [created, updated],
        checkoutLink: [created, updated],
        order: [created],
        welcomeMessage: [created],
        churnReason: [created, deleted],
    },
    ApiTokens => "api-tokens" { apiToken: [created, deleted] },
    Audit => "audit" {},
    Events => "events" {},
    Webhooks => "webhooks" { webhook: [created, updated, deleted, disabled, enabled, ping] },
}

/// One scope a token holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Everything, in every workspace: the operator routes too.
    Admin,
    /// Reads of every group of the token's workspace.
    ReadAll,
    /// Reads and changes of every group of the token's workspace.
    WriteAll,
    Read(Resource),
    Write(Resource),
    /// Erasing a person's data (`POST /v3/contacts/{id}/erase`): given on its
    /// own, never by `*:write` or `contacts:write`.
    EraseContacts,
}

impl Scope {
    /// Every scope there is, in the order the docs list them.
    pub fn all() -> Vec<Scope> {
        let mut all = vec![
            Scope::Admin,
            Scope::ReadAll,
            Scope::WriteAll,
            Scope::EraseContacts,
        ];
        for &resource in Resource::ALL {
            all.extend([Scope::Read(resource), Scope::Write(resource)]);
        }
        all
    }

    /// Whether holding `self` grants `wanted`.
    pub fn covers(self, wanted: Scope) -> bool {
        use Scope::*;
        match (self, wanted) {
            (Admin, _) => true,
            (_, EraseContacts) => self == EraseContacts,
            (WriteAll, Admin) => false,
            (WriteAll, _) => true,
            (ReadAll, ReadAll | Read(_)) => true,
            (Write(held), Write(w) | Read(w)) => held == w,
            (Read(held), Read(w)) => held == w,
            _ => false,
        }
    }

    /// The scopes that grant `self`, narrowest first (the `X-Accepted-Scopes`
    /// of a refusal).
    pub fn granted_by(self) -> Vec<Scope> {
        let mut by: Vec<Scope> = Scope::all()
            .into_iter()
            .filter(|s| s.covers(self))
            .collect();
        by.sort_by_key(|s| match s {
            Scope::Read(_) | Scope::Write(_) | Scope::EraseContacts => 0,
            Scope::ReadAll | Scope::WriteAll => 1,
            Scope::Admin => 2,
        });
        by
    }
}

/// 403: the token lacks `needed` (and every scope that grants it, which
/// `X-Accepted-Scopes` lists, as GitHub's API does).
pub fn missing(needed: Scope) -> ApiError {
    let accepted: Vec<String> = needed
        .granted_by()
        .iter()
        .map(ToString::to_string)
        .collect();
    ApiError {
        accepted_scopes: Some(accepted.join(", ")),
        ..ApiError::forbidden(format!(
            "this operation needs the `{needed}` scope, which the token does not have (accepted: {})",
            accepted.join(", ")
        ))
    }
}

/// Whether `held` (a token's scopes) grants `wanted`; none held is `*:write`.
pub fn grants(held: &[Scope], wanted: Scope) -> bool {
    if held.is_empty() {
        return Scope::WriteAll.covers(wanted);
    }
    held.iter().any(|s| s.covers(wanted))
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Admin => f.write_str("admin"),
            Scope::ReadAll => f.write_str("*:read"),
            Scope::WriteAll => f.write_str("*:write"),
            Scope::EraseContacts => f.write_str("contacts:erase"),
            Scope::Read(r) => write!(f, "{}:read", r.name()),
            Scope::Write(r) => write!(f, "{}:write", r.name()),
        }
    }
}

impl std::str::FromStr for Scope {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Scope::all()
            .into_iter()
            .find(|s| s.to_string() == text)
            .ok_or_else(|| {
                format!("`{text}` is no scope: `<resource>:read`, `<resource>:write`, `*:read`, `*:write`, `contacts:erase` or `admin`")
            })
    }
}

impl Serialize for Scope {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Scope {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Scope".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<String> = Scope::all().iter().map(Scope::to_string).collect();
        schemars::json_schema!({
            "type": "string",
            "enum": names,
            "description": "`<resource>:read` reads a group's records; `<resource>:write` also changes them; `*:read` and `*:write` are the same for every group of the workspace; `contacts:erase` erases a person's data (given only on its own); `admin` is everything, the operator routes included."
        })
    }
}

/// What an operation needs of its caller, declared on its route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Nothing: no token is read (the OpenAPI document, the reference page).
    Public,
    /// A valid token, whatever its scopes (the time, the caller's own token).
    Token,
    /// A token holding this scope or one that grants it.
    Scope(Scope),
    /// A route that reads no token itself and relays requests that are
    /// guarded as any other (the MCP endpoint): a token is checked, scoped
    /// and charged once per relayed request, never for the envelope.
    Relayed,
}

impl Need {
    /// The operator routes'.
    pub const ADMIN: Need = Need::Scope(Scope::Admin);

    /// The scope named in the OpenAPI security requirement, if any.
    pub fn scope(self) -> Option<Scope> {
        match self {
            Need::Scope(scope) => Some(scope),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_read_back_as_written() {
        for scope in Scope::all() {
            assert_eq!(scope.to_string().parse::<Scope>(), Ok(scope));
        }
        assert_eq!(Scope::all().len(), 4 + 2 * Resource::ALL.len());
        assert!("contacts:delete".parse::<Scope>().is_err());
    }

    #[test]
    fn what_grants_what() {
        let contacts_write = Scope::Write(Resource::Contacts);
        let contacts_read = Scope::Read(Resource::Contacts);
        assert!(grants(&[contacts_write], contacts_read));
        assert!(!grants(&[contacts_read], contacts_write));
        assert!(!grants(&[contacts_write], Scope::Read(Resource::Deals)));
        assert!(grants(&[Scope::ReadAll], Scope::Read(Resource::Audit)));
        assert!(!grants(&[Scope::ReadAll], Scope::Write(Resource::Tags)));
        // An erasure is given on its own, or by admin.
        assert!(!grants(&[Scope::WriteAll], Scope::EraseContacts));
        assert!(!grants(&[], Scope::EraseContacts));
        assert!(grants(&[Scope::EraseContacts], Scope::EraseContacts));
        assert!(grants(&[Scope::Admin], Scope::EraseContacts));
        assert!(!grants(&[Scope::EraseContacts], contacts_read));
        assert!(
            grants(&[], Scope::Write(Resource::Tags)),
            "none held: *:write"
        );
        assert!(!grants(&[], Scope::Admin));
        assert!(grants(&[Scope::Admin], Scope::Admin));
        assert_eq!(
            Scope::Read(Resource::Tags).granted_by(),
            [
                Scope::Read(Resource::Tags),
                Scope::Write(Resource::Tags),
                Scope::ReadAll,
                Scope::WriteAll,
                Scope::Admin
            ]
        );
    }
}
