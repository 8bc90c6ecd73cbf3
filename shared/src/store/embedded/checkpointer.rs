//! The checkpoint thread: writes each frozen overlay the writer sends it
//! into the engine, in one durable commit ([`super::write::checkpoint`]), and
//! answers the engine as of it ([`super::writer`]).

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
        .spawn(move || checkpoint_stage(&db, from_writer, to_writer, fail))
        .expect("the store's checkpoint thread");
    (to_checkpoint, thread)
}

/// In tests: while a file of this name is in the folder, checkpoints fail
/// (where it holds `panic`, the next one panics, and it then holds `fails`).
#[cfg(test)]
pub(super) const CHECKPOINT_FAIL_MARKER: &str = "fail-the-checkpoints";

/// [`checkpoint`], unless a test's marker file (`fail`) is there.
pub(super) fn checkpoint_unless(
    fail: &Option<PathBuf>,
    db: &Database,
    overlays: &[&Overlay],
    number: u64,
) -> Result<(), StoreError> {
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
