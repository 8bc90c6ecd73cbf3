//! The embedded store's reads are never older than the last write
//! acknowledged: a write, a delete or a revoked token shows on the next
//! request, in memory and in a folder, while a writer races the readers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use api_tests::serde_json::{Value, json};
use api_tests::{Backend, TempFolder, TestApp};
use embedded_store::EmbeddedStore;
use shared::keys;

/// The app over an embedded store in memory or in a folder.
async fn app(on_disk: Option<&TempFolder>) -> TestApp {
    let (store, backend) = match on_disk {
        Some(folder) => (
            EmbeddedStore::open(&folder.0, keys::GSIS).unwrap(),
            Backend::OnDisk,
        ),
        None => (EmbeddedStore::in_memory(keys::GSIS), Backend::Embedded),
    };
    TestApp::with_store(Arc::new(store), backend, None).await
}

/// Every kind of write shows on the very next request.
async fn writes_show_at_once(on_disk: Option<&TempFolder>) {
    let app = app(on_disk).await;
    let path = app.tag_path("before").await;
    app.get(&path).await.expect(200);

    app.patch(&path, json!({ "name": "after" }))
        .await
        .expect(200);
    assert_eq!(app.get(&path).await.expect(200)["name"], "after");

    app.delete(&path).await.expect(200);
    app.get(&path).await.expect_error(404);

    let created = app
        .post("/v3/api-tokens", json!({ "name": "soon revoked" }))
        .await
        .expect(201);
    let client = app.as_token(created["token"].as_str().unwrap());
    client.get("/v3/workspaces/info").await.expect(200);
    client.get("/v3/workspaces/info").await.expect(200);
    app.delete(&format!(
        "/v3/api-tokens/{}",
        created["id"].as_str().unwrap()
    ))
    .await
    .expect(200);
    client.get("/v3/workspaces/info").await.expect_error(401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_show_at_once_in_memory() {
    writes_show_at_once(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_show_at_once_on_disk() {
    writes_show_at_once(Some(&TempFolder::new("hot-reads"))).await;
}

fn number(tag: &Value) -> u64 {
    tag["name"]
        .as_str()
        .unwrap()
        .trim_start_matches('v')
        .parse()
        .unwrap()
}

/// Readers race a writer: no read answers a record older than the last write
/// acknowledged before it began, or older than one it already saw.
async fn reads_follow_the_writer(on_disk: Option<&TempFolder>) {
    let app = app(on_disk).await;
    let app = Arc::new(app);
    let path = Arc::new(app.tag_path("v0").await);
    let (acknowledged, done) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (app, path, acknowledged, done) = (
                app.clone(),
                path.clone(),
                acknowledged.clone(),
                done.clone(),
            );
            tokio::spawn(async move {
                let (mut seen, mut reads) = (0, 0);
                while !done.load(Ordering::SeqCst) {
                    let floor = acknowledged.load(Ordering::SeqCst);
                    let n = number(&app.get(&path).await.expect(200));
                    assert!(n >= floor, "read v{n} after v{floor} was acknowledged");
                    assert!(n >= seen, "read v{n} after reading v{seen}");
                    (seen, reads) = (n, reads + 1);
                }
                reads
            })
        })
        .collect();
    for i in 1..=150 {
        app.patch(&path, json!({ "name": format!("v{i}") }))
            .await
            .expect(200);
        acknowledged.store(i, Ordering::SeqCst);
        tokio::task::yield_now().await;
    }
    done.store(true, Ordering::SeqCst);
    for reader in readers {
        assert!(reader.await.unwrap() > 0);
    }
    assert_eq!(number(&app.get(&path).await.expect(200)), 150);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_follow_the_writer_in_memory() {
    reads_follow_the_writer(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_follow_the_writer_on_disk() {
    reads_follow_the_writer(Some(&TempFolder::new("hot-reads"))).await;
}
