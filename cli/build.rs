//! `crm::groups()`, written from this crate's manifest: every dependency on a
//! crate of `functions/` is a resource group, served in the order listed
//! there. A new group is its dependency line, with no list to keep beside it
//! (issue #46). `tests/tests/places.rs` holds that every crate of
//! `functions/` but the workers is one of them.

use std::fmt::Write;

/// The one form read: `name = { path = "../functions/name" }`. Any other
/// line naming `functions/` is refused rather than skipped, since a group
/// left out would vanish from every list made from `groups()`.
fn function_crate(line: &str, in_dependencies: bool) -> Option<String> {
    if !line.contains("functions/") {
        return None;
    }
    let (name, rest) = line.split_once('=').unwrap_or_default();
    let name = name.trim();
    let dir = rest
        .trim()
        .strip_prefix("{ path = \"../functions/")
        .and_then(|rest| rest.strip_suffix("\" }"));
    assert!(
        in_dependencies
            && dir == Some(name)
            && !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
        "cli/Cargo.toml: write a function crate as `name = {{ path = \"../functions/name\" }}` \
         under [dependencies]: {line}"
    );
    Some(name.replace('-', "_"))
}

fn main() {
    println!("cargo:rerun-if-changed=Cargo.toml");
    let manifest = std::fs::read_to_string("Cargo.toml").expect("cli/Cargo.toml");
    let mut groups = Vec::new();
    let mut in_dependencies = false;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            assert!(
                !line.contains("functions"),
                "cli/Cargo.toml: write a function crate as one line under [dependencies]: {line}"
            );
        } else if let Some(group) = function_crate(line, in_dependencies) {
            groups.push(group);
        }
    }
    assert!(
        !groups.is_empty(),
        "cli/Cargo.toml depends on no crate of functions/"
    );
    let mut out = String::from(
        "/// Every resource group of the API: each crate of `functions/` this\n\
         /// crate depends on (`build.rs`), in the order of its manifest.\n\
         pub fn groups() -> Vec<Group> {\n    vec![\n",
    );
    for group in &groups {
        writeln!(out, "        {group}::group(),").unwrap();
    }
    out.push_str("    ]\n}\n");
    let target = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("groups.rs");
    std::fs::write(target, out).expect("OUT_DIR/groups.rs");
}
