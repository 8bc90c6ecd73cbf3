//! The writer: group commit on one thread, checkpoints on another.
//!
//! The *writer thread* takes every request that is waiting, checks and applies
//! each to the overlay, the writes not yet in the engine's file
//! ([`super::overlay`]; a request whose condition fails applies nothing and
//! answers its failure), writes the group's records to the log with one
//! synced write ([`super::wal`]; not in memory), then publishes a view of the
//! store as of the group to readers ([`Published`]) and answers its requests
//! ([`super::publish`]). The requests that come during the sync make the next
//! group: one sync acknowledges all of them.
//!
//! Why the writer writes the log itself, one write at a time: on 2 cores,
//! fewer and larger groups win, and a thread blocked in its own synced
//! write is the cheapest wait. A log thread, four log threads, and an
//! `io_uring` (writes in flight while the next group was applied, one or
//! several at a time) were each tried and were slower: smaller groups, each
//! synced write's CPU, wake-ups (docs/design.md, "The embedded store";
//! docs/bench-results.md).
//!
//! A checkpoint is due a second after the first group not yet in the
//! engine's file (with the next group, or on its own when writes go quiet),
//! once the overlay holds 4 MB, or once the log's file is nearly full (a
//! group takes at least a 4 KB block of it). The writer then freezes the
//! overlay: the *checkpoint thread* writes it into the engine in one durable
//! commit, numbered, while the groups that follow go to a new overlay, and
//! their records to the log's other file. Once the commit is made, the views
//! drop the frozen overlay: readers find its writes in the engine. One
//! checkpoint at a time; a close is a last one. A checkpoint due by size
//! while one is under way waits for it, and the writes with it
//! ([`checkpoints`]): memory and the log stay bounded however slowly the
//! checkpoint thread runs (at nice 19), and the wait frees it the CPU.
//! While checkpoints fail (or panic: the checkpoint thread catches it),
//! retries included, writes go on into the overlay until 64 MB of them wait
//! for a checkpoint, then are refused (503) until one is made.
//!
//! A failed append stops the store's writes: what the overlay holds past the
//! last published snapshot may not be durable, so nothing may build on it.
//! The groups waiting are answered 503 (their outcome unknown: the close's
//! checkpoint may keep them, and a crash loses them). Reads go on; a restart
//! replays what was synced.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self as sync_mpsc, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use redb::Database;
use tokio::sync::oneshot;

use super::checkpointer;
#[cfg(test)]
use super::checkpointer::CHECKPOINT_FAIL_MARKER;
use super::overlay::Overlay;
use super::prepare::Prepared;
use super::publish::{Committed, Shared, answer_all, append, publish};
use super::read::{Engine, Published, Snapshot};
use super::wal::{Batch, Wal};
use super::write::apply;
use crate::store::cache::RecordCache;
use crate::store::*;

mod checkpoints;

/// Requests one group takes at most.
const MAX_GROUP: usize = 256;
/// A checkpoint comes this long after the first group not yet in the
/// engine's file, which bounds a replay after a crash...
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// ...and once the overlay holds this much (about what the log holds): the
/// memory it takes.
const CHECKPOINT_BYTES: u64 = 4 << 20;

/// While checkpoints fail, the writes since the last one stay in memory and
/// in the log: past this much of them, writes are refused (503) until a
/// checkpoint is made, rather than memory and the log growing without bound.
const UNCHECKPOINTED: u64 = if cfg!(test) { 16 << 10 } else { 64 << 20 };

/// What the writer thread is sent.
pub(super) enum Msg {
    Write(Request),
    /// The checkpoint thread's answer: the engine as of checkpoint `number`.
    Checkpointed {
        number: u64,
        engine: Result<Arc<Engine>, StoreError>,
    },
    /// The store is closing.
    Close,
}

pub(super) struct Request {
    pub writes: Vec<Prepared>,
    pub reply: Reply,
}

/// A request's write units, or why nothing was written.
pub(super) type Answer = Result<f64, StoreError>;
pub(super) type Reply = oneshot::Sender<Answer>;

struct Writer {
    db: Arc<Database>,
    defs: Arc<Vec<Index>>,
    shared: Shared,
    /// Set when the log failed: writes are refused, and nothing more is
    /// published (the overlay may hold what was never synced), until a restart.
    stopped: bool,
    /// The log, with a folder.
    wal: Option<Wal>,
    to_checkpoint: Option<sync_mpsc::Sender<(Overlay, u64)>>,
    checkpoint_thread: Option<JoinHandle<()>>,
    /// In tests, the marker file that makes checkpoints fail.
    fail: Option<PathBuf>,
    /// The number of the last checkpoint the engine holds.
    checkpoints: u64,
    /// A checkpoint of `state.frozen` (number `checkpoints + 1`) is under way...
    checkpointing: bool,
    /// ...or failed, and is tried again at this time.
    retry_at: Option<Instant>,
    /// The last checkpoint failed: set from its failure until one is made,
    /// through the retries too (what bounds the writes waiting for one).
    failing: bool,
    checkpoint_every: Duration,
    /// The store as of the last group: what conditions are checked against.
    state: Snapshot,
    /// When the first group not in a checkpoint was applied: what is not
    /// yet in the engine's file is at most `checkpoint_every` old.
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

/// Starts the writer and the threads it hands work to; all end, the log
/// synced and a last checkpoint made, once it is sent [`Msg::Close`].
pub(super) fn spawn(config: Config) -> (sync_mpsc::Sender<Msg>, JoinHandle<()>) {
    let shared = Shared {
        records: config.records,
        published: config.published,
    };
    let (tx, rx) = sync_mpsc::channel::<Msg>();
    // In tests, a marker file in the folder makes checkpoints fail.
    #[cfg(test)]
    let fail = (config.wal.as_ref()).map(|wal| wal.dir().join(CHECKPOINT_FAIL_MARKER));
    #[cfg(not(test))]
    let fail = None;
    let (to_checkpoint, checkpoint_thread) =
        checkpointer::start(config.db.clone(), tx.clone(), fail.clone());
    let mut writer = Writer {
        db: config.db,
        defs: config.defs,
        shared,
        stopped: false,
        wal: config.wal,
        to_checkpoint: Some(to_checkpoint),
        checkpoint_thread: Some(checkpoint_thread),
        fail,
        checkpoints: config.checkpoints,
        checkpointing: false,
        retry_at: None,
        failing: false,
        checkpoint_every: config.checkpoint_every,
        state: config.state,
        pending_since: None,
    };
    let thread = std::thread::Builder::new()
        .name("crm-store-writer".into())
        .spawn(move || {
            loop {
                let first = match writer.wake_in() {
                    None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    Some(wait) => rx.recv_timeout(wait),
                };
                let (mut group, mut other) = (Vec::new(), None);
                match first {
                    Ok(Msg::Write(request)) => group.push(request),
                    Ok(msg) => other = Some(msg),
                    // Quiet for a while: a checkpoint may be due, with no
                    // group to wait on (an empty one).
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
                while !group.is_empty() && other.is_none() && group.len() < MAX_GROUP {
                    match rx.try_recv() {
                        Ok(Msg::Write(request)) => group.push(request),
                        Ok(msg) => other = Some(msg),
                        Err(_) => break,
                    }
                }
                if writer.must_wait() {
                    other = match other {
                        Some(Msg::Checkpointed { number, engine }) => {
                            writer.checkpointed(number, engine);
                            None
                        }
                        None => writer.wait_for_checkpoint(&rx, &mut group),
                        close => close,
                    };
                }
                if other.is_none() || !group.is_empty() {
                    writer.commit(group);
                }
                match other {
                    Some(Msg::Checkpointed { number, engine }) => {
                        writer.checkpointed(number, engine)
                    }
                    Some(Msg::Close) => break,
                    _ => {}
                }
            }
            writer.close(&rx);
        })
        .expect("the store's writer thread");
    (tx, thread)
}

fn stopped() -> StoreError {
    StoreError::Unavailable(
        "embedded store: writes stopped after its log failed; restart it".into(),
    )
}

impl Writer {
    fn commit(&mut self, group: Vec<Request>) {
        let (writes, replies): (Vec<Vec<Prepared>>, Vec<Reply>) =
            group.into_iter().map(|r| (r.writes, r.reply)).unzip();
        if self.stopped {
            self.pending_since = None; // none due until the close's last one
            return answer_all(replies, &stopped());
        }
        // The log's epoch moves with a new checkpoint, before this group.
        let switch = self.checkpoint_if_due();
        let held = self.state.overlay.bytes + self.state.frozen.bytes;
        if self.failing && held >= UNCHECKPOINTED && !replies.is_empty() {
            let e = StoreError::Unavailable(
                "embedded store: its checkpoints fail (a full or failing disk?); \
                 writes resume once one is made"
                    .into(),
            );
            return answer_all(replies, &e);
        }
        let (replies, answers, log) = match self.apply_group(&writes) {
            Ok((answers, log)) => (replies, answers, log),
            Err(e) => {
                tracing::error!(error = %e, "the store failed a group of writes");
                answer_all(replies, &e);
                (Vec::new(), Vec::new(), Vec::new())
            }
        };
        if replies.is_empty() && switch.is_none() {
            return;
        }
        self.hand_on(Committed {
            replies,
            answers,
            keys: writes.into_iter().flatten().map(|w| w.key).collect(),
            log,
            switch,
            snapshot: self.state.clone(),
        });
    }

    /// Applies a group to the overlay: each request's answer and record.
    /// An error of the store applies none of it.
    fn apply_group(
        &mut self,
        group: &[Vec<Prepared>],
    ) -> Result<(Vec<Answer>, Vec<Batch>), StoreError> {
        let before = self.state.overlay.clone();
        let (mut answers, mut log) = (Vec::new(), Vec::new());
        for writes in group {
            let mut record = match self.wal {
                Some(_) => Batch::on(),
                None => Batch::off(),
            };
            match apply(&mut self.state, &self.defs, writes, &mut record) {
                Ok(answer) => answers.push(answer),
                Err(e) => {
                    self.state.overlay = before;
                    return Err(e);
                }
            }
            log.push(record);
        }
        if !group.is_empty() {
            self.pending_since.get_or_insert_with(Instant::now);
        }
        Ok((answers, log))
    }

    /// Logs and syncs a group (with a folder), then publishes and answers it.
    /// A failed append stops the writes; the group is answered 503.
    fn hand_on(&mut self, committed: Committed) {
        // Not even a checkpoint's view: it holds the overlay, unsynced writes too.
        if self.stopped {
            return answer_all(committed.replies, &stopped());
        }
        if let Some(wal) = &mut self.wal
            && let Err(e) = append(wal, &committed)
        {
            self.stopped = true;
            tracing::error!(error = %e, "the store's log failed: writes stop until a restart");
            // Its outcome is unknown to its callers (the close's last
            // checkpoint may keep it), as with any 503.
            let e = StoreError::Unavailable(format!("embedded store: its log: {e}"));
            return answer_all(committed.replies, &e);
        }
        publish(&self.shared, committed);
    }
}
