//! The job worker as Lambda runs it: SQS events in, the ids of failed
//! messages out (partial batch responses), idempotent on redelivery, one
//! dispatch on the message's kind. With a local
//! SQS (moto, started by scripts/test.sh), the whole path: the API sends to SQS,
//! the worker takes the messages from it.

use std::sync::Arc;
use std::time::Duration;

use api_tests::serde_json::{self, Value, json};
use api_tests::{RecordingQueue, TestApp, api_test};
use aws_lambda_events::event::sqs::SqsEvent;
use shared::auth::Caller;
use shared::domain::imports::{self, ImportRequest};
use shared::queue::JobMessage;

/// The event file of `events/`, with these message bodies.
fn sqs_event(bodies: &[(&str, String)]) -> SqsEvent {
    let path = format!("{}/../events/sqs-job.json", env!("CARGO_MANIFEST_DIR"));
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let template = event["Records"][0].clone();
    event["Records"] = bodies
        .iter()
        .map(|(id, body)| {
            let mut record = template.clone();
            record["messageId"] = json!(id);
            record["body"] = json!(body);
            record
        })
        .collect();
    serde_json::from_value(event).expect("an SQS event")
}

async fn queued_job(app: &TestApp, n: usize) -> JobMessage {
    let queue = RecordingQueue::default();
    let contacts: Vec<Value> = (0..n)
        .map(|i| json!({ "name": format!("w{i}"), "phone": format!("21 9{:08}", 70_000_000 + i) }))
        .collect();
    let request: ImportRequest = serde_json::from_value(json!({ "contacts": contacts })).unwrap();
    imports::start(
        app.store.as_ref(),
        &queue,
        &Caller::system(1, "test"),
        request,
    )
    .await
    .unwrap();
    queue.0.lock().unwrap()[0].clone()
}

fn failed_ids(response: &aws_lambda_events::event::sqs::SqsBatchResponse) -> Vec<String> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

api_test! {
    /// A good message runs its job; a malformed one and one of an unknown job are
    /// reported back, so SQS retries only those (then moves them to the DLQ).
    async fn reports_only_the_failed_messages(app) {
        let message = queued_job(&app, 3).await;
        assert_eq!(message.kind.as_deref(), Some("contactImport"));
        let unknown = JobMessage::new("contactImport", 1, shared::ids::new_ulid());
        let strange = JobMessage::new("teleport", 1, message.job_id.clone());
        let event = sqs_event(&[
            ("good", serde_json::to_string(&message).unwrap()),
            ("garbled", "{not json".to_owned()),
            ("unknown-job", serde_json::to_string(&unknown).unwrap()),
            ("unknown-kind", serde_json::to_string(&strange).unwrap()),
        ]);
        let response = job_worker::handle(app.store.as_ref(), Default::default(), event).await;
        assert_eq!(failed_ids(&response), ["garbled", "unknown-job", "unknown-kind"]);
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 3);
        let job = app.get(&format!("/v3/contacts/import/{}", message.job_id)).await.expect(200);
        assert_eq!((job["status"].clone(), job["created"].clone()), (json!("done"), json!(3)));

        // Redelivered: nothing new, nothing failed.
        let again = job_worker::handle(app.store.as_ref(), Default::default(), sqs_event(&[("good", serde_json::to_string(&message).unwrap())])).await;
        assert!(again.batch_item_failures.is_empty());
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 3);
    }
}

api_test! {
    /// Messages queued before jobs had kinds (`{ workspaceId, jobId }`) were all
    /// contact imports, and still run as such.
    async fn runs_messages_of_the_first_shape_as_imports(app) {
        let message = queued_job(&app, 2).await;
        let first_shape = json!({ "workspaceId": message.workspace_id, "jobId": message.job_id });
        let response = job_worker::handle(app.store.as_ref(), Default::default(), sqs_event(&[("old", first_shape.to_string())])).await;
        assert!(response.batch_item_failures.is_empty());
        let job = app.get(&format!("/v3/contacts/import/{}", message.job_id)).await.expect(200);
        assert_eq!((job["status"].clone(), job["created"].clone()), (json!("done"), json!(2)));
    }
}

/// DynamoDB Local and a fresh queue on the local SQS, and the API sending to
/// it; `None` (skipped) when they are not running.
async fn with_sqs() -> Option<(TestApp, aws_sdk_sqs::Client, String, axum::Router)> {
    let Some(sqs_endpoint) = std::env::var("CRM_TEST_SQS_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
    else {
        assert!(
            std::env::var("CRM_REQUIRE_SQS").as_deref() != Ok("1"),
            "a local SQS is required (CRM_TEST_SQS_ENDPOINT)"
        );
        eprintln!("skipped: no local SQS (use scripts/test.sh)");
        return None;
    };
    let app = TestApp::dynamodb().await?;
    let config = shared::config::Config {
        sqs_endpoint: Some(sqs_endpoint.clone()),
        ..Default::default()
    };
    let sdk = config.sdk_config().await;
    let sqs = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(&sdk)
            .endpoint_url(&sqs_endpoint)
            .build(),
    );
    let queue_name = format!("crm-jobs-{}", shared::ids::new_ulid().to_lowercase());
    let url = sqs
        .create_queue()
        .queue_name(&queue_name)
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let config = shared::config::Config {
        job_queue_url: Some(url.clone()),
        ..config
    };
    let queue = Arc::new(config.job_queue_with(&sdk).expect("a queue url"));
    let router = crm::app(shared::http::AppState::new(app.store.clone()).with_queue(queue));
    Some((app, sqs, url, router))
}

/// The messages waiting on the queue, as the worker's SQS event.
async fn receive(sqs: &aws_sdk_sqs::Client, url: &str) -> SqsEvent {
    let mut records = Vec::new();
    for _ in 0..20 {
        let received = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        records.extend(received.messages.unwrap_or_default());
        if !records.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(records.len(), 1, "one message per job");
    let bodies: Vec<(&str, String)> = records
        .iter()
        .map(|m| (m.message_id.as_deref().unwrap(), m.body.clone().unwrap()))
        .collect();
    sqs_event(&bodies)
}

/// A dashboard snapshot on a local SQS: the API records it and sends its job
/// to SQS; the worker computes it from the message received.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_travel_through_sqs() {
    let Some((app, sqs, url, router)) = with_sqs().await else {
        return;
    };
    let call = |method: &str, path: &str, body: Value| {
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .header(
                "authorization",
                format!("Bearer {}", api_tests::ADMIN_TOKEN),
            )
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        tower::ServiceExt::oneshot(router.clone(), request)
    };
    call("POST", "/v3/contacts", json!({ "name": "Ana" }))
        .await
        .unwrap();
    let layout = json!([{ "i": "a", "x": 0, "y": 0, "w": 1, "h": 1, "metric": "contactsCreated" }]);
    let d = app
        .post(
            "/v3/dashboards",
            json!({ "name": "KPIs", "layout": layout }),
        )
        .await
        .expect(201);
    let id = d["id"].as_str().unwrap();
    let response = call(
        "POST",
        &format!("/v3/dashboards/{id}/snapshots"),
        json!({ "authorId": 1, "authorName": "A" }),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 201);
    let response = job_worker::handle(
        app.store.as_ref(),
        Default::default(),
        receive(&sqs, &url).await,
    )
    .await;
    assert!(response.batch_item_failures.is_empty());
    let page = app
        .get(&format!("/v3/dashboards/{id}/snapshots"))
        .await
        .expect(200);
    assert_eq!(page["data"][0]["status"]["state"], "done");
    assert_eq!(page["data"][0]["data"]["a"]["value"], 1);
}

/// The whole path on a local SQS: POST /v3/contacts/import sends the job to SQS;
/// the messages received from SQS run through the worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_travel_through_sqs() {
    let Some((app, sqs, url, router)) = with_sqs().await else {
        return;
    };
    let contacts: Vec<Value> = (0..40)
        .map(|i| json!({ "name": format!("s{i}"), "phone": format!("31 9{:08}", 50_000_000 + i) }))
        .collect();
    let request = http::Request::builder()
        .method("POST")
        .uri("/v3/contacts/import")
        .header(
            "authorization",
            format!("Bearer {}", api_tests::ADMIN_TOKEN),
        )
        .header("content-type", "application/json")
        .body(axum::body::Body::from(
            json!({ "contacts": contacts }).to_string(),
        ))
        .unwrap();
    let response = tower::ServiceExt::oneshot(router, request).await.unwrap();
    assert_eq!(response.status(), 201);

    let response = job_worker::handle(
        app.store.as_ref(),
        Default::default(),
        receive(&sqs, &url).await,
    )
    .await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 40);
}
