//! A merge on `crm serve` as a user runs it: killed (SIGKILL, no chance to
//! tidy up) while the merge moves its deals in the background, it finishes
//! after the restart, with every deal moved once and the counts exact.

mod support;

use std::time::{Duration, Instant};

use support::{call, id_of, start};

const DEALS: usize = 1000;

fn deals_of(port: u16, contact: &str) -> u64 {
    let path = format!("/v3/deals?roleId=1&isOwner=true&userId=7&contactId={contact}&limit=1");
    let (status, body) = call(port, "GET", &path, None);
    assert_eq!(status, 200, "{body}");
    let page: serde_json::Value = serde_json::from_str(&body).unwrap();
    page["totalCount"].as_u64().unwrap()
}

fn json(port: u16, method: &str, path: &str, body: Option<&str>) -> (u16, serde_json::Value) {
    let (status, body) = call(port, method, path, body);
    (status, serde_json::from_str(&body).unwrap_or_default())
}

#[test]
fn a_merge_killed_in_the_middle_finishes_after_the_restart() {
    let dir = std::env::temp_dir().join(format!("crm-merge-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.to_str().unwrap();
    let server = start(&["--data", data]);
    let port = server.port;
    let (_, ana) = call(port, "POST", "/v3/contacts", Some(r#"{"name":"Ana"}"#));
    let (_, again) = call(
        port,
        "POST",
        "/v3/contacts",
        Some(r#"{"name":"Ana again"}"#),
    );
    let (ana, again) = (id_of(&ana).unwrap(), id_of(&again).unwrap());
    for batch in 0..DEALS / 100 {
        let operations: Vec<_> = (0..100)
            .map(|i| {
                serde_json::json!({ "op": "create", "data": {
                    "name": format!("Deal {batch}-{i}"), "value": 10, "status": "open",
                    "contactId": again.parse::<u64>().unwrap(), "operatorId": 7, "groupId": 1,
                    "pipelineId": "sales", "stageId": "lead", "origin": "site", "tagIds": [],
                }})
            })
            .collect();
        let body = serde_json::json!({ "operations": operations }).to_string();
        let (status, answer) = call(port, "POST", "/v3/deals/batch", Some(&body));
        assert_eq!(status, 200, "{answer}");
    }

    let body = format!(r#"{{"ids":["{again}"]}}"#);
    let (status, merge) = json(
        port,
        "POST",
        &format!("/v3/contacts/{ana}/merge"),
        Some(&body),
    );
    assert_eq!(status, 202, "{merge}");
    let job = format!("/v3/contacts/merge/{}", merge["id"].as_str().unwrap());
    // Kill it once the background run has moved some deals, not all.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let moved = deals_of(port, &ana);
        if moved > 100 {
            assert!(moved < DEALS as u64, "the merge ended before the kill");
            break;
        }
        assert!(Instant::now() < deadline, "the merge does not move");
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(server); // SIGKILL
    let server = start(&["--data", data]);
    let port = server.port;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (status, merge) = json(port, "GET", &job, None);
        assert_eq!(status, 200, "{merge}");
        if merge["status"] == "done" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the merge did not finish after the restart"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(deals_of(port, &ana), DEALS as u64);
    assert_eq!(deals_of(port, &again), 0);
    let (_, contacts) = json(port, "GET", "/v3/contacts", None);
    assert_eq!(contacts["totalCount"], 1, "{contacts}");
    let (status, merged) = json(port, "GET", &format!("/v3/contacts/{again}"), None);
    assert_eq!((status, merged["id"].as_str()), (200, Some(ana.as_str())));
    drop(server);
    std::fs::remove_dir_all(dir).unwrap();
}
