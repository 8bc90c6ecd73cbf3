//! Every key format of the table, and nothing else. A reader finds here how each
//! entity is stored and how each access pattern reads it.
//!
//! Tenant items have a partition key that starts with `W#<workspaceId>`, so no
//! query built from a caller's workspace can reach another workspace's items.
//! Numeric ids are zero-padded in sort keys so that key order is id order, which
//! is creation order (ids are time-ordered).
//!
//! Each file of this module opens with the table of the keys it builds: a
//! record's id type (`id_type!`), its key builders and its access patterns
//! sit together, so a new record is one file's edit (a test below holds
//! each workspace partition a builder names to a row of its shape in its
//! file's table). This file's own:
//!
//! | Entity            | Access pattern                         | Index | pk                    | sk                      |
//! |-------------------|----------------------------------------|-------|-----------------------|-------------------------|
//! | Workspace         | by id                                  | table | `W#<ws>`              | `WORKSPACE`             |
//! | Warm-up           | never written: a cold start's first read ([`warm_up`]) | table | `WARMUP` | `WARMUP`      |
//!
//! The token secret, the admin audit list, a checkout code and the churn-reason
//! suggestions are the only keys that do not start with a workspace (and the
//! gsi1 list of every webhook endpoint): a bearer
//! token arrives before its workspace is known, a payment provider's callback
//! names only the code, and the operator's audit view and the suggestion list
//! span workspaces by design.

mod contacts;
mod counters;
mod identity;
mod limits;
mod records;
mod shards;
mod webhooks;

pub use contacts::*;
pub use counters::*;
pub use identity::*;
pub use limits::*;
pub use records::*;
pub use shards::*;
pub use webhooks::*;

use crate::ids::WorkspaceId;
use crate::store::{Index, Key};

/// The one secondary index: overloaded keys, projection ALL.
pub const GSI1: Index = Index {
    name: Some("gsi1"),
    pk: "gsi1pk",
    sk: "gsi1sk",
};

/// Every secondary index of the table (the embedded store maintains the same ones).
pub const GSIS: &[Index] = &[GSI1];

/// Never written: a function's cold start reads it to open its connection
/// (`lambda::app`), so the first request does not pay for that.
pub fn warm_up() -> Key {
    Key::new("WARMUP", "WARMUP")
}

/// `parts` joined, in a string of their exact length: `format!` of a few
/// strings costs several times their copy (its formatter, a string grown
/// from empty), and every create builds a dozen keys.
pub fn concat(parts: &[&str]) -> String {
    let mut text = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    parts.iter().for_each(|part| text.push_str(part));
    text
}

fn ws(workspace_id: WorkspaceId) -> String {
    // Every key of a tenant starts here: built without `format!`, with
    // room for what most keys add to it.
    let mut digits = itoa::Buffer::new();
    let mut key = String::with_capacity(32);
    key.push_str("W#");
    key.push_str(digits.format(u64::from(workspace_id)));
    key
}

pub fn workspace(workspace_id: WorkspaceId) -> Key {
    Key::new(ws(workspace_id), "WORKSPACE")
}

/// The workspace a tenant item belongs to, read from its partition key
/// (`W#<ws>` or `W#<ws>#...`); `None` for the few keys that name no
/// workspace (a token secret, the churn-reason list...).
pub fn workspace_of(key: &Key) -> Option<WorkspaceId> {
    let rest = key.pk.strip_prefix("W#")?;
    let digits = rest.split('#').next()?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(WorkspaceId)
}

/// The partition that holds one kind of record of a workspace.
pub fn collection(workspace_id: WorkspaceId, kind: &str) -> String {
    // Built in place: every read by id builds one (`format!` twice was 3% of it).
    let mut key = ws(workspace_id);
    key.reserve(kind.len() + 1);
    key.push('#');
    key.push_str(kind);
    key
}

/// The contact id at the end of an index item's sort key (`...#<id:16>` or `<id:16>`).
pub fn trailing_id(sk: &str) -> Option<u64> {
    sk.rsplit('#').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_keys_start_with_the_workspace() {
        let shards = counter(WorkspaceId(7), "CONTACT").keys();
        assert_eq!(shards.len(), 4);
        for key in shards.into_iter().chain([
            workspace(WorkspaceId(7)),
            tag(WorkspaceId(7), TagId(42)),
            tag_name(WorkspaceId(7), "vip"),
            token(WorkspaceId(7), "01J"),
            audit_entry(WorkspaceId(7), "01J"),
        ]) {
            assert!(key.pk == "W#7" || key.pk.starts_with("W#7#"), "{key:?}");
        }
        // W#7 must not be a prefix of W#70's partitions in a way a query could confuse:
        // queries are on whole partition keys, and the separator ends the number.
        let tags = |ws: u64| collection(WorkspaceId(ws), "TAG");
        assert_ne!(tags(7), tags(70));
        assert!(!tags(70).starts_with(&format!("{}#", ws(WorkspaceId(7)))));
    }

    #[test]
    fn a_tenant_key_names_its_workspace() {
        assert_eq!(
            workspace_of(&workspace(WorkspaceId(7))),
            Some(WorkspaceId(7))
        );
        assert_eq!(
            workspace_of(&tag(WorkspaceId(70), TagId(1))),
            Some(WorkspaceId(70))
        );
        assert_eq!(
            workspace_of(&token(WorkspaceId(12), "01J")),
            Some(WorkspaceId(12))
        );
        assert_eq!(workspace_of(&token_secret("abc")), None);
        assert_eq!(workspace_of(&Key::new("CHURNREASON", "x")), None);
        assert_eq!(workspace_of(&Key::new("W#", "x")), None);
        assert_eq!(workspace_of(&Key::new("W#x1#TAG", "x")), None);
    }

    #[test]
    fn tag_keys_sort_in_id_order() {
        assert!(tag(WorkspaceId(1), TagId(9)).sk < tag(WorkspaceId(1), TagId(10)).sk);
        assert_eq!(tag(WorkspaceId(1), TagId(42)).sk, "0000000000000042");
    }

    /// A key's shape: each part that varies (`{kind}` in the code,
    /// `<KIND>` in a table) written `*`.
    fn shape(key: &str) -> String {
        let mut out = String::new();
        let mut skipping = None;
        for c in key.chars() {
            match (skipping, c) {
                (None, '{') => skipping = Some('}'),
                (None, '<') => skipping = Some('>'),
                (Some(end), c) if c == end => {
                    skipping = None;
                    out.push('*');
                }
                (Some(_), _) => {}
                (None, c) => out.push(c),
            }
        }
        out
    }

    /// The shapes of the workspace partitions that a file's builders name
    /// (`collection(ws, "TAG")`, `collection(ws, &format!("DEAL#{kind}#{value}"))`).
    fn partitions_built(source: &str) -> Vec<String> {
        let code = source.split("#[cfg(test)]").next().unwrap();
        let mut out = Vec::new();
        for (at, _) in code.match_indices("collection(") {
            let call = &code[at..];
            let close = call.find(')').unwrap_or(call.len());
            let Some(quote) = call[..close].find('"') else {
                continue; // the definition, or a kind passed through
            };
            let name = &call[quote + 1..];
            out.push(format!("W#*#{}", shape(&name[..name.find('"').unwrap()])));
        }
        out
    }

    /// The shapes of the partition keys in a file's table (its pk column).
    fn partitions_documented(source: &str) -> Vec<String> {
        let mut out = Vec::new();
        for row in source.lines().filter(|line| line.starts_with("//! |")) {
            let Some(pk) = row.split('|').nth(4) else {
                continue;
            };
            out.extend(pk.split('`').skip(1).step_by(2).map(shape));
        }
        out
    }

    /// Each file's table has a row for every workspace partition its
    /// builders name, of the same shape (`W#<ws>#DEAL#<KIND>#<value>` for
    /// `DEAL#{kind}#{value}`): the rows sit beside the code that writes
    /// them, so a new record's keys and their documentation are one edit.
    /// Keys that name no workspace, and a workspace's own partition
    /// (`W#<ws>`, `mod.rs`), are built otherwise and not checked here.
    #[test]
    fn every_partition_built_has_its_row_in_the_files_table() {
        let files = [
            ("mod.rs", include_str!("mod.rs")),
            ("contacts.rs", include_str!("contacts.rs")),
            ("counters.rs", include_str!("counters.rs")),
            ("identity.rs", include_str!("identity.rs")),
            ("limits.rs", include_str!("limits.rs")),
            ("records.rs", include_str!("records.rs")),
            ("shards.rs", include_str!("shards.rs")),
            ("webhooks.rs", include_str!("webhooks.rs")),
        ];
        // Every file of the module is read: a new one joins the list.
        let declared: Vec<String> = include_str!("mod.rs")
            .lines()
            .filter_map(|line| line.strip_prefix("mod ")?.strip_suffix(';'))
            .map(|name| format!("{name}.rs"))
            .collect();
        let read: Vec<&str> = files.iter().map(|(file, _)| *file).skip(1).collect();
        assert_eq!(read, declared);
        let mut named = 0;
        for (file, source) in files {
            let documented = partitions_documented(source);
            for built in partitions_built(source) {
                named += 1;
                assert!(
                    documented.contains(&built),
                    "keys/{file} builds {built} but its table has no row of that shape: {documented:?}"
                );
            }
        }
        assert!(named > 40, "{named}");
    }
}
