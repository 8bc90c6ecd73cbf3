//! The webhook functions as Lambda runs them: the dispatcher takes stream
//! records of new events (`events/dynamodb-event.json`'s shape) and queues
//! one delivery per matching endpoint, once however often a record comes;
//! the sender takes delivery messages and POSTs, once however often a
//! message comes; a delivery its sender left `sending` is sent once the
//! claim lapses; a retry through SQS is one receipt, never early.

use std::time::{Duration, Instant};

use api_tests::receiver::Receiver;
use api_tests::serde_json::{self, Value, json};
use api_tests::{RecordingQueue, TestApp, api_test, webhook_settings};
use aws_lambda_events::event::dynamodb::Event as StreamEvent;
use aws_lambda_events::event::sqs::SqsEvent;
use shared::domain::webhooks::{DeliveryStatus, delivery};
use shared::ids::WorkspaceId;
use shared::store::{Index, Query, SkRange};

/// `events/dynamodb-event.json` with the given new images (and a bad one when asked).
fn stream_event(images: &[Value]) -> StreamEvent {
    let path = format!(
        "{}/../events/dynamodb-event.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let template = event["Records"][0].clone();
    event["Records"] = images
        .iter()
        .enumerate()
        .map(|(n, image)| {
            let mut record = template.clone();
            record["dynamodb"]["NewImage"] = image.clone();
            record["dynamodb"]["SequenceNumber"] = json!(format!("{}", 1000 + n));
            record
        })
        .collect();
    serde_json::from_value(event).expect("a stream event")
}

/// The stored items of workspace 1's event log (every shard), as the
/// stream carries them.
async fn event_images(app: &TestApp) -> Vec<Value> {
    let mut items = Vec::new();
    for partition in shared::keys::event_partitions(WorkspaceId(1)) {
        let query = Query::new(Index::TABLE, partition, SkRange::All);
        items.extend(
            shared::page::read_up_to(app.store.as_ref(), query, 1000)
                .await
                .unwrap(),
        );
    }
    items
        .into_iter()
        .map(|item| {
            serde_json::to_value(serde_dynamo::to_item::<_, serde_dynamo::Item>(item).unwrap())
                .unwrap()
        })
        .collect()
}

fn sqs_event(bodies: &[String]) -> SqsEvent {
    let path = format!("{}/../events/sqs-job.json", env!("CARGO_MANIFEST_DIR"));
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let template = event["Records"][0].clone();
    event["Records"] = bodies
        .iter()
        .enumerate()
        .map(|(n, body)| {
            let mut record = template.clone();
            record["messageId"] = json!(format!("m{n}"));
            record["body"] = json!(body);
            record
        })
        .collect();
    serde_json::from_value(event).expect("an SQS event")
}

api_test! {
    /// A stream batch: each event an endpoint wants becomes one delivery and
    /// one message; a record that is no event is passed over, never failed.
    /// The sender posts each message once, signed, even when it comes twice.
    async fn the_stream_dispatches_and_the_sender_delivers(app) {
        let receiver = Receiver::start().await;
        let created = app.post("/v3/webhooks", json!({ "url": receiver.url, "types": ["tag.*"] })).await.expect(201);
        let secret = created["secret"].as_str().unwrap().to_owned();
        app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        app.a_contact().await;
        let mut images = event_images(&app).await;
        images.push(json!({ "pk": { "S": "W#1#EVENT" }, "_type": { "S": "Event" } }));
        let queue = RecordingQueue::default();
        let response = webhook_dispatcher::handle(app.store.as_ref(), &queue, stream_event(&images)).await;
        assert!(response.batch_item_failures.is_empty());
        let messages = queue.0.lock().unwrap().clone();
        assert_eq!(messages.len(), 1, "one tag event for one endpoint: {messages:?}");
        assert_eq!(messages[0].kind.as_deref(), Some(shared::domain::webhooks::KIND));

        let body = serde_json::to_string(&messages[0]).unwrap();
        let settings = webhook_settings();
        let response = webhook_sender::handle(app.store.as_ref(), &queue, &settings, sqs_event(&[body.clone(), body.clone()])).await;
        assert!(response.batch_item_failures.is_empty());
        let again = webhook_sender::handle(app.store.as_ref(), &queue, &settings, sqs_event(&[body])).await;
        assert!(again.batch_item_failures.is_empty());
        let got = receiver.received();
        assert_eq!(got.len(), 1, "one POST for a message received three times");
        assert_eq!(got[0].kind(), "tag.created");
        assert!(got[0].verifies_with(&secret));
        // Dispatched again (the stream sends a batch again): no second delivery.
        let before = queue.0.lock().unwrap().len();
        webhook_dispatcher::handle(app.store.as_ref(), &queue, stream_event(&images)).await;
        assert_eq!(queue.0.lock().unwrap().len(), before, "an attempted delivery is not queued again");
    }
}

api_test! {
    /// A message that is no delivery fails alone (to the dead-letter queue
    /// after its receipts); the others of its batch go through.
    async fn a_bad_message_fails_alone(app) {
        let queue = RecordingQueue::default();
        let settings = webhook_settings();
        let bad = sqs_event(&["not json".into(), json!({ "kind": "webhookDelivery", "workspaceId": 1, "jobId": "no-slash" }).to_string(),
            json!({ "kind": "webhookDelivery", "workspaceId": 1, "jobId": "wh_01M8AJ6H1EYZ6071QMZY4D7EYN/01M8AJ6H1EYZ6071QMZY4D7EYN" }).to_string()]);
        let response = webhook_sender::handle(app.store.as_ref(), &queue, &settings, bad).await;
        let failed: Vec<String> = response.batch_item_failures.iter().map(|f| f.item_identifier.clone()).collect();
        assert_eq!(failed, ["m0", "m1"], "a delivery that is gone is done, not failed");
    }
}

/// One receipt of `message` by the sender, which does not fail it.
async fn receive(app: &TestApp, queue: &RecordingQueue, message: &shared::queue::JobMessage) {
    let body = serde_json::to_string(message).unwrap();
    let settings = webhook_settings();
    let response =
        webhook_sender::handle(app.store.as_ref(), queue, &settings, sqs_event(&[body])).await;
    assert!(response.batch_item_failures.is_empty());
}

api_test! {
    /// A sender that died during its attempt (a crash, a kill, a timeout)
    /// leaves the delivery `sending` under its claim. Its message, run again,
    /// goes back to the queue until the claim lapses, naming the claim; then
    /// the delivery is sent, once. A message that waited for a claim that
    /// has ended meanwhile is done.
    async fn a_delivery_left_sending_is_sent_once_its_claim_lapses(app) {
        let receiver = Receiver::start().await;
        app.post("/v3/webhooks", json!({ "url": receiver.url, "types": ["tag.*"] })).await.expect(201);
        app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let queue = RecordingQueue::default();
        let dispatched = webhook_dispatcher::handle(app.store.as_ref(), &queue, stream_event(&event_images(&app).await)).await;
        assert!(dispatched.batch_item_failures.is_empty());
        let message = queue.0.lock().unwrap().pop().expect("a delivery message");
        // The sender that claimed it died: `sending`, its claim 1.5 s long.
        let (webhook_id, id) = message.job_id.split_once('/').unwrap();
        let store = app.store.as_ref();
        let mut left = delivery::read(store, WorkspaceId(1), webhook_id, id).await.unwrap().unwrap();
        let version = left.version;
        left.status = DeliveryStatus::Sending;
        left.lease_until = Some(shared::ids::now() + chrono::Duration::milliseconds(1500));
        assert!(delivery::save(store, &mut left, Some(version)).await.unwrap());

        receive(&app, &queue, &message).await;
        let waiting = queue.0.lock().unwrap().pop().expect("back to the queue until the claim lapses");
        assert_eq!(waiting.job_id, format!("{}/{}", message.job_id, left.lease_until.unwrap().timestamp_millis()));
        // Come too soon, it waits again; nothing is sent while the claim holds.
        receive(&app, &queue, &waiting).await;
        assert_eq!(queue.0.lock().unwrap().pop().map(|m| m.job_id), Some(waiting.job_id.clone()));
        assert!(receiver.received().is_empty());

        tokio::time::sleep(Duration::from_millis(1600)).await;
        receive(&app, &queue, &waiting).await;
        assert_eq!(receiver.received().len(), 1, "sent once the claim lapsed");
        let done = delivery::read(store, WorkspaceId(1), webhook_id, id).await.unwrap().unwrap();
        assert_eq!((done.status, done.attempt_count), (DeliveryStatus::Succeeded, 1));
        // Another message that waited for that claim (a duplicate) is done.
        receive(&app, &queue, &waiting).await;
        assert_eq!(receiver.received().len(), 1);
        assert!(queue.0.lock().unwrap().is_empty(), "nothing queued again");
    }
}

/// A fresh queue on the local SQS (moto) and an `SqsQueue` sending to it;
/// `None` (skipped) when no local SQS runs.
async fn sqs_queue() -> Option<(aws_sdk_sqs::Client, String, shared::queue::SqsQueue)> {
    let Some(endpoint) = std::env::var("CRM_TEST_SQS_ENDPOINT")
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
    let config = shared::config::Config {
        sqs_endpoint: Some(endpoint.clone()),
        ..Default::default()
    };
    let sdk = config.sdk_config().await;
    let sqs = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(&sdk)
            .endpoint_url(&endpoint)
            .build(),
    );
    let name = format!("crm-deliveries-{}", shared::ids::new_ulid().to_lowercase());
    let url = sqs
        .create_queue()
        .queue_name(&name)
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let queue = shared::queue::SqsQueue::new(&sdk, Some(&endpoint), url.clone());
    Some((sqs, url, queue))
}

api_test! {
    /// A retry through SQS, as the sender runs it: the endpoint answers 500,
    /// then 200, with a 2 s wait between (±10%). SQS delays are whole
    /// seconds, rounded up: the retry's message is received once, at or
    /// after the delivery's `nextAttemptAt`, never before it.
    async fn a_retry_through_sqs_is_one_receipt_and_never_early(app) {
        let Some((sqs, url, queue)) = sqs_queue().await else { return };
        let receiver = Receiver::start().await;
        receiver.answer(500, None);
        let created = app.post("/v3/webhooks", json!({ "url": receiver.url, "types": ["tag.*"] })).await.expect(201);
        let log_path = format!("/v3/webhooks/{}/deliveries", created["id"].as_str().unwrap());
        app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let dispatched = webhook_dispatcher::handle(app.store.as_ref(), &queue, stream_event(&event_images(&app).await)).await;
        assert!(dispatched.batch_item_failures.is_empty());
        let mut settings = webhook_settings();
        settings.schedule = vec![Duration::from_secs(2)];

        let (mut receipts, mut due) = (0, None);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let log = app.get(&log_path).await.expect(200);
            if log["data"][0]["status"] == "succeeded" {
                break;
            }
            assert!(Instant::now() < deadline, "the delivery did not end: {log}");
            let received = sqs.receive_message().queue_url(&url).max_number_of_messages(10).wait_time_seconds(1).send().await.unwrap();
            let messages = received.messages.unwrap_or_default();
            if messages.is_empty() {
                continue;
            }
            receipts += messages.len();
            let bodies: Vec<String> = messages.iter().map(|m| m.body.clone().unwrap()).collect();
            let response = webhook_sender::handle(app.store.as_ref(), &queue, &settings, sqs_event(&bodies)).await;
            assert!(response.batch_item_failures.is_empty());
            for m in &messages {
                sqs.delete_message().queue_url(&url).receipt_handle(m.receipt_handle().unwrap()).send().await.unwrap();
            }
            let log = app.get(&log_path).await.expect(200);
            if due.is_none() && log["data"][0]["status"] == "pending" {
                due = Some(log["data"][0]["nextAttemptAt"].clone());
                receiver.answer(200, None);
            }
        }
        assert_eq!(receipts, 2, "the first attempt and its retry, one receipt each");
        let log = app.get(&log_path).await.expect(200);
        let attempts = log["data"][0]["attempts"].as_array().unwrap().clone();
        assert_eq!(attempts.len(), 2, "{log}");
        let at = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
        let (first, second, due) = (at(&attempts[0]["at"]), at(&attempts[1]["at"]), at(&due.unwrap()));
        assert!(second >= due, "the retry at {second}, due at {due}");
        assert!(second - first >= chrono::Duration::milliseconds(1800), "{first} then {second}");
        assert!(second - due < chrono::Duration::seconds(3), "the retry at {second}, due at {due}");
    }
}
