//! Webhooks from `crm serve` as a user runs it: deliveries that were pending
//! when the process was killed (SIGKILL, no chance to tidy up), or whose
//! attempts were under way, are all made after the restart, signed, each
//! event under one `webhook-id`.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{call, id_of, start_with};

/// One POST the receiver got, and what it answered.
struct Delivery {
    headers: http::HeaderMap,
    body: String,
    answered: u16,
}

impl Delivery {
    fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    }

    fn event(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_default()
    }
}

/// A receiver on 127.0.0.1 that answers 503 while it is down and 200 once
/// it is up, or, while it hangs, takes each request and never answers it
/// (`answered` 0); it keeps every request.
struct Receiver {
    url: String,
    up: Arc<AtomicBool>,
    hang: Arc<AtomicBool>,
    got: Arc<Mutex<Vec<Delivery>>>,
}

impl Receiver {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hooks", listener.local_addr().unwrap());
        let (up, hang, got) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
            Arc::default(),
        );
        let (up_, hang_, got_): (_, _, Arc<Mutex<Vec<Delivery>>>) =
            (up.clone(), hang.clone(), Arc::clone(&got));
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (up, hang, got) = (up_.clone(), hang_.clone(), got_.clone());
                std::thread::spawn(move || {
                    let hung = hang.load(Ordering::SeqCst);
                    let answered = match (hung, up.load(Ordering::SeqCst)) {
                        (true, _) => 0,
                        (false, true) => 200,
                        (false, false) => 503,
                    };
                    if let Some((headers, body)) = read_request(&stream) {
                        got.lock().unwrap().push(Delivery {
                            headers,
                            body,
                            answered,
                        });
                    }
                    if hung {
                        // Accepted, never answered: held open until the
                        // test stops hanging, then dropped.
                        while hang.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        return;
                    }
                    let _ = write!(
                        &stream,
                        "HTTP/1.1 {answered} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    );
                });
            }
        });
        Self { url, up, hang, got }
    }
}

fn read_request(stream: &std::net::TcpStream) -> Option<(http::HeaderMap, String)> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut headers = http::HeaderMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let Some((name, value)) = line.trim_end().split_once(':') else {
            break;
        };
        headers.insert(
            http::HeaderName::from_bytes(name.trim().as_bytes()).ok()?,
            http::HeaderValue::from_str(value.trim()).ok()?,
        );
    }
    let length: usize = headers.get("content-length")?.to_str().ok()?.parse().ok()?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((headers, String::from_utf8(body).ok()?))
}

fn create_tags(port: u16, names: std::ops::Range<u32>) -> Vec<String> {
    names
        .map(|n| {
            let (status, body) = call(
                port,
                "POST",
                "/v3/tags",
                Some(&format!(r#"{{"name":"t{n}"}}"#)),
            );
            assert_eq!(status, 201, "{body}");
            id_of(&body).unwrap()
        })
        .collect()
}

/// The receiver is down while the first tags are made, so their deliveries
/// wait for a retry; the last tags are made the moment before the kill, so
/// their events are not even dispatched yet. After the restart every one of
/// them arrives, verified by the Standard Webhooks library.
#[test]
fn pending_deliveries_are_made_after_a_sigkill() {
    let receiver = Receiver::start();
    let dir = std::env::temp_dir().join(format!("crm-webhook-kill-{}", std::process::id()));
    let data = dir.to_str().unwrap();
    let schedule = ["1s"; 30].join(",");
    let env = [("CRM_WEBHOOK_SCHEDULE", schedule.as_str())];
    let args = ["--data", data, "--webhooks-to-private"];

    let server = start_with(&args, &env);
    let hook = format!(r#"{{"url":"{}","types":["tag.created"]}}"#, receiver.url);
    let (status, body) = call(server.port, "POST", "/v3/webhooks", Some(&hook));
    assert_eq!(status, 201, "{body}");
    let created: serde_json::Value = serde_json::from_str(&body).unwrap();
    let secret = created["secret"].as_str().unwrap().to_owned();
    let mut tags = create_tags(server.port, 0..10);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !receiver
        .got
        .lock()
        .unwrap()
        .iter()
        .any(|d| d.answered == 503)
    {
        assert!(Instant::now() < deadline, "no attempt reached the receiver");
        std::thread::sleep(Duration::from_millis(20));
    }
    receiver.up.store(true, Ordering::SeqCst);
    tags.extend(create_tags(server.port, 10..20));
    let delivered = || -> BTreeSet<String> {
        let got = receiver.got.lock().unwrap();
        got.iter()
            .filter(|d| d.answered == 200)
            .filter_map(|d| {
                d.event()["data"]["object"]["id"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect()
    };
    drop(server); // SIGKILL
    assert!(
        delivered().len() < 20,
        "deliveries were pending at the kill"
    );

    let server = start_with(&args, &env);
    let deadline = Instant::now() + Duration::from_secs(60);
    let wanted: BTreeSet<String> = tags.into_iter().collect();
    while delivered() != wanted {
        assert!(
            Instant::now() < deadline,
            "not delivered after the restart: {:?}",
            wanted.difference(&delivered()).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(server);

    // Every request is signed with the endpoint's secret, and every attempt
    // of one event, before the kill and after it, has one webhook-id.
    let got = receiver.got.lock().unwrap();
    let mut ids = BTreeMap::<String, BTreeSet<String>>::new();
    for delivery in got.iter() {
        standardwebhooks::Webhook::new(&secret)
            .and_then(|w| w.verify(delivery.body.as_bytes(), &delivery.headers))
            .unwrap_or_else(|e| panic!("{e}: {}", delivery.body));
        let event = delivery.event();
        assert_eq!(event["type"], "tag.created");
        ids.entry(event["id"].as_str().unwrap().to_owned())
            .or_default()
            .insert(delivery.header("webhook-id"));
    }
    assert_eq!(ids.len(), 20);
    assert!(ids.values().all(|w| w.len() == 1), "{ids:?}");
    drop(got);
    std::fs::remove_dir_all(dir).unwrap();
}

/// The delivery log of `hook` (its first page, up to 100).
fn deliveries(port: u16, hook: &str) -> Vec<serde_json::Value> {
    let path = format!("/v3/webhooks/{hook}/deliveries?limit=100");
    let (status, body) = call(port, "GET", &path, None);
    assert_eq!(status, 200, "{body}");
    let page: serde_json::Value = serde_json::from_str(&body).unwrap();
    page["data"].as_array().unwrap().clone()
}

/// The receiver accepts the attempts and never answers, and the process is
/// killed (SIGKILL) while four of them are under way: each delivery is
/// `sending` under the claim of a sender that is gone. After the restart,
/// with the receiver answering, each is sent again once its claim lapses
/// (the attempt's timeout and 15 s): none stays `sending`, each event
/// arrives, under the `webhook-id` of its first attempt.
#[test]
fn attempts_under_way_at_a_sigkill_are_made_again() {
    let receiver = Receiver::start();
    receiver.hang.store(true, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("crm-webhook-hang-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.to_str().unwrap();
    // A claim lasts 10 s + 15 s; the kill comes within the 10 s.
    let env = [
        ("CRM_WEBHOOK_TIMEOUT", "10s"),
        ("CRM_WEBHOOK_CONCURRENCY", "4"),
    ];
    let args = ["--data", data, "--webhooks-to-private"];

    let server = start_with(&args, &env);
    let hook = format!(r#"{{"url":"{}","types":["tag.created"]}}"#, receiver.url);
    let (status, body) = call(server.port, "POST", "/v3/webhooks", Some(&hook));
    assert_eq!(status, 201, "{body}");
    let created: serde_json::Value = serde_json::from_str(&body).unwrap();
    let (hook, secret) = (
        created["id"].as_str().unwrap().to_owned(),
        created["secret"].as_str().unwrap().to_owned(),
    );
    let tags: BTreeSet<String> = create_tags(server.port, 0..4).into_iter().collect();
    let deadline = Instant::now() + Duration::from_secs(8);
    while receiver.got.lock().unwrap().len() < 4 {
        assert!(
            Instant::now() < deadline,
            "the four attempts did not reach the receiver"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let log = deliveries(server.port, &hook);
    assert_eq!(log.len(), 4);
    assert!(log.iter().all(|d| d["status"] == "sending"), "{log:?}");
    drop(server); // SIGKILL, four attempts under way

    receiver.up.store(true, Ordering::SeqCst);
    receiver.hang.store(false, Ordering::SeqCst);
    let server = start_with(&args, &env);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = deliveries(server.port, &hook);
        if log.len() == 4 && log.iter().all(|d| d["status"] == "succeeded") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "deliveries left after the restart: {log:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(server);

    let got = receiver.got.lock().unwrap();
    let accepted: BTreeSet<String> = got
        .iter()
        .filter(|d| d.answered == 200)
        .filter_map(|d| {
            d.event()["data"]["object"]["id"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(accepted, tags, "each event accepted after the restart");
    let mut ids = BTreeMap::<String, BTreeSet<String>>::new();
    for delivery in got.iter() {
        standardwebhooks::Webhook::new(&secret)
            .and_then(|w| w.verify(delivery.body.as_bytes(), &delivery.headers))
            .unwrap_or_else(|e| panic!("{e}: {}", delivery.body));
        ids.entry(delivery.event()["id"].as_str().unwrap().to_owned())
            .or_default()
            .insert(delivery.header("webhook-id"));
    }
    assert_eq!(ids.len(), 4);
    assert!(ids.values().all(|w| w.len() == 1), "{ids:?}");
    drop(got);
    std::fs::remove_dir_all(dir).unwrap();
}
