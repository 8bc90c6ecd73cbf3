//! `crm serve` as a user runs it: a real process on a free loopback port,
//! bootstrapped with CRM_BOOTSTRAP_TOKEN, keeping its data across a restart.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{TOKEN, call, id_of, start, start_with, try_call};

#[test]
fn serves_the_api_in_memory() {
    let server = start(&["--in-memory"]);
    let (status, body) = call(server.port, "GET", "/v3/workspaces/info", None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"workspaceId\":1"), "{body}");
    let (status, _) = call(server.port, "POST", "/v3/tags", Some(r#"{"name":"VIP"}"#));
    assert_eq!(status, 201);
}

#[test]
fn keeps_its_data_across_a_restart() {
    let dir = std::env::temp_dir().join(format!("crm-serve-test-{}", std::process::id()));
    let data = dir.to_str().unwrap();
    let id = {
        let server = start(&["--data", data]);
        let (status, body) = call(server.port, "POST", "/v3/tags", Some(r#"{"name":"Kept"}"#));
        assert_eq!(status, 201, "{body}");
        body.split("\"id\":\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_owned()
    };
    let server = start(&["--data", data]);
    let (status, body) = call(server.port, "GET", &format!("/v3/tags/{id}"), None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"name\":\"Kept\""));
    drop(server);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A stop (SIGTERM, as a service manager or `kill` sends it) that comes the
/// instant the server accepts connections still stops it cleanly: it exits 0,
/// where the signal's default action used to kill it mid-start and leave the
/// engine to repair its file on the next start.
#[cfg(unix)]
#[test]
fn a_stop_the_moment_it_listens_is_a_clean_stop() {
    let dir = std::env::temp_dir().join(format!("crm-stop-test-{}", std::process::id()));
    for round in 0..5 {
        // Its log line comes between the bind and the start of serving.
        let mut server = start(&["--data", dir.to_str().unwrap()]);
        let status = server.terminate();
        assert!(status.success(), "round {round}: {status}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// The files under `dir` that hold one of `needles` (any case), each with
/// the word found: every byte of the folder, as a copy of it carries them.
#[cfg(unix)]
fn holding(dir: &std::path::Path, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(holding(&path, needles));
            continue;
        }
        let bytes = std::fs::read(&path).unwrap().to_ascii_lowercase();
        for needle in needles {
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                found.push(format!("{}: {needle}", path.display()));
            }
        }
    }
    found
}

/// An erasure reaches the folder: from its answer on, and after a clean
/// stop, no byte of any file there holds the person's words, though their
/// record was written several times (each earlier version left in a page
/// the engine freed); the tombstone is there after a restart.
#[cfg(unix)]
#[test]
fn an_erased_person_is_in_no_byte_of_the_folder() {
    let dir = std::env::temp_dir().join(format!("crm-erase-test-{}", std::process::id()));
    let data = dir.to_str().unwrap();
    let needles = ["quintiliano", "vasconcelos", "987612345", "qv-crm-3"];
    let mut server = start(&["--data", data]);
    let body = r#"{"name":"Quintiliano Vasconcelos","phone":"(11) 98761-2345","email":"quintiliano@example.com","externalId":"qv-crm-3","notes":"Quintiliano prefers e-mail"}"#;
    let (status, created) = call(server.port, "POST", "/v3/contacts", Some(body));
    assert_eq!(status, 201, "{created}");
    let id = id_of(&created).unwrap();
    for n in 0..5 {
        let change = format!(r#"{{"email":"quintiliano.{n}@example.com"}}"#);
        let (status, body) = call(
            server.port,
            "PATCH",
            &format!("/v3/contacts/{id}"),
            Some(&change),
        );
        assert_eq!(status, 200, "{body}");
    }
    assert!(
        !holding(&dir, &needles).is_empty(),
        "the folder holds the person before"
    );

    let (status, body) = call(
        server.port,
        "POST",
        &format!("/v3/contacts/{id}/erase"),
        Some("{}"),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        holding(&dir, &needles),
        Vec::<String>::new(),
        "once the erasure answered"
    );
    assert!(server.terminate().success());
    assert_eq!(
        holding(&dir, &needles),
        Vec::<String>::new(),
        "after a clean stop"
    );

    let server = start(&["--data", data]);
    let (status, body) = call(server.port, "GET", &format!("/v3/contacts/{id}"), None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"erased\""), "the tombstone: {body}");
    drop(server);
    std::fs::remove_dir_all(dir).unwrap();
}

/// An operator bootstraps a fresh DynamoDB table: create-table, bootstrap (twice:
/// it is idempotent), then the API served from that table answers the token.
#[test]
fn bootstraps_a_dynamodb_table() {
    let Some(endpoint) = std::env::var("CRM_TEST_DYNAMODB_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
    else {
        assert!(
            std::env::var("CRM_REQUIRE_DYNAMODB").as_deref() != Ok("1"),
            "DynamoDB Local is required"
        );
        eprintln!("skipped: DynamoDB Local is not running (use scripts/test.sh)");
        return;
    };
    let table = format!("crm-cli-test-{}", std::process::id());
    let env = [
        ("CRM_TABLE", table.as_str()),
        ("CRM_DYNAMODB_ENDPOINT", endpoint.as_str()),
    ];
    let crm = |command: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_crm"))
            .arg(command)
            .envs(env)
            .env("CRM_BOOTSTRAP_TOKEN", TOKEN)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "crm {command}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    assert!(crm("create-table").contains("is ready"));
    assert!(crm("bootstrap").contains("Created workspace 1"));
    assert!(
        crm("bootstrap").contains("is an admin token"),
        "a second bootstrap changes nothing"
    );
    let server = start_with(&["--dynamodb"], &env);
    let (status, body) = call(server.port, "GET", "/v3/workspaces/info", None);
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(server.port, "GET", "/v3/audit", None);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("\"totalCount\":1"),
        "one bootstrap entry: {body}"
    );
}

/// `crm load` brings organizations and conversations into a stopped server's
/// folder (a running one holds the folder: the load is refused), and the list
/// filters see them after a restart.
#[test]
fn loads_records_from_json_lines() {
    let dir = std::env::temp_dir().join(format!("crm-load-test-{}", std::process::id()));
    let data = dir.to_str().unwrap();
    let file = dir.join("records.jsonl");
    let server = start(&["--data", data]);
    let (status, body) = call(
        server.port,
        "POST",
        "/v3/contacts",
        Some(r#"{"name":"Ana"}"#),
    );
    assert_eq!(status, 201, "{body}");
    let id = body
        .split("\"id\":\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    std::fs::write(
        &file,
        format!(
            "{}\n\n{}\n{}\n{}\n",
            r#"{"type":"organization","id":10,"name":"Acme"}"#,
            format_args!(r#"{{"type":"contactOrganization","contactId":{id},"organizationId":10}}"#),
            format_args!(r#"{{"type":"conversation","id":7,"contactId":{id},"lastSession":{{"id":"s1","createdAt":"2026-11-20T10:00:00Z","segmentId":"inbox"}}}}"#),
            r#"{"type":"organization","name":"no id"}"#,
        ),
    )
    .unwrap();
    let load = || {
        Command::new(env!("CARGO_BIN_EXE_crm"))
            .args(["load", file.to_str().unwrap(), "--data", data])
            .output()
            .unwrap()
    };
    let busy = load();
    assert!(!busy.status.success());
    assert!(
        String::from_utf8_lossy(&busy.stderr).contains("in use"),
        "{}",
        String::from_utf8_lossy(&busy.stderr)
    );
    drop(server);

    let loaded = load();
    let stderr = String::from_utf8_lossy(&loaded.stderr);
    assert!(!loaded.status.success(), "one line is bad: {stderr}");
    assert!(stderr.contains("line 5: id: is required"), "{stderr}");
    assert!(
        stderr.contains("1 contactOrganization, 1 conversation, 1 organization"),
        "{stderr}"
    );

    let server = start(&["--data", data]);
    let (status, body) = call(
        server.port,
        "GET",
        "/v3/contacts?organizationId=10&withOrganization=true",
        None,
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("\"totalCount\":1") && body.contains("\"name\":\"Acme\""),
        "{body}"
    );
    let (_, body) = call(server.port, "GET", "/v3/contacts?segmentId=inbox", None);
    assert!(body.contains("\"totalCount\":1"), "{body}");
    drop(server);
    std::fs::remove_dir_all(dir).unwrap();
}

/// The README's demo: `crm load examples/demo.jsonl` into a new folder makes
/// workspace 1 (as `crm serve` would) and fills it in one command.
#[test]
fn the_demo_loads_into_a_new_folder_in_one_command() {
    let dir = std::env::temp_dir().join(format!("crm-demo-test-{}", std::process::id()));
    let data = dir.to_str().unwrap();
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/demo.jsonl");
    let loaded = Command::new(env!("CARGO_BIN_EXE_crm"))
        .args(["load", demo, "--shift-times", "--data", data])
        .env("CRM_BOOTSTRAP_TOKEN", TOKEN)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&loaded.stderr);
    assert!(loaded.status.success(), "{stderr}");
    assert!(stderr.contains("Created workspace 1."), "{stderr}");
    assert!(
        stderr.contains("24 deal") && stderr.contains("41 contact"),
        "{stderr}"
    );

    let server = start(&["--data", data]);
    for (path, total) in [
        ("/v3/tags", 5),
        ("/v3/campaigns", 3),
        ("/v3/deals?roleId=1&isOwner=true&userId=7", 24),
    ] {
        let (status, body) = call(server.port, "GET", path, None);
        assert_eq!(status, 200, "{body}");
        assert!(
            body.contains(&format!("\"totalCount\":{total}")),
            "{path}: {body}"
        );
    }
    // Its times moved so that the latest is now: last week has sessions.
    let (_, body) = call(
        server.port,
        "GET",
        "/v3/reports/sessions?period=week&limit=1",
        None,
    );
    assert!(!body.contains("\"totalCount\":0"), "{body}");
    drop(server);
    std::fs::remove_dir_all(dir).unwrap();
}

/// SIGKILL during traffic from four clients: every create that was answered
/// 201 is there after the restart (writes are fsynced before the answer), and
/// no transaction is half-applied: the list's counter equals its items.
#[test]
fn acknowledged_writes_survive_sigkill() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    let dir = std::env::temp_dir().join(format!("crm-kill-test-{}", std::process::id()));
    let data = dir.to_str().unwrap().to_owned();
    let server = start(&["--data", &data]);
    let port = server.port;
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let (acked, stop) = (acked.clone(), stop.clone());
            std::thread::spawn(move || {
                for i in 0..5_000 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let body = format!(r#"{{"name":"c{c}-{i}"}}"#);
                    match try_call(port, "POST", "/v3/tags", &body) {
                        Some((201, answer)) => acked.lock().unwrap().extend(id_of(&answer)),
                        Some(_) => {}
                        None => break,
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked.lock().unwrap().len() < 60 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(server); // SIGKILL, mid-traffic
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 60,
        "{} creates answered before the kill",
        acked.len()
    );

    let server = start(&["--data", &data]);
    for id in &acked {
        let (status, body) = call(server.port, "GET", &format!("/v3/tags/{id}"), None);
        assert_eq!(status, 200, "acknowledged tag {id} lost: {body}");
    }
    let (status, body) = call(server.port, "GET", "/v3/tags?limit=500", None);
    assert_eq!(status, 200);
    let total: usize = body
        .split("\"totalCount\":")
        .nth(1)
        .and_then(|t| t.split([',', '}']).next())
        .and_then(|t| t.trim().parse().ok())
        .unwrap();
    let listed = body.matches("\"name\":\"c").count();
    assert_eq!(
        total, listed,
        "the counter moved with its items, or not at all"
    );
    assert!(listed >= acked.len());
    drop(server);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Reads a whole raw response: (status, headers and body as text).
fn raw_exchange(port: u16, head: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    // Like most clients: the whole body goes out before the answer is read.
    stream.write_all(body).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    (response[9..12].parse().unwrap(), response)
}

/// A request target over the limit and a body declared over the limit are
/// answered in the error shape, with a request id, and logged like any request;
/// the oversized body is read, so the client gets the answer, not a reset.
#[test]
fn refuses_oversized_requests_in_the_error_shape() {
    let server = start_with(&["--in-memory"], &[("RUST_LOG", "info")]);
    // Past the API's limit (8 KB), and past what the HTTP server reads (64 KB):
    // the same shape, never the server's own empty answer.
    for kb in [10, 70] {
        let long = "a".repeat(kb * 1024);
        let head = format!(
            "GET /v3/tags?x={long} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
        );
        let (status, response) = raw_exchange(server.port, &head, b"");
        assert_eq!(status, 414, "{kb} KB: {response}");
        assert!(response.contains("\"statusCode\":414"), "{response}");
        assert!(
            response.to_ascii_lowercase().contains("x-request-id:"),
            "{response}"
        );
    }

    let body = vec![b' '; 600 * 1024];
    let head = format!(
        "POST /v3/tags HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let (status, response) = raw_exchange(server.port, &head, &body);
    assert_eq!(status, 413, "{response}");
    assert!(response.contains("\"statusCode\":413"), "{response}");

    // All are in the request log.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let log = server.log.lock().unwrap().join("\n");
        if log.matches("status=414").count() == 2 && log.contains("status=413") {
            break;
        }
        assert!(Instant::now() < deadline, "not logged: {log}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A folder copied back from before an erasure holds the person again;
/// `crm erasures apply` erases them again from the live folder's ledger,
/// down to the bytes of the restored folder's files.
#[cfg(unix)]
#[test]
fn erasures_apply_to_a_restored_folder() {
    let base = std::env::temp_dir().join(format!("crm-ledger-test-{}", std::process::id()));
    let (live, backup) = (base.join("live"), base.join("backup"));
    let needles = ["quiteria", "fagundes", "976540011"];
    let id = {
        let server = start(&["--data", live.to_str().unwrap()]);
        let body = r#"{"name":"Quiteria Fagundes","phone":"(11) 97654-0011"}"#;
        let (status, created) = call(server.port, "POST", "/v3/contacts", Some(body));
        assert_eq!(status, 201, "{created}");
        id_of(&created).unwrap()
    };
    std::fs::create_dir_all(&backup).unwrap();
    for entry in std::fs::read_dir(&live).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "redb") {
            std::fs::copy(&path, backup.join(path.file_name().unwrap())).unwrap();
        }
    }
    {
        let server = start(&["--data", live.to_str().unwrap()]);
        let (status, body) = call(
            server.port,
            "POST",
            &format!("/v3/contacts/{id}/erase"),
            Some("{}"),
        );
        assert_eq!(status, 200, "{body}");
    }
    assert!(
        !holding(&backup, &needles).is_empty(),
        "the backup holds the person"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_crm"))
        .args(["erasures", "apply", "--data", backup.to_str().unwrap()])
        .args(["--ledger-data", live.to_str().unwrap()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("1 erased again"), "{said}");
    assert_eq!(holding(&backup, &needles), Vec::<String>::new(), "{said}");
    std::fs::remove_dir_all(base).unwrap();
}
