//! The writer: group commit, in two stages.
//!
//! The *writer thread* takes every request that is waiting, checks and applies
//! each to the overlay, the writes not yet in the engine's file
//! ([`super::overlay`]; a request whose condition fails applies nothing and
//! answers its failure), and hands on the group with a view of the store as of
//! it, which no reader sees yet ([`Published`]). It goes straight on to the
//! next group.
//!
//! With a folder, the *log thread* meanwhile appends the records of every
//! group committed since its last `fdatasync` ([`wal`]), syncs them once,
//! publishes the engine as of the last of them, and answers their requests.
//! So the disk's latency overlaps the next group's work, and one sync
//! acknowledges the writes of several groups. In memory there is no log: the
//! writer thread publishes and answers each group itself.
//!
//! A checkpoint (the overlay written into the engine in one durable commit,
//! numbered) comes a second after the first group that is not yet in the
//! engine's file (with the next group, or on its own when writes go quiet),
//! and once the overlay holds 4 MB; the overlay starts empty and the log
//! starts over. A close is a last checkpoint.
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

use redb::Database;
use tokio::sync::oneshot;

use super::overlay::Overlay;
use super::read::{Engine, Published, Snapshot};
use super::wal::{Batch, Wal};
use super::write::{apply, checkpoint};
use crate::store::cache::RecordCache;
use crate::store::*;

/// Requests one commit takes at most.
const MAX_GROUP: usize = 256;
/// A checkpoint comes this long after the first group not yet in the
/// engine's file, which bounds a replay after a crash...
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// ...and once the overlay holds this much (about what the log holds): the
/// memory it takes, and the time a checkpoint holds up the writer.
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
    /// 100 items of 400 KB); off when it went into a checkpoint (or in memory).
    log: Vec<Batch>,
    /// The checkpoint's number, when it went into one.
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
    /// The store as of the last group: what conditions are checked against.
    state: Snapshot,
    /// When the first group since the last checkpoint was made: what is
    /// not yet in the engine's file is at most `checkpoint_every` old.
    pending_since: Option<Instant>,
}

pub(super) struct Config {
    pub db: Arc<Database>,
    pub defs: Arc<Vec<Index>>,
    pub records: Arc<RecordCache>,
    pub published: Arc<Published>,
    /// The store as published at the start.
    pub state: Snapshot,
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
        state: config.state,
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

    /// Applies a group, and makes the checkpoint when one is due; its
    /// replies are the caller's to add.
    fn commit_group(&mut self, group: &[Vec<Write>]) -> Result<Committed, StoreError> {
        let due = self.checkpoint_in() == Some(Duration::ZERO)
            || self.state.overlay.bytes >= CHECKPOINT_BYTES;
        let checkpoint = due.then_some(self.checkpoints + 1);
        // A checkpoint holds its group: the group needs no record.
        let logging = self.to_log.is_some() && checkpoint.is_none();
        // An engine failure applies none of the group.
        let before = self.state.overlay.clone();
        let mut log = Vec::with_capacity(group.len());
        let mut answers = Vec::with_capacity(group.len());
        for writes in group {
            let mut record = if logging { Batch::on() } else { Batch::off() };
            match apply(&mut self.state, &self.defs, writes, &mut record) {
                Ok(answer) => answers.push(answer),
                Err(e) => {
                    self.state.overlay = before;
                    return Err(e);
                }
            }
            log.push(record);
        }
        match checkpoint {
            Some(number) => {
                if let Err(e) = self.checkpoint_commit(number) {
                    self.state.overlay = before;
                    return Err(e);
                }
            }
            None => {
                self.pending_since.get_or_insert_with(Instant::now);
            }
        }
        Ok(Committed {
            replies: Vec::new(),
            answers,
            keys: group.iter().flatten().filter_map(Write::key).collect(),
            log,
            checkpoint,
            snapshot: self.state.clone(),
        })
    }

    /// Checkpoint `number`: the overlay into the engine, durably; the
    /// overlay then starts empty.
    fn checkpoint_commit(&mut self, number: u64) -> Result<(), StoreError> {
        checkpoint(&self.db, &self.state.overlay, number)?;
        // Committed: from here a failure would leave in the engine what no
        // answer admits, so it stops the writes.
        let engine = Engine::of(&self.db).inspect_err(|_| {
            self.shared.stopped.store(true, Ordering::Release);
        })?;
        self.state = Snapshot {
            engine,
            overlay: Overlay::default(),
        };
        self.checkpoints = number;
        self.pending_since = None;
        Ok(())
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
