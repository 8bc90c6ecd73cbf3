//! The folder of `crm serve --data`: a JSON-lines log of committed writes,
//! replayed on open and rewritten compacted, behind a lock file.

use super::*;

impl MemoryStore {
    /// A store kept in `dir`, created when missing. One process at a time: a
    /// second one (a `crm load` beside a running `crm serve`) is refused.
    pub fn open(dir: &Path, indexes: &[Index]) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let lock = File::create(dir.join("crm-store.lock"))?;
        if lock.try_lock().is_err() {
            return Err(std::io::Error::other(format!(
                "{} is in use by another process (a running `crm serve`?)",
                dir.display()
            )));
        }
        let path = dir.join(LOG_FILE);
        let store = Self::in_memory(indexes);
        {
            let mut state = store.lock();
            state._lock = Some(lock);
            if path.exists() {
                for (n, line) in BufReader::new(File::open(&path)?).lines().enumerate() {
                    let line = line?;
                    if line.trim().is_empty() {
                        continue;
                    }
                    // A torn last line (a crash mid-append) loses only that write.
                    let Ok(entry) = serde_json::from_str::<Value>(&line) else {
                        tracing::warn!(
                            line = n + 1,
                            "skipping unreadable line of {}",
                            path.display()
                        );
                        continue;
                    };
                    store.replay(&mut state, &entry);
                }
            }
            // Compact: one line per live item, written aside and renamed into place.
            let tmp: PathBuf = dir.join(format!("{LOG_FILE}.tmp"));
            {
                let mut out = BufWriter::new(File::create(&tmp)?);
                for item in state.items.values() {
                    serde_json::to_writer(&mut out, &json!({ "put": [item] }))?;
                    out.write_all(b"\n")?;
                }
                out.flush()?;
            }
            std::fs::rename(&tmp, &path)?;
            state.log = Some(BufWriter::new(OpenOptions::new().append(true).open(&path)?));
        }
        Ok(store)
    }

    pub(super) fn replay(&self, state: &mut State, entry: &Value) {
        for item in entry["put"].as_array().into_iter().flatten() {
            if let Some(item) = item.as_object() {
                self.put_item(state, item.clone());
            }
        }
        for key in entry["delete"].as_array().into_iter().flatten() {
            if let (Some(pk), Some(sk)) = (key[0].as_str(), key[1].as_str()) {
                self.delete_item(state, &Key::new(pk, sk));
            }
        }
    }
}
