//! The CDK app (infra/cdk) and the SAM template (infra/template.yaml) describe
//! the same stack: the same functions with the same settings, routes,
//! environment, DynamoDB actions, logs and alarms; the same table, queues,
//! parameters and API-wide alarms. Compared on what matters, resource by
//! resource, from CDK's synthesized CloudFormation (`npm run synth`, which
//! scripts/test.sh runs) and the SAM template before its transform.

// Its own folder: suites are loaded by `#[path]` (tests/build.rs).
#[path = "cdk/model.rs"]
pub(crate) mod model;
#[path = "cdk/sam.rs"]
mod sam;

use api_tests::serde_json::json;
use model::{cdk, from_cdk, from_sam, sam};

/// Every function as its code declares it (`shared::deploy`): the groups'
/// `deployed(...)` and the workers' `function()`.
fn declared_functions() -> Vec<shared::deploy::Function> {
    let mut functions: Vec<_> = crm::groups()
        .iter()
        .map(|group| {
            group.function().cloned().unwrap_or_else(|| {
                panic!(
                    "group {} declares no Lambda function (Group::deployed)",
                    group.name
                )
            })
        })
        .collect();
    functions.extend([
        job_worker::function(),
        webhook_dispatcher::function(),
        webhook_sender::function(),
    ]);
    functions
}

/// infra/functions.json, the CDK app's list of functions, is made from the
/// declarations in the code; the SAM template is held to the CDK app below.
#[test]
fn the_cdk_function_list_is_generated_from_the_code() {
    let path = model::root().join("infra/functions.json");
    let generated = api_tests::serde_json::to_string_pretty(&declared_functions()).unwrap() + "\n";
    if std::env::var_os("UPDATE_INFRA").is_some() {
        std::fs::write(&path, &generated).expect("infra/functions.json written");
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "infra/functions.json is not what the code declares; run \
         `UPDATE_INFRA=1 cargo test -p api-tests --test api cdk::` and commit it"
    );
}

/// The SAM template's API functions (with their log groups and alarms) are
/// made from the groups' declarations and routes; the workers, the table,
/// the queues and the bucket around them are written by hand.
#[test]
fn the_sam_functions_are_generated_from_the_code() {
    let path = model::root().join("infra/template.yaml");
    let text = std::fs::read_to_string(&path).expect("infra/template.yaml");
    let (before, rest) = text
        .split_once(sam::BEGIN)
        .expect("the template's first marker line (tests/tests/cdk/sam.rs BEGIN)");
    let (_, after) = rest
        .split_once(sam::END)
        .expect("the template's last marker line (tests/tests/cdk/sam.rs END)");
    let generated = format!("{before}{}{after}", sam::functions(&crm::groups()));
    if std::env::var_os("UPDATE_INFRA").is_some() {
        std::fs::write(&path, &generated).expect("infra/template.yaml written");
    }
    let checked_in = std::fs::read_to_string(&path).expect("infra/template.yaml");
    assert!(
        checked_in == generated,
        "infra/template.yaml's API functions are not what the code declares; run \
         `UPDATE_INFRA=1 cargo test -p api-tests --test api cdk::` and commit it"
    );
}

#[test]
fn cdk_and_sam_describe_the_same_stack() {
    let Some(cdk) = cdk() else { return };
    let sam = from_sam(&sam());
    let cdk = from_cdk(&cdk);
    assert_eq!(
        sam.functions.keys().collect::<Vec<_>>(),
        cdk.functions.keys().collect::<Vec<_>>(),
        "functions"
    );
    for (binary, in_sam) in &sam.functions {
        assert_eq!(
            in_sam, &cdk.functions[binary],
            "function {binary}: SAM (left) and CDK (right) differ"
        );
    }
    assert_eq!(sam.parameters, cdk.parameters, "parameters");
    assert_eq!(sam.table, cdk.table, "the table");
    assert_eq!(
        sam.table_policies, cdk.table_policies,
        "the table's deletion policy"
    );
    assert_eq!(sam.queues, cdk.queues, "the queues");
    assert_eq!(sam.buckets, cdk.buckets, "the files bucket and its policy");
    assert_eq!(
        sam.api_throttling, cdk.api_throttling,
        "the API's throttling"
    );
    assert_eq!(sam.other_alarms, cdk.other_alarms, "alarms");
}

#[test]
fn both_carry_what_production_needs() {
    let sam = from_sam(&sam());
    assert_eq!(
        sam.table_policies,
        (
            json!({ "Ref": "TableDeletionPolicy" }),
            json!({ "Ref": "TableDeletionPolicy" })
        )
    );
    assert_eq!(
        sam.table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"],
        true
    );
    for (binary, f) in &sam.functions {
        assert_eq!(
            f.log_retention,
            json!({ "Ref": "LogRetentionDays" }),
            "{binary}: log retention"
        );
        assert_eq!(f.alarms.len(), 2, "{binary}: errors and throttles alarms");
    }
    // The files: encrypted, never public, TLS only, gone after 7 days.
    let bucket = &sam.buckets["FilesBucket"];
    assert_eq!(
        bucket["PublicAccessBlockConfiguration"],
        json!({"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true})
    );
    assert!(bucket["BucketEncryption"].to_string().contains("AES256"));
    assert_eq!(
        bucket["LifecycleConfiguration"]["Rules"][0]["ExpirationInDays"],
        7
    );
    assert!(
        sam.buckets["FilesBucketPolicy"]
            .to_string()
            .contains("aws:SecureTransport")
    );
    for dead_letters in ["JobDeadLetterQueue", "WebhookDeadLetterQueue"] {
        let alarm = format!("{dead_letters}: AWS/SQS/ApproximateNumberOfMessagesVisible");
        assert!(
            sam.other_alarms.iter().any(|a| a.starts_with(&alarm)),
            "{alarm}"
        );
    }
    // Every queue that takes messages has a dead-letter queue, and every
    // function a queue or the stream invokes reports partial failures.
    for (name, queue) in &sam.queues {
        if !name.contains("DeadLetter") {
            assert_eq!(queue["RedrivePolicy"]["maxReceiveCount"], 5, "{name}");
        }
    }
    for (binary, f) in &sam.functions {
        if let Some(source) = &f.event_source {
            assert_eq!(
                source["FunctionResponseTypes"],
                json!(["ReportBatchItemFailures"]),
                "{binary}"
            );
        }
    }
    let stream = sam.functions["webhook-dispatcher"]
        .event_source
        .as_ref()
        .unwrap();
    assert_eq!(
        (&stream["source"], &stream["OnFailure"]),
        (&json!("Table"), &json!("WebhookDeadLetterQueue"))
    );
    assert!(
        sam.other_alarms
            .iter()
            .any(|a| a.starts_with("HttpApi: AWS/ApiGateway/5xx"))
    );
}
