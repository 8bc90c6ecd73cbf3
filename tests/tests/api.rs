//! The black-box suites of the API, one module per resource group, linked
//! into one test binary: forty binaries that each linked the AWS SDK took
//! about 3.5 GB of disk and a link each; one takes 90 MB and one link.
//! `tests/tls.rs` stays a binary of its own: it sets the process environment.
//! Run one suite with `scripts/test.sh -p api-tests --test api tags::`.

mod api_tokens;
mod audit;
mod auth;
mod batch;
mod billing;
mod build;
mod bulk;
mod campaigns;
mod cdk;
mod contacts;
mod costs;
mod dashboards;
mod deals;
mod duplicates;
mod erase;
mod errors;
mod events;
mod fresh_reads;
mod handoffs;
mod idempotency;
mod imports;
mod job_worker;
mod lambda;
mod layers;
mod limits;
mod load;
mod maxima;
mod mcp;
mod merge;
mod once;
mod openapi;
mod outreach;
mod places;
mod relations;
mod robustness;
mod scale;
mod scopes;
mod seams;
mod sessions;
mod settings;
mod snapshots;
mod store;
mod tags;
mod template;
mod threat_model;
mod utility;
mod webhook_functions;
mod webhooks;
mod workspaces;

/// A suite left out of the list above would never run: each file here is a
/// module of this binary, but for `tls.rs`.
#[test]
fn every_suite_is_a_module_of_this_binary() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let listed = include_str!("api.rs");
    for entry in std::fs::read_dir(here).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(suite) = name.strip_suffix(".rs") else {
            continue;
        };
        if suite != "api" && suite != "tls" {
            assert!(
                listed.contains(&format!("\nmod {suite};\n")),
                "add `mod {suite};` to tests/tests/api.rs"
            );
        }
    }
}
