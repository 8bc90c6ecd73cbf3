//! Bulk imports on `crm serve` as a user runs them: `crm import` and
//! `crm export` against the server, and an import killed (SIGKILL) halfway
//! and started again, which loses no row and doubles none.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{TOKEN, call, start};

fn contacts_csv(n: usize) -> String {
    let mut csv = String::from("Name,Mobile,E-mail\n");
    for i in 0..n {
        csv.push_str(&format!(
            "Person {i},+55 21 9{:08},p{i}@example.com\n",
            50_000_000 + i
        ));
    }
    csv
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

fn total_contacts(port: u16) -> u64 {
    let (status, body) = call(port, "GET", "/v3/contacts?limit=1", None);
    assert_eq!(status, 200, "{body}");
    json_of(&body)["totalCount"].as_u64().unwrap()
}

#[test]
fn an_import_killed_halfway_resumes_with_no_row_lost_or_doubled() {
    const ROWS: usize = 20_000;
    let dir = std::env::temp_dir().join(format!("crm-bulk-kill-{}", std::process::id()));
    let data = dir.to_str().unwrap().to_owned();
    let server = start(&["--data", &data]);
    let mapping = json!({"object": "contacts", "mapping": {"Name": "name", "Mobile": "phone", "E-mail": "email"}});
    let (status, body) = call(
        server.port,
        "POST",
        "/v3/imports",
        Some(&mapping.to_string()),
    );
    assert_eq!(status, 201, "{body}");
    let job = json_of(&body);
    let path = format!("/v3/imports/{}", job["id"].as_str().unwrap());
    // The upload URL is the server's own: its path and query.
    let url = job["uploadUrl"].as_str().unwrap();
    let upload = &url[url.find("/files/").unwrap()..];
    let (status, body) = call(server.port, "PUT", upload, Some(&contacts_csv(ROWS)));
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(server.port, "POST", &format!("{path}/start"), Some("{}"));
    assert_eq!(status, 200, "{body}");

    // Killed once a tenth of the rows are in, well before the end.
    let deadline = Instant::now() + Duration::from_secs(120);
    let before = loop {
        let job = json_of(&call(server.port, "GET", &path, None).1);
        if job["rows"].as_u64().unwrap() >= (ROWS / 10) as u64 {
            break job;
        }
        assert!(Instant::now() < deadline, "the import did not start: {job}");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(before["status"], "running", "{before}");
    drop(server); // SIGKILL

    // Started again: the queue's message is still there, and the job goes
    // on from its last checkpoint.
    let server = start(&["--data", &data]);
    let deadline = Instant::now() + Duration::from_secs(300);
    let done = loop {
        let job = json_of(&call(server.port, "GET", &path, None).1);
        if job["status"] == "done" {
            break job;
        }
        assert!(
            Instant::now() < deadline,
            "the import did not finish: {job}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        (
            done["rows"].clone(),
            done["created"].clone(),
            done["failed"].clone()
        ),
        (json!(ROWS), json!(ROWS), json!(0)),
        "{done}"
    );
    assert_eq!(total_contacts(server.port), ROWS as u64);
    let (_, body) = call(
        server.port,
        "GET",
        "/v3/contacts?emailExact=p19999@example.com",
        None,
    );
    assert_eq!(json_of(&body)["totalCount"], 1);
    drop(server);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn crm_import_and_crm_export_move_a_file_in_and_out() {
    let dir = std::env::temp_dir().join(format!("crm-bulk-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("people.csv");
    let mut csv = contacts_csv(300);
    csv.push_str("Bad,+55 21 91111-0000,not-an-email\n");
    std::fs::write(&file, csv).unwrap();
    let server = start(&["--in-memory"]);
    let url = format!("http://127.0.0.1:{}", server.port);
    let crm = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_crm"))
            .args(args)
            .env("CRM_URL", &url)
            .env("CRM_TOKEN", TOKEN)
            .output()
            .expect("crm runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = crm(&[
        "import",
        file.to_str().unwrap(),
        "--object",
        "contacts",
        "--map",
        "Name=name",
        "--map",
        "Mobile=phone",
        "--map",
        "E-mail=email",
    ]);
    assert!(
        said.contains("301 rows, 300 created, 0 updated, 1 failed"),
        "{said}"
    );
    let errors = std::fs::read_to_string(dir.join("people.csv.errors.csv")).unwrap();
    assert!(
        errors.starts_with("row,error,record\n301,email"),
        "{errors}"
    );
    assert_eq!(total_contacts(server.port), 300);

    let out = dir.join("out.jsonl");
    let said = crm(&[
        "export",
        "--object",
        "contacts",
        "--format",
        "jsonl",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(said.contains("300 records"), "{said}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 300);
    assert!(text.contains("p299@example.com"));
    drop(server);
    std::fs::remove_dir_all(dir).unwrap();
}
