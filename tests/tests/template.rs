//! The SAM template and the code agree: every route a group's Router serves is
//! an HttpApi event of that group's function and nothing else is; the table and
//! its indexes are the ones the code queries; no code path can issue a Scan.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_yaml::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn template() -> Value {
    let text =
        std::fs::read_to_string(root().join("infra/template.yaml")).expect("infra/template.yaml");
    serde_yaml::from_str(&text).expect("valid YAML")
}

fn resources(template: &Value) -> Vec<(String, Value)> {
    template["Resources"]
        .as_mapping()
        .expect("Resources")
        .iter()
        .map(|(k, v)| (k.as_str().unwrap().to_owned(), v.clone()))
        .collect()
}

/// (function binary, METHOD, path) of every HttpApi event of the template.
fn template_routes(template: &Value) -> BTreeSet<(String, String, String)> {
    let mut routes = BTreeSet::new();
    for (_, resource) in resources(template) {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let Some(events) = resource["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for (_, event) in events {
            if event["Type"].as_str() == Some("HttpApi") {
                let p = &event["Properties"];
                routes.insert((
                    binary.clone(),
                    p["Method"].as_str().unwrap().to_uppercase(),
                    p["Path"].as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    routes
}

/// Every function serving a route behind a token leases rate-limit buckets
/// (shared/src/ratelimit.rs): one BatchGetItem and one PutItem in the
/// workspace's rate partition. Without them, each lease fails (open) and
/// costs every request a refused round trip.
#[test]
fn every_function_behind_a_token_may_lease_its_rate_limits() {
    let behind_a_token: BTreeSet<String> = crm::groups()
        .iter()
        .filter(|g| {
            g.routes()
                .iter()
                .any(|r| r.need != Some(shared::auth::Need::Public))
        })
        .map(|g| g.name.to_owned())
        .collect();
    let bucket = shared::keys::rate_bucket(shared::ids::WorkspaceId(7), "abc").pk;
    assert_eq!(bucket, "W#7#RATE", "the partition the statements name");
    let mut checked = BTreeSet::new();
    for (_, resource) in resources(&template()) {
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if !behind_a_token.contains(&binary) {
            continue;
        }
        let statements: Vec<&Value> = resource["Properties"]["Policies"]
            .as_sequence()
            .into_iter()
            .flatten()
            .flat_map(|p| p["Statement"].as_sequence().into_iter().flatten())
            .collect();
        for action in ["dynamodb:BatchGetItem", "dynamodb:PutItem"] {
            let allowed = statements.iter().any(|s| {
                s["Action"]
                    .as_sequence()
                    .is_some_and(|a| a.iter().any(|a| a.as_str() == Some(action)))
                    && (s["Condition"].is_null()
                        || serde_yaml::to_string(&s["Condition"])
                            .unwrap()
                            .contains("W#*#RATE"))
            });
            assert!(allowed, "{binary}: {action} on the rate-limit partitions");
        }
        checked.insert(binary);
    }
    assert_eq!(checked, behind_a_token, "a function of each such group");
}

#[test]
fn template_routes_are_the_served_routes() {
    let served: BTreeSet<_> = crm::groups()
        .iter()
        .flat_map(|g| {
            g.routes()
                .iter()
                .map(move |r| (g.name.to_owned(), r.method.to_string(), r.path.to_owned()))
        })
        .collect();
    let declared = template_routes(&template());
    let missing: Vec<_> = served.difference(&declared).collect();
    let extra: Vec<_> = declared.difference(&served).collect();
    assert!(
        missing.is_empty(),
        "served but not in infra/template.yaml: {missing:#?}"
    );
    assert!(
        extra.is_empty(),
        "in infra/template.yaml but not served: {extra:#?}"
    );
}

#[test]
fn every_function_is_a_crate_of_the_workspace_built_for_lambda() {
    for (name, resource) in resources(&template()) {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        assert_eq!(
            resource["Metadata"]["BuildMethod"].as_str(),
            Some("rust-cargolambda"),
            "{name}"
        );
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap();
        let manifest = root().join("functions").join(binary).join("Cargo.toml");
        assert!(manifest.exists(), "{name}: no crate at functions/{binary}");
    }
    let globals = &template()["Globals"]["Function"];
    assert_eq!(globals["Runtime"].as_str(), Some("provided.al2023"));
    assert_eq!(globals["Architectures"][0].as_str(), Some("arm64"));
}

#[test]
fn the_table_has_the_indexes_the_code_queries() {
    let template = template();
    let table = &template["Resources"]["Table"]["Properties"];
    let key_names = |schema: &Value| -> Vec<String> {
        schema
            .as_sequence()
            .unwrap()
            .iter()
            .map(|k| k["AttributeName"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        key_names(&table["KeySchema"]),
        vec![shared::store::PK, shared::store::SK]
    );
    let indexes = table["GlobalSecondaryIndexes"].as_sequence().unwrap();
    assert_eq!(indexes.len(), shared::keys::GSIS.len());
    for (declared, used) in indexes.iter().zip(shared::keys::GSIS) {
        assert_eq!(declared["IndexName"].as_str(), used.name);
        assert_eq!(key_names(&declared["KeySchema"]), vec![used.pk, used.sk]);
        assert_eq!(
            declared["Projection"]["ProjectionType"].as_str(),
            Some("ALL")
        );
    }
}

/// The store trait has no scan; this keeps anyone from calling the SDK's.
#[test]
fn no_code_path_issues_a_scan() {
    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.ends_with("target") {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for dir in ["shared", "functions", "cli"] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 10);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for needle in [".scan()", "ScanInput", "operation::scan"] {
            assert!(!text.contains(needle), "{} uses {needle}", file.display());
        }
    }
}

/// The job worker reads the queue with partial batch responses, and the queue
/// sends what keeps failing to a dead-letter queue.
#[test]
fn jobs_go_through_sqs_with_a_dead_letter_queue() {
    let template = template();
    let r = &template["Resources"];
    let event = &r["JobWorkerFunction"]["Properties"]["Events"]["Jobs"];
    assert_eq!(event["Type"].as_str(), Some("SQS"));
    assert_eq!(
        event["Properties"]["FunctionResponseTypes"][0].as_str(),
        Some("ReportBatchItemFailures")
    );
    assert_eq!(
        r["JobWorkerFunction"]["Metadata"]["BuildProperties"]["Binary"].as_str(),
        Some("job-worker")
    );
    let redrive = &r["JobQueue"]["Properties"]["RedrivePolicy"];
    assert!(redrive["maxReceiveCount"].as_u64().is_some_and(|n| n > 1));
    assert_eq!(
        r["JobDeadLetterQueue"]["Type"].as_str(),
        Some("AWS::SQS::Queue")
    );
    let visibility = r["JobQueue"]["Properties"]["VisibilityTimeout"]
        .as_u64()
        .unwrap();
    let timeout = r["JobWorkerFunction"]["Properties"]["Timeout"]
        .as_u64()
        .unwrap();
    assert!(
        visibility >= 6 * timeout,
        "visibility {visibility} < 6 x timeout {timeout}"
    );
    assert!(
        r["ContactsFunction"]["Properties"]["Environment"]["Variables"]["CRM_JOB_QUEUE_URL"]
            .is_tagged_or_string()
    );
}

trait TaggedOrString {
    fn is_tagged_or_string(&self) -> bool;
}

impl TaggedOrString for Value {
    fn is_tagged_or_string(&self) -> bool {
        matches!(self, Value::Tagged(_) | Value::String(_))
    }
}

/// Items with an expiry carry it in the attribute the table's time to live
/// reads; the table streams new items (the welcome-message outbox).
#[test]
fn expiring_items_use_the_tables_time_to_live() {
    let template = template();
    let table = &template["Resources"]["Table"]["Properties"];
    let ttl = &table["TimeToLiveSpecification"];
    assert_eq!(ttl["AttributeName"].as_str(), Some(shared::store::TTL));
    assert_eq!(ttl["Enabled"].as_bool(), Some(true));
    assert_eq!(
        table["StreamSpecification"]["StreamViewType"].as_str(),
        Some("NEW_IMAGE")
    );
}

/// `crm create-table` (and every test table) makes the stream the template
/// declares: without it, a table made for the cargo-lambda path has no
/// stream, and the webhook dispatcher never runs there.
#[tokio::test]
async fn the_table_made_by_create_table_has_the_templates_stream() {
    let declared =
        template()["Resources"]["Table"]["Properties"]["StreamSpecification"]["StreamViewType"]
            .as_str()
            .map(str::to_owned);
    assert_eq!(
        declared.as_deref(),
        Some(shared::store::dynamo::STREAM_VIEW.as_str())
    );
    let Some(made) = api_tests::TestApp::declared_table_stream().await else {
        return;
    };
    assert_eq!(
        made,
        (true, declared.unwrap()),
        "DescribeTable of a table made by create_table"
    );
}
