//! `crm::groups()`, written from this crate's manifest: every dependency on a
//! crate of `functions/` is a resource group, served in the order listed
//! there. A new group is its dependency line, with no list to keep beside it
//! (issue #46).

use std::fmt::Write;

fn main() {
    println!("cargo:rerun-if-changed=Cargo.toml");
    let manifest = std::fs::read_to_string("Cargo.toml").expect("cli/Cargo.toml");
    let mut groups = Vec::new();
    let mut in_dependencies = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            continue;
        }
        if !in_dependencies || !line.contains("path = \"../functions/") {
            continue;
        }
        let name = line.split('=').next().unwrap_or_default().trim();
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "cli/Cargo.toml: a function crate's line names no crate: {line}"
        );
        groups.push(name.replace('-', "_"));
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
