//! Every function builds the way its deployers build it. SAM's Rust builder runs
//! `cargo lambda build --bin <Binary>` in the function's `CodeUri`;
//! cargo-lambda-cdk runs the same command in the folder of its `manifestPath`.
//! Cargo answers `--bin` from the packages that folder selects: the package
//! whose manifest is there, or, at the workspace root, only the
//! `default-members` (`cli`, so that `cargo run` serves). A function pointed at
//! the root therefore fails at `sam build` with "no bin target named `tags` in
//! default-run packages", which no lint sees. This resolves every function of
//! both templates as cargo does, from `cargo metadata`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use api_tests::serde_json::{self, Value};

use crate::cdk::model::{cdk, root, sam};

/// The workspace as `cargo metadata` sees it.
struct Workspace {
    /// Manifest folder -> (package, its bin targets).
    packages: BTreeMap<PathBuf, (String, Vec<String>)>,
    root: PathBuf,
    default_members: Vec<String>,
}

impl Workspace {
    fn read() -> Self {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let out = Command::new(cargo)
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ])
            .current_dir(root())
            .output()
            .expect("cargo metadata");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut packages = BTreeMap::new();
        let mut ids = BTreeMap::new();
        for p in meta["packages"].as_array().unwrap() {
            let dir = Path::new(p["manifest_path"].as_str().unwrap())
                .parent()
                .unwrap()
                .to_owned();
            let name = p["name"].as_str().unwrap().to_owned();
            let bins = p["targets"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["kind"].as_array().unwrap().iter().any(|k| k == "bin"))
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect();
            ids.insert(p["id"].as_str().unwrap().to_owned(), name.clone());
            packages.insert(canonical(&dir), (name, bins));
        }
        let default_members = meta["workspace_default_members"]
            .as_array()
            .expect("cargo 1.71 or later lists the default members")
            .iter()
            .map(|id| ids[id.as_str().unwrap()].clone())
            .collect();
        Workspace {
            packages,
            root: canonical(Path::new(meta["workspace_root"].as_str().unwrap())),
            default_members,
        }
    }

    /// The bins `cargo build --bin` can name when run in `dir`.
    fn bins_selected_in(&self, dir: &Path) -> Vec<String> {
        let dir = canonical(dir);
        if let Some((_, bins)) = self.packages.get(&dir) {
            return bins.clone();
        }
        assert_eq!(
            dir,
            self.root,
            "{} is no package of the workspace",
            dir.display()
        );
        self.packages
            .values()
            .filter(|(name, _)| self.default_members.contains(name))
            .flat_map(|(_, bins)| bins.clone())
            .collect()
    }
}

fn canonical(dir: &Path) -> PathBuf {
    dir.canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

/// Binary -> the folder SAM builds it in (`CodeUri`, relative to the template).
fn sam_builds() -> BTreeMap<String, PathBuf> {
    let template = sam();
    let mut builds = BTreeMap::new();
    for (name, resource) in template["Resources"].as_object().unwrap() {
        if resource["Type"] != "AWS::Serverless::Function" {
            continue;
        }
        assert_eq!(
            resource["Metadata"]["BuildMethod"], "rust-cargolambda",
            "{name}"
        );
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no BuildProperties.Binary"));
        let code_uri = resource["Properties"]["CodeUri"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no CodeUri"));
        builds.insert(binary.to_owned(), root().join("infra").join(code_uri));
    }
    builds
}

/// Binary -> the folder cargo-lambda-cdk builds it in: its asset's source, which
/// is the folder of the function's `manifestPath`.
fn cdk_builds() -> Option<BTreeMap<String, PathBuf>> {
    let template = cdk()?;
    let assets_path = root().join("infra/cdk/cdk.out/CrmApi.assets.json");
    let assets: Value =
        serde_json::from_str(&std::fs::read_to_string(assets_path).unwrap()).unwrap();
    let mut builds = BTreeMap::new();
    for (name, resource) in template["Resources"].as_object().unwrap() {
        if resource["Type"] != "AWS::Lambda::Function" {
            continue;
        }
        let Some(binary) = resource["Metadata"]["BuildProperties"]["Binary"].as_str() else {
            continue;
        };
        let key = resource["Properties"]["Code"]["S3Key"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: its code is no asset"));
        let hash = key.trim_end_matches(".zip");
        let source = assets["files"][hash]["source"]["path"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: asset {hash} not in CrmApi.assets.json"));
        builds.insert(binary.to_owned(), PathBuf::from(source));
    }
    Some(builds)
}

#[test]
fn every_sam_function_builds_its_binary_where_sam_builds_it() {
    let workspace = Workspace::read();
    let builds = sam_builds();
    // Every crate of functions/ is a Lambda function of the template
    // (places.rs holds each to a group or a worker, template.rs each group
    // to its routes), so a new group changes no number here.
    let crates = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions"))
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().join("Cargo.toml").exists())
        .count();
    assert_eq!(builds.len(), crates, "functions in infra/template.yaml");
    for (binary, dir) in &builds {
        let bins = workspace.bins_selected_in(dir);
        assert!(
            bins.contains(binary),
            "`cargo lambda build --bin {binary}` in {} (the CodeUri) sees only {bins:?}: \
             point CodeUri at the function's own crate",
            dir.display()
        );
    }
}

#[test]
fn every_cdk_function_builds_its_binary_where_cdk_builds_it() {
    let Some(builds) = cdk_builds() else { return };
    let workspace = Workspace::read();
    assert_eq!(
        builds.keys().collect::<Vec<_>>(),
        sam_builds().keys().collect::<Vec<_>>(),
        "the same functions as SAM"
    );
    for (binary, dir) in &builds {
        let bins = workspace.bins_selected_in(dir);
        assert!(
            bins.contains(binary),
            "`cargo lambda build --bin {binary}` in {} (the manifestPath's folder) sees only \
             {bins:?}: give RustFunction the function's own Cargo.toml",
            dir.display()
        );
    }
}

/// The rule above is cargo's: at the root, `--bin tags` is not found.
#[test]
fn at_the_workspace_root_only_the_default_members_are_seen() {
    let workspace = Workspace::read();
    let at_root = workspace.bins_selected_in(&root());
    assert_eq!(at_root, ["crm"], "`cargo run` at the root starts crm");
    assert!(!at_root.contains(&"tags".to_owned()));
}
