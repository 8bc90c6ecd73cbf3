//! The log thread: appends and syncs the records of the groups the writer
//! hands on ([`super::writer`]), then shows readers the store as of them and
//! answers their requests.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as sync_mpsc;

use super::read::{Published, Snapshot};
use super::wal::{Batch, Wal};
use super::writer::{Answer, Reply};
use crate::store::cache::RecordCache;
use crate::store::*;

/// What the writer and the log thread share.
pub(super) struct Shared {
    pub records: Arc<RecordCache>,
    pub published: Arc<Published>,
    /// Set when the log failed: writes are refused from then on.
    pub stopped: AtomicBool,
}

/// A group applied by the writer, on its way to readers and answers.
pub(super) struct Committed {
    /// Its requests' replies, and what each is to be answered.
    pub replies: Vec<Reply>,
    pub answers: Vec<Answer>,
    pub keys: Vec<Key>,
    /// Its records, one per request (so a record stays under a request's
    /// 100 items of 400 KB); off in memory.
    pub log: Vec<Batch>,
    /// The log's epoch that starts with this group, when a checkpoint began
    /// just before it: its records go to the log's other file.
    pub switch: Option<u64>,
    /// The store as of it.
    pub snapshot: Snapshot,
}

impl Committed {
    /// No group: a view to publish in order with the groups (the engine as of
    /// a checkpoint that ended).
    pub fn view(snapshot: Snapshot) -> Self {
        Self {
            replies: Vec::new(),
            answers: Vec::new(),
            keys: Vec::new(),
            log: Vec::new(),
            switch: None,
            snapshot,
        }
    }
}

fn log_failed(e: std::io::Error) -> StoreError {
    StoreError::Unavailable(format!("embedded store: its log: {e}"))
}

/// Appends and syncs the records of whatever groups are waiting, then
/// publishes and answers them.
pub(super) fn log_stage(mut wal: Wal, rx: sync_mpsc::Receiver<Committed>, shared: &Shared) {
    /// A panic here stops the writes too: nothing may build on what the
    /// overlay holds past the last published snapshot.
    struct StopOnPanic<'a>(&'a AtomicBool);
    impl Drop for StopOnPanic<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.store(true, Ordering::Release);
            }
        }
    }
    let _guard = StopOnPanic(&shared.stopped);
    while let Ok(first) = rx.recv() {
        let mut groups = vec![first];
        groups.extend(rx.try_iter());
        if let Err(e) = append(&mut wal, &groups) {
            shared.stopped.store(true, Ordering::Release);
            tracing::error!(error = %e, "the store's log failed: writes stop until a restart");
            // Their outcome is unknown to their callers (the close's last
            // checkpoint may keep them), as with any 503.
            let e = log_failed(e);
            answer_all(groups.into_iter().flat_map(|g| g.replies), &e);
            // Nothing more is published: what follows built on these groups.
            rx.iter().for_each(|g| answer_all(g.replies, &e));
            return;
        }
        publish(shared, groups);
    }
}

/// The groups' records, each in its epoch's file: a switch moves the
/// appends to the other file before its group (one sync per file).
fn append(wal: &mut Wal, groups: &[Committed]) -> std::io::Result<()> {
    let mut records: Vec<&Batch> = Vec::new();
    for group in groups {
        if let Some(epoch) = group.switch {
            wal.append(&records)?;
            records.clear();
            wal.switch(epoch)?;
        }
        records.extend(&group.log);
    }
    wal.append(&records)
}

/// Shows readers the store as of the last of `groups`, then answers them.
/// Decoded records of their keys are forgotten around it, and before any
/// answer: a request that follows one sees what it wrote.
pub(super) fn publish(shared: &Shared, groups: Vec<Committed>) {
    let keys: Vec<Key> = groups.iter().flat_map(|g| g.keys.iter().cloned()).collect();
    let mut latest = None;
    let mut answers = Vec::with_capacity(groups.len());
    for group in groups {
        latest = Some(group.snapshot);
        answers.push(group.replies.into_iter().zip(group.answers));
    }
    let Some(snapshot) = latest else { return };
    shared
        .records
        .around(&keys, || shared.published.publish(snapshot));
    for (reply, answer) in answers.into_iter().flatten() {
        let _ = reply.send(answer);
    }
}

pub(super) fn answer_all(replies: impl IntoIterator<Item = Reply>, error: &StoreError) {
    let message = error.to_string();
    for reply in replies {
        let _ = reply.send(Err(StoreError::Unavailable(message.clone())));
    }
}
