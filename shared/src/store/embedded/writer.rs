//! The writer: group commit, in two stages.
//!
//! The *writer thread* takes every request that is waiting, checks and applies
//! each inside one engine transaction (a request whose condition fails applies
//! nothing and answers its failure), and commits it, non-durably: a commit no
//! reader sees yet ([`Published`]). It goes straight on to the next group.
//!
//! With a folder, the *log thread* meanwhile appends the records of every
//! group committed since its last `fdatasync` ([`wal`]), syncs them once,
//! publishes the engine as of the last of them, and answers their requests.
//! So the disk's latency overlaps the next group's work, and one sync
//! acknowledges the writes of several groups. In memory there is no log: the
//! writer thread publishes and answers each group itself.
//!
//! A checkpoint (a durable commit of the engine, numbered) comes a second
//! after the first commit that is not yet in the engine's file (with the next
//! group, or on its own when writes go quiet), and once the log holds 4 MB;
//! the log then starts over. A close is a last checkpoint.
//!
//! A failed append stops the store's writes: what the engine holds past the
//! last published snapshot may not be durable, so nothing may build on it.
//! The groups waiting are answered 503 (their outcome unknown: the close's
//! checkpoint may keep them, and a crash loses them). Reads go on; a restart
//! replays what was synced.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self as sync_mpsc, RecvTimeoutError};
use std::time::{Duration, Instant};

use redb::{Database, Durability};
use tokio::sync::oneshot;

use super::read::{Published, Snapshot};
use super::wal::{Batch, Wal};
use super::write::{apply, mark_checkpoint};
use super::{INDEXES, ITEMS, engine};
use crate::store::cache::RecordCache;
use crate::store::*;

/// Requests one commit takes at most.
const MAX_GROUP: usize = 256;
/// A checkpoint comes this long after the first commit not yet in the
/// engine's file, so the pages the engine keeps for its non-durable commits
/// stay few and freed pages are reused (the engine reuses a page only once no
/// durable commit needs it)...
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// ...and once the log holds this much, which bounds a replay after a crash.
const CHECKPOINT_BYTES: u64 = 4 << 20;

pub(super) struct Request {
    pub writes: Vec<Write>,
    pub reply: Reply,
}

/// Answers the write units of a request, or why nothing was written.
type Reply = oneshot::Sender<Result<f64, StoreError>>;

/// A group committed to the engine, on its way to readers and answers.
struct Committed {
    /// Its requests' replies, and what each is to be answered.
    replies: Vec<Reply>,
    answers: Vec<Result<f64, StoreError>>,
    keys: Vec<Key>,
    /// Its records, one per request (so a record stays under a request's
    /// 100 items of 400 KB); off when its commit was a checkpoint (or in memory).
    log: Vec<Batch>,
    /// The checkpoint's number, when its commit was one.
    checkpoint: Option<u64>,
    snapshot: Snapshot,
}

/// What both stages share.
struct Shared {
    records: Arc<RecordCache>,
    published: Arc<Published>,
    /// Set when the log failed: writes are refused from then on.
    stopped: AtomicBool,
}

struct Writer {
    db: Arc<Database>,
    defs: Arc<Vec<Index>>,
    shared: Arc<Shared>,
    /// The log thread, with a folder.
    to_log: Option<sync_mpsc::Sender<Committed>>,
    checkpoints: u64,
    checkpoint_every: Duration,
    /// Log bytes handed on since the last checkpoint.
    logged: u64,
    /// When the first commit since the last checkpoint was made: what is
    /// not yet in the engine's file is at most `checkpoint_every` old.
    pending_since: Option<Instant>,
}

pub(super) struct Config {
    pub db: Arc<Database>,
    pub defs: Arc<Vec<Index>>,
    pub records: Arc<RecordCache>,
    pub published: Arc<Published>,
    /// The log, started over after checkpoint `checkpoints`; none in memory.
    pub wal: Option<Wal>,
    pub checkpoints: u64,
    pub checkpoint_every: Duration,
}

/// Starts the writer (and the log thread); both end, the log synced and a
/// last checkpoint made, once the returned sender is dropped.
pub(super) fn spawn(config: Config) -> (sync_mpsc::Sender<Request>, std::thread::JoinHandle<()>) {
    let shared = Arc::new(Shared {
        records: config.records,
        published: config.published,
        stopped: AtomicBool::new(false),
    });
    let log_thread = config.wal.map(|wal| {
        let (tx, rx) = sync_mpsc::channel::<Committed>();
        let shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("crm-store-log".into())
            .spawn(move || log_stage(wal, rx, &shared))
            .expect("the store's log thread");
        (tx, thread)
    });
    let (to_log, log_thread) = log_thread.unzip();
    let mut writer = Writer {
        db: config.db,
        defs: config.defs,
        shared,
        to_log,
        checkpoints: config.checkpoints,
        checkpoint_every: config.checkpoint_every,
        logged: 0,
        pending_since: None,
    };
    let (tx, rx) = sync_mpsc::channel::<Request>();
    let thread = std::thread::Builder::new()
        .name("crm-store-writer".into())
        .spawn(move || {
            // Ends when the store (the last sender) is dropped.
            loop {
                let first = match writer.checkpoint_in() {
                    None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    Some(wait) => rx.recv_timeout(wait),
                };
                let group = match first {
                    Ok(first) => {
                        let mut group = vec![first];
                        group.extend(rx.try_iter().take(MAX_GROUP - 1));
                        group
                    }
                    // Quiet for a while: the checkpoint is made now, with
                    // no group to wait on (an empty one).
                    Err(RecvTimeoutError::Timeout) => Vec::new(),
                    Err(RecvTimeoutError::Disconnected) => break,
                };
                writer.commit(group);
            }
            // Everything handed on is synced and answered first.
            drop(writer.to_log.take());
            if let Some(thread) = log_thread {
                let _ = thread.join();
            }
            // Then a last checkpoint, even after the log failed: the engine
            // would otherwise make its commits durable as it closes, under
            // the number of the log's epoch, and the next open would replay
            // older records over them. Numbered past the log's epoch, the
            // log is skipped: a clean close leaves nothing to replay.
            if writer.pending_since.is_some() || writer.shared.stopped.load(Ordering::Acquire) {
                let number = writer.checkpoints + 1;
                if let Err(e) = writer.checkpoint_commit(number) {
                    tracing::error!(error = %e, "the store's last checkpoint failed");
                }
            }
        })
        .expect("the store's writer thread");
    (tx, thread)
}

fn log_failed(e: std::io::Error) -> StoreError {
    StoreError::Unavailable(format!("embedded store: its log: {e}"))
}

impl Writer {
    fn commit(&mut self, group: Vec<Request>) {
        let (writes, replies): (Vec<Vec<Write>>, Vec<Reply>) =
            group.into_iter().map(|r| (r.writes, r.reply)).unzip();
        if self.shared.stopped.load(Ordering::Acquire) {
            let stopped = StoreError::Unavailable(
                "embedded store: writes stopped after its log failed; restart it".into(),
            );
            self.pending_since = None; // none due until the close's last one
            return answer_all(replies, &stopped);
        }
        match self.commit_group(&writes) {
            Ok(mut committed) => {
                committed.replies = replies;
                match &self.to_log {
                    Some(to_log) => {
                        if let Err(unsent) = to_log.send(committed) {
                            // The log thread is gone (it panicked).
                            self.shared.stopped.store(true, Ordering::Release);
                            let e =
                                StoreError::Unavailable("embedded store: its log stopped".into());
                            answer_all(unsent.0.replies, &e);
                        }
                    }
                    None => publish(&self.shared, vec![committed]),
                }
            }
            // The engine failed: nothing of the group was committed. A
            // checkpoint that failed is tried again a second later, not at
            // once (the engine may refuse every write from now on).
            Err(e) => {
                if self.pending_since.is_some() {
                    self.pending_since = Some(Instant::now());
                }
                tracing::error!(error = %e, "the store's engine failed a commit");
                answer_all(replies, &e)
            }
        }
    }

    /// How long until a checkpoint is due, when one is pending.
    fn checkpoint_in(&self) -> Option<Duration> {
        let since = self.pending_since?;
        Some(self.checkpoint_every.saturating_sub(since.elapsed()))
    }

    /// Applies and commits a group; its replies are the caller's to add.
    fn commit_group(&mut self, group: &[Vec<Write>]) -> Result<Committed, StoreError> {
        let due = self.checkpoint_in() == Some(Duration::ZERO) || self.logged >= CHECKPOINT_BYTES;
        let checkpoint = due.then_some(self.checkpoints + 1);
        let mut txn = self.db.begin_write().map_err(engine)?;
        match checkpoint {
            Some(number) => mark_checkpoint(&mut txn, number)?,
            None => txn.set_durability(Durability::None).map_err(engine)?,
        }
        // A checkpoint's commit is durable by itself: its group needs no record.
        let logging = self.to_log.is_some() && checkpoint.is_none();
        let mut log = Vec::with_capacity(group.len());
        let mut answers = Vec::with_capacity(group.len());
        {
            let mut items = txn.open_table(ITEMS).map_err(engine)?;
            let mut indexes = txn.open_table(INDEXES).map_err(engine)?;
            for writes in group {
                let mut record = if logging { Batch::on() } else { Batch::off() };
                let answer = apply(&mut items, &mut indexes, &self.defs, writes, &mut record)?;
                answers.push(answer);
                log.push(record);
            }
        }
        txn.commit().map_err(engine)?;
        // Committed: from here a failure would leave in the engine what no
        // answer admits, so it stops the writes.
        let snapshot = Snapshot::of(&self.db).inspect_err(|_| {
            self.shared.stopped.store(true, Ordering::Release);
        })?;
        match checkpoint {
            Some(number) => {
                self.checkpoints = number;
                self.logged = 0;
                self.pending_since = None;
            }
            None => {
                self.logged += log.iter().map(|b| b.len() as u64).sum::<u64>();
                self.pending_since.get_or_insert_with(Instant::now);
            }
        }
        Ok(Committed {
            replies: Vec::new(),
            answers,
            keys: group.iter().flatten().filter_map(Write::key).collect(),
            log,
            checkpoint,
            snapshot,
        })
    }

    /// A durable commit of nothing but the checkpoint's number.
    fn checkpoint_commit(&mut self, number: u64) -> Result<(), StoreError> {
        let mut txn = self.db.begin_write().map_err(engine)?;
        mark_checkpoint(&mut txn, number)?;
        txn.commit().map_err(engine)
    }
}

/// The log thread: appends and syncs the records of whatever groups are
/// waiting, then publishes and answers them.
fn log_stage(mut wal: Wal, rx: sync_mpsc::Receiver<Committed>, shared: &Shared) {
    /// A panic here stops the writes too: nothing may build on what the
    /// engine holds past the last published snapshot.
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
        // Groups up to the last checkpoint among them are durable by it; the
        // log starts over after it, in that checkpoint's epoch, before any
        // later group's record is appended (else a replay would miss them).
        let last_checkpoint = groups.iter().rposition(|g| g.checkpoint.is_some());
        let after = last_checkpoint.map_or(0, |i| i + 1);
        let start_over = last_checkpoint.and_then(|i| groups[i].checkpoint);
        let records: Vec<&Batch> = groups[after..].iter().flat_map(|g| &g.log).collect();
        let logged = start_over
            .map_or(Ok(()), |number| wal.start_over(number))
            .and_then(|()| wal.append(&records));
        if let Err(e) = logged {
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

/// Shows readers the engine as of the last of `groups`, then answers them.
/// Decoded records of their keys are forgotten around it, and before any
/// answer: a request that follows one sees what it wrote.
fn publish(shared: &Shared, groups: Vec<Committed>) {
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

fn answer_all(replies: impl IntoIterator<Item = Reply>, error: &StoreError) {
    let message = error.to_string();
    for reply in replies {
        let _ = reply.send(Err(StoreError::Unavailable(message.clone())));
    }
}
