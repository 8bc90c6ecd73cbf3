//! The places a new resource group touches (issue #46), counted: the files
//! that exist before it and that a plain group (one like campaigns: records
//! with events and `crm load` lines, a Lambda function, list and `{id}`
//! routes) must edit, besides its own new files (its domain module, its
//! function crate, its test file). docs/adding-a-group.md shows the same
//! list and its count.
//!
//! A registry kept by hand is a file that names every group. Each such file
//! is here: a place, a file generated from the places, or a file that names
//! the groups for another reason (said beside it). A new one fails the
//! test until it is counted, or made from what a group declares.

use std::path::{Path, PathBuf};

/// The files a plain new group edits, with what it adds to each.
#[rustfmt::skip]
const PLACES: &[(&str, &str)] = &[
    ("shared/src/keys/records.rs", "its id type (`id_type!`), its key builders, their access-pattern rows"),
    ("shared/src/domain/mod.rs", "`pub mod`; its call in `line_types()`"),
    ("shared/src/auth/scope.rs", "its entry in `resources!`: its scope resource and its event types"),
    ("cli/Cargo.toml", "its function crate (cli/build.rs makes `groups()` from these lines)"),
    ("examples/generate-demo.py", "its demo records"),
    ("docs/spec-coverage.md", "its routes' rows"),
    ("docs/api-contract.md", "its rules; its event types' row in the events table"),
    ("README.md", "a curl"),
];

/// Files made from the places and the group's own code by a command.
#[rustfmt::skip]
const GENERATED: &[(&str, &str)] = &[
    ("docs/openapi.json", "UPDATE_OPENAPI=1 cargo test -p api-tests --test api openapi::"),
    ("infra/functions.json", "UPDATE_INFRA=1 cargo test -p api-tests --test api cdk::"),
    ("infra/template.yaml", "the API functions: UPDATE_INFRA=1 cargo test -p api-tests --test api cdk::"),
    ("examples/demo.jsonl", "python3 examples/generate-demo.py"),
    ("Cargo.lock", "cargo, on the next build"),
];

/// Files that name every group without being a list a new group joins.
#[rustfmt::skip]
const NAMING_THEM_ALL: &[(&str, &str)] = &[
    ("docs/bench-results.md", "figures of the groups measured"),
    ("docs/openapi.released.json", "the last released document, changed at a release"),
    ("bench/src/main.rs", "the requests the bench measures"),
    ("cli/src/main.rs", "`crm load`'s help names what the demo holds"),
    ("tests/tests/maxima.rs", "the documented maxima of several groups"),
    ("tests/tests/places.rs", "this count"),
];

/// Groups whose names no other word contains: a file naming all of them
/// names every group. Each is a pattern of lowercase spellings.
const GROUPS: &[&[&str]] = &[
    &["campaign"],
    &["dashboard"],
    &["product"],
    &[
        "businesshour",
        "business_hour",
        "business-hour",
        "business hour",
    ],
    &[
        "customfield",
        "custom_field",
        "custom-field",
        "custom field",
    ],
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn text(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The repository's text files, as paths from its root.
fn files(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || ["target", "node_modules", "cdk.out"].contains(&name.as_str()) {
            continue;
        }
        if path.is_dir() {
            files(&path, out);
        } else if std::fs::read_to_string(&path).is_ok() {
            let relative = path.strip_prefix(root()).unwrap();
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

fn names_every_group(text: &str) -> bool {
    let text = text.to_lowercase();
    GROUPS
        .iter()
        .all(|spellings| spellings.iter().any(|s| text.contains(s)))
}

#[test]
fn the_places_are_the_ones_campaigns_took_and_the_guide_counts() {
    let guide = text("docs/adding-a-group.md");
    let count = format!("**{} places**", PLACES.len());
    assert!(
        guide.contains(&count),
        "docs/adding-a-group.md does not say {count}"
    );
    for (place, what) in PLACES {
        assert!(
            text(place).to_lowercase().contains("campaign"),
            "{place} has no campaigns in it"
        );
        assert!(
            guide.contains(&format!("`{place}`")),
            "docs/adding-a-group.md does not list {place} ({what})"
        );
    }
    for (file, command) in GENERATED {
        assert!(text(file).to_lowercase().contains("campaign"), "{file}");
        assert!(
            guide.contains(&format!("`{file}`")),
            "docs/adding-a-group.md does not list {file} ({command})"
        );
    }
}

#[test]
fn every_file_that_names_every_group_is_counted() {
    let mut all = Vec::new();
    files(&root(), &mut all);
    assert!(all.len() > 100, "{all:?}");
    let counted: Vec<&str> = PLACES
        .iter()
        .chain(GENERATED)
        .chain(NAMING_THEM_ALL)
        .map(|(file, _)| *file)
        .collect();
    let registries: Vec<&String> = all
        .iter()
        .filter(|file| names_every_group(&text(file)))
        .collect();
    let uncounted: Vec<&&String> = registries
        .iter()
        .filter(|file| !counted.contains(&file.as_str()))
        .collect();
    assert!(
        uncounted.is_empty(),
        "{uncounted:?} name every group: places a new group edits (add them to PLACES and \
         docs/adding-a-group.md), or make them from what the groups declare"
    );
    for (file, why) in NAMING_THEM_ALL {
        assert!(
            registries.iter().any(|r| r == file),
            "{file} no longer names every group ({why}): drop it"
        );
    }
}

/// `crm::groups()` is made from cli/Cargo.toml (cli/build.rs), and the
/// document, the template's functions and the CDK list from the groups: a
/// function crate left out of cli/Cargo.toml would be in none of them, and
/// no other test would see it missing. So every crate of functions/ is a
/// group, or one of the workers, which have no routes.
#[test]
fn every_function_crate_is_a_group_or_a_worker() {
    const WORKERS: [&str; 3] = ["job-worker", "webhook-dispatcher", "webhook-sender"];
    let groups: Vec<&str> = crm::groups().iter().map(|g| g.name).collect();
    let mut crates = 0;
    for entry in std::fs::read_dir(root().join("functions")).unwrap().flatten() {
        if !entry.path().join("Cargo.toml").exists() {
            continue;
        }
        crates += 1;
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            groups.contains(&name.as_str()) || WORKERS.contains(&name.as_str()),
            "functions/{name} is no group of crm::groups(): add \
             `{name} = {{ path = \"../functions/{name}\" }}` to cli/Cargo.toml"
        );
    }
    assert_eq!(crates, groups.len() + WORKERS.len(), "{groups:?}");
}
