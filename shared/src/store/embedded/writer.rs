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
//! A checkpoint (a durable commit of the engine, numbered) comes at least
//! every second while writes come, and once the log holds 4 MB; the log then
//! starts over. A failed append stops the store's writes: what the engine
//! holds past the last published snapshot may not be durable, so nothing may
//! build on it. Reads go on; a restart replays what was synced.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as sync_mpsc;
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
/// A checkpoint comes at least this often while writes come, so the pages
/// the engine keeps for its non-durable commits stay few and freed pages are
/// reused (the engine reuses a page only once no durable commit needs it)...
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// ...and once the log holds this much, which bounds a replay after a crash.
const CHECKPOINT_BYTES: u64 = 4 << 20;

pub(super) struct Request {
    pub writes: Vec<Write>,
    /// The write units, or why nothing was written.
    pub reply: oneshot::Sender<Result<f64, StoreError>>,
}

type Reply = oneshot::Sender<Result<f64, StoreError>>;

/// A group committed to the engine, on its way to readers and answers.
struct Committed {
    /// Its requests' replies, and what each is to be answered.
    replies: Vec<Reply>,
    answers: Vec<Result<f64, StoreError>>,
    keys: Vec<Key>,
    /// Its record; off when its commit was a checkpoint (or in memory).
    log: Batch,
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
    last_checkpoint: Instant,
    checkpoint_every: Duration,
    /// Log bytes handed on since the last checkpoint.
    logged: u64,
    /// Whether a commit since the last checkpoint was non-durable.
    pending: bool,
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
        last_checkpoint: Instant::now(),
        checkpoint_every: config.checkpoint_every,
        logged: 0,
        pending: false,
    };
    let (tx, rx) = sync_mpsc::channel::<Request>();
    let thread = std::thread::Builder::new()
        .name("crm-store-writer".into())
        .spawn(move || {
            // Ends when the store (the last sender) is dropped.
            while let Ok(first) = rx.recv() {
                let mut group = vec![first];
                while group.len() < MAX_GROUP {
                    match rx.try_recv() {
                        Ok(next) => group.push(next),
                        Err(_) => break,
                    }
                }
                writer.commit(group);
            }
            // Everything handed on is synced and answered first; then a last
            // checkpoint, so a clean close leaves nothing to replay.
            drop(writer.to_log.take());
            let wal = log_thread.and_then(|t| t.join().ok()).flatten();
            if writer.pending && !writer.shared.stopped.load(Ordering::Acquire) {
                let number = writer.checkpoints + 1;
                let done = writer.checkpoint_commit(number).and_then(|()| {
                    wal.map_or(Ok(()), |mut w| w.start_over(number).map_err(log_failed))
                });
                if let Err(e) = done {
                    tracing::warn!(error = %e, "the store's last checkpoint failed; its log will be replayed on the next open");
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
            // The engine failed: nothing of the group was committed.
            Err(e) => answer_all(replies, &e),
        }
    }

    /// Applies and commits a group; its replies are the caller's to add.
    fn commit_group(&mut self, group: &[Vec<Write>]) -> Result<Committed, StoreError> {
        let due = self.last_checkpoint.elapsed() >= self.checkpoint_every
            || self.logged >= CHECKPOINT_BYTES;
        let checkpoint = due.then_some(self.checkpoints + 1);
        let mut txn = self.db.begin_write().map_err(engine)?;
        match checkpoint {
            Some(number) => mark_checkpoint(&mut txn, number)?,
            None => txn.set_durability(Durability::None).map_err(engine)?,
        }
        // A checkpoint's commit is durable by itself: its group needs no record.
        let mut log = match self.to_log.is_some() && checkpoint.is_none() {
            true => Batch::on(),
            false => Batch::off(),
        };
        let mut answers = Vec::with_capacity(group.len());
        {
            let mut items = txn.open_table(ITEMS).map_err(engine)?;
            let mut indexes = txn.open_table(INDEXES).map_err(engine)?;
            for writes in group {
                answers.push(apply(
                    &mut items,
                    &mut indexes,
                    &self.defs,
                    writes,
                    &mut log,
                )?);
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
                self.last_checkpoint = Instant::now();
                self.logged = 0;
                self.pending = false;
            }
            None => {
                self.logged += log.len() as u64;
                self.pending = true;
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
/// waiting, then publishes and answers them. Answers its log when done.
fn log_stage(mut wal: Wal, rx: sync_mpsc::Receiver<Committed>, shared: &Shared) -> Option<Wal> {
    while let Ok(first) = rx.recv() {
        let mut groups = vec![first];
        groups.extend(rx.try_iter());
        // Groups up to the last checkpoint among them are durable by it.
        let after = match groups.iter().rposition(|g| g.checkpoint.is_some()) {
            Some(i) => {
                let number = groups[i].checkpoint.expect("a checkpoint");
                if let Err(e) = wal.start_over(number) {
                    // The old records stay: a replay skips a log of an
                    // earlier epoch, so they cost nothing.
                    tracing::warn!(error = %e, "the store's log could not start over");
                }
                i + 1
            }
            None => 0,
        };
        let records: Vec<&Batch> = groups[after..].iter().map(|g| &g.log).collect();
        if let Err(e) = wal.append(&records) {
            shared.stopped.store(true, Ordering::Release);
            tracing::error!(error = %e, "the store's log failed: writes stop until a restart");
            let e = log_failed(e);
            answer_all(groups.into_iter().flat_map(|g| g.replies), &e);
            // Nothing more is published: what follows built on these groups.
            rx.iter().for_each(|g| answer_all(g.replies, &e));
            return None;
        }
        publish(shared, groups);
    }
    Some(wal)
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
