//! The webhook functions as Lambda runs them: the dispatcher takes stream
//! records of new events (`events/dynamodb-event.json`'s shape) and queues
//! one delivery per matching endpoint, once however often a record comes;
//! the sender takes delivery messages and POSTs, once however often a
//! message comes.

use api_tests::receiver::Receiver;
use api_tests::serde_json::{self, Value, json};
use api_tests::{RecordingQueue, TestApp, api_test, webhook_settings};
use aws_lambda_events::event::dynamodb::Event as StreamEvent;
use aws_lambda_events::event::sqs::SqsEvent;
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

/// The stored items of workspace 1's event log, as the stream carries them.
async fn event_images(app: &TestApp) -> Vec<Value> {
    let query = Query::new(
        Index::TABLE,
        shared::keys::events(WorkspaceId(1)),
        SkRange::All,
    );
    let items = shared::page::read_up_to(app.store.as_ref(), query, 1000)
        .await
        .unwrap();
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
