//! The writer's checkpoints: when one is due, how it is handed to the
//! checkpoint thread ([`super::checkpointer`]) and what its answer changes,
//! and the wait for it when another is due by size.

use std::sync::Arc;
use std::sync::mpsc as sync_mpsc;
use std::time::{Duration, Instant};

use super::super::checkpointer::checkpoint_unless;
use super::super::overlay::Overlay;
use super::super::publish::Committed;
use super::super::read::Engine;
use super::super::wal::Wal;
use super::{CHECKPOINT_BYTES, Msg, Request, Writer};
use crate::store::*;

impl Writer {
    /// Whether a checkpoint is due by size (the overlay's, the log file's)
    /// while one is under way: then the writes wait for it, which bounds
    /// memory and the log (a lagging checkpoint had the overlay grow, and
    /// the log's file past its preallocated size), and frees the CPU for
    /// the checkpoint thread, which runs at nice 19.
    pub(super) fn must_wait(&self) -> bool {
        // Not a retry's: while checkpoints fail, writes go on up to
        // `UNCHECKPOINTED`, then are refused.
        self.checkpointing && !self.failing && self.due_by_size()
    }

    fn due_by_size(&self) -> bool {
        self.state.overlay.bytes >= CHECKPOINT_BYTES
            || self.wal.as_ref().is_some_and(Wal::nearly_full)
    }

    /// Waits for the checkpoint under way; the writes that come meanwhile
    /// join `group` (past `MAX_GROUP`: a group is bounded by the callers
    /// waiting). Answers a close that came instead.
    pub(super) fn wait_for_checkpoint(
        &mut self,
        rx: &sync_mpsc::Receiver<Msg>,
        group: &mut Vec<Request>,
    ) -> Option<Msg> {
        loop {
            match rx.recv() {
                Ok(Msg::Write(request)) => group.push(request),
                Ok(Msg::Checkpointed { number, engine }) => {
                    self.checkpointed(number, engine);
                    return None;
                }
                Ok(Msg::Close) | Err(_) => return Some(Msg::Close),
            }
        }
    }

    /// How long until the writer has a checkpoint to start, if it has one.
    pub(super) fn wake_in(&self) -> Option<Duration> {
        // Stopped: no checkpoint until the close's; a checkpoint under way:
        // its answer wakes the writer.
        if self.checkpointing || self.stopped {
            return None;
        }
        if let Some(at) = self.retry_at {
            return Some(at.saturating_duration_since(Instant::now()));
        }
        let since = self.pending_since?;
        Some(self.checkpoint_every.saturating_sub(since.elapsed()))
    }

    /// Starts a checkpoint when one is due; answers the log's new epoch
    /// when the overlay was frozen for it.
    pub(super) fn checkpoint_if_due(&mut self) -> Option<u64> {
        if self.checkpointing {
            return None;
        }
        if let Some(at) = self.retry_at {
            // The frozen overlay again, under its number: the log is in
            // the next epoch already.
            if Instant::now() >= at {
                self.retry_at = None;
                self.send_checkpoint();
            }
            return None;
        }
        if self.wake_in() != Some(Duration::ZERO) && !self.due_by_size() {
            return None;
        }
        self.state.frozen = std::mem::take(&mut self.state.overlay);
        self.pending_since = None;
        self.send_checkpoint();
        Some(self.checkpoints + 1)
    }

    fn send_checkpoint(&mut self) {
        let number = self.checkpoints + 1;
        let sent = self.to_checkpoint.as_ref().map(|to| {
            let frozen = self.state.frozen.clone();
            to.send((frozen, number)).is_ok()
        });
        if sent == Some(true) {
            self.checkpointing = true;
        } else {
            tracing::error!("the store's checkpoint thread stopped");
            self.failing = true;
            self.retry_at = Some(Instant::now() + self.checkpoint_every);
        }
    }

    /// A checkpoint ended: readers read the engine for its writes from the
    /// next published view on (this one, when no group comes).
    pub(super) fn checkpointed(&mut self, number: u64, engine: Result<Arc<Engine>, StoreError>) {
        self.checkpointing = false;
        match engine {
            Ok(engine) => {
                self.failing = false;
                self.state.engine = engine;
                self.state.frozen = Overlay::default();
                self.checkpoints = number;
                self.hand_on(Committed::view(self.state.clone()));
            }
            // Tried again a second later, not at once (the engine may
            // refuse every write from now on).
            Err(e) => {
                tracing::error!(error = %e, "the store's checkpoint failed");
                self.failing = true;
                self.retry_at = Some(Instant::now() + self.checkpoint_every);
            }
        }
    }

    /// The checkpoint under way ends, and then the last checkpoint: even
    /// after the log failed, as the log's epoch may hold records of groups
    /// that were answered 503, and the next open would otherwise replay them.
    pub(super) fn close(mut self, rx: &sync_mpsc::Receiver<Msg>) {
        while self.checkpointing {
            match rx.recv() {
                Ok(Msg::Checkpointed { number, engine }) => self.checkpointed(number, engine),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        drop(self.to_checkpoint.take());
        if let Some(thread) = self.checkpoint_thread.take() {
            let _ = thread.join();
        }
        // A frozen overlay whose checkpoint failed (or never answered) goes
        // in the same commit as the overlay: apart, the overlay's number
        // would pass the frozen one's log file, which a failure of the first
        // would leave unreplayed, and the overlay's index moves were made
        // over the frozen ones. If this fails, the log still has both.
        let frozen = self.retry_at.is_some() || self.checkpointing;
        if frozen || self.pending_since.is_some() || self.stopped {
            let state = &self.state;
            let overlays = match frozen {
                true => vec![&state.frozen, &state.overlay],
                false => vec![&state.overlay],
            };
            let number = self.checkpoints + 1;
            if let Err(e) = checkpoint_unless(&self.fail, &self.db, &overlays, number) {
                tracing::error!(error = %e, "the store's last checkpoint failed");
            }
        }
    }
}
