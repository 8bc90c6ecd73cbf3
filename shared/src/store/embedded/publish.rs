//! What a group of writes becomes once applied ([`super::writer`]): its
//! records appended to the log and synced, a view of the store as of it
//! shown to readers, its requests answered.

use std::sync::Arc;

use super::read::{Published, Snapshot};
use super::wal::{Batch, Wal};
use super::writer::{Answer, Reply};
use crate::store::cache::RecordCache;
use crate::store::*;

/// Where a group is shown: the store's readers, and its decoded records.
pub(super) struct Shared {
    pub records: Arc<RecordCache>,
    pub published: Arc<Published>,
}

/// A group applied by the writer, on its way to the log, readers and answers.
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

/// A group's records, in its epoch's file: a switch moves the appends to
/// the other file first (its header block, one synced write); then the
/// group's records, one synced write (none for a group with no record).
pub(super) fn append(wal: &mut Wal, group: &Committed) -> std::io::Result<()> {
    if let Some(epoch) = group.switch {
        wal.switch(epoch)?;
    }
    wal.append(&group.log.iter().collect::<Vec<_>>())
}

/// Shows readers the store as of `group`, then answers it. Decoded records
/// of its keys are forgotten around it, and before any answer: a request
/// that follows one sees what it wrote. The view it replaces is freed last,
/// once the answers are on their way: freeing the overlay's nodes that only
/// it held is the writer's, not the requests', wait.
pub(super) fn publish(shared: &Shared, group: Committed) {
    let replaced = shared
        .records
        .around(&group.keys, || shared.published.publish(group.snapshot));
    for (reply, answer) in group.replies.into_iter().zip(group.answers) {
        let _ = reply.send(answer);
    }
    drop(replaced);
}

pub(super) fn answer_all(replies: impl IntoIterator<Item = Reply>, error: &StoreError) {
    let message = error.to_string();
    for reply in replies {
        let _ = reply.send(Err(StoreError::Unavailable(message.clone())));
    }
}
