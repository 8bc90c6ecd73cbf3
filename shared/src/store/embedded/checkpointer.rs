//! The checkpoint thread: writes each frozen overlay the writer sends it
//! into the engine, in one durable commit ([`super::write::checkpoint`]), and
//! answers the engine as of it ([`super::writer`]).
//!
//! It runs at the lowest priority of the normal scheduler (nice 19, as
//! databases lower their compaction threads): the threads of requests, and a
//! local client's on the same cores, take the CPU first; a checkpoint uses
//! what they leave. On 2 cores this made durable creates over TCP 5-28%
//! faster, round by round (docs/bench-results.md, "The checkpoint thread at
//! nice 19"). It cannot fall behind without bound: a checkpoint due by size
//! while one is under way waits for it, and the writes with it
//! ([`super::writer`]), which leaves it the CPU.

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self as sync_mpsc, Sender};
use std::thread::JoinHandle;

use redb::Database;

use super::overlay::Overlay;
use super::read::Engine;
use super::write::checkpoint;
use super::writer::Msg;
use crate::store::*;

/// Starts the thread; it ends once its sender is dropped. `fail`: in tests,
/// the marker file that makes checkpoints fail.
pub(super) fn start(
    db: Arc<Database>,
    to_writer: Sender<Msg>,
    fail: Option<PathBuf>,
) -> (Sender<(Overlay, u64)>, JoinHandle<()>) {
    let (to_checkpoint, from_writer) = sync_mpsc::channel::<(Overlay, u64)>();
    let thread = std::thread::Builder::new()
        .name("crm-store-checkpoint".into())
        .spawn(move || {
            lower_priority();
            checkpoint_stage(&db, from_writer, to_writer, fail)
        })
        .expect("the store's checkpoint thread");
    (to_checkpoint, thread)
}

/// The checkpoint thread's nice value: the lowest priority of the normal
/// scheduler. A thread of requests that wakes gets the core at once, rather
/// than waiting behind a checkpoint's B-tree work.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(super) const NICE: i32 = 19;

/// Lowers the calling thread's priority to [`NICE`] (Linux, where a nice
/// value is a thread's; elsewhere, or where refused, it keeps its priority).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: a plain system call on the calling thread (`who` 0).
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, NICE) } != 0 {
        let error = std::io::Error::last_os_error();
        tracing::debug!(%error, "the checkpoint thread keeps its priority");
    }
}

/// In tests: while a file of this name is in the folder, checkpoints fail
/// (where it holds `panic`, the next one panics, and it then holds `fails`;
/// where it holds `hold`, a checkpoint waits until it holds something else).
#[cfg(test)]
pub(super) const CHECKPOINT_FAIL_MARKER: &str = "fail-the-checkpoints";

/// [`checkpoint`], unless a test's marker file (`fail`) is there.
pub(super) fn checkpoint_unless(
    fail: &Option<PathBuf>,
    db: &Database,
    overlays: &[&Overlay],
    number: u64,
) -> Result<(), StoreError> {
    let holds = |marker: &PathBuf| std::fs::read(marker).is_ok_and(|m| m == b"hold");
    while fail.as_ref().is_some_and(holds) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    match fail.as_ref().filter(|marker| marker.exists()) {
        Some(marker) if std::fs::read(marker).is_ok_and(|m| m == b"panic") => {
            let _ = std::fs::write(marker, "fails");
            panic!("a checkpoint panicked (a test's doing)")
        }
        Some(_) => Err(StoreError::Unavailable(
            "the disk failed (a test's doing)".into(),
        )),
        None => checkpoint(db, overlays, number),
    }
}

/// The checkpoint thread: writes each overlay it is given into the engine.
fn checkpoint_stage(
    db: &Database,
    from_writer: sync_mpsc::Receiver<(Overlay, u64)>,
    to_writer: sync_mpsc::Sender<Msg>,
    fail: Option<PathBuf>,
) {
    while let Ok((frozen, number)) = from_writer.recv() {
        // A panic (the engine's or this code's bug) is a checkpoint that
        // failed: the writer tries again a second later and refuses writes
        // past its bound, where it would wait for an answer forever while
        // memory and the log grew. (Release builds abort on a panic; the
        // next start replays the log.)
        let made = std::panic::catch_unwind(AssertUnwindSafe(|| {
            checkpoint_unless(&fail, db, &[&frozen], number).and_then(|()| Engine::of(db))
        }));
        let engine =
            made.unwrap_or_else(|_| Err(StoreError::Other("a checkpoint panicked".into())));
        drop(frozen);
        if to_writer
            .send(Msg::Checkpointed { number, engine })
            .is_err()
        {
            return;
        }
    }
}
