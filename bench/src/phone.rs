//! Phone identity, timed in the bench's own fresh process.

use std::time::Instant;

/// Phone identity: the Brazilian fast path, and the `rlibphonenumber` crate's
/// first parse (which loads its metadata) and later ones. Run in this fresh process.
pub fn table() {
    let time = |f: &dyn Fn()| {
        let started = Instant::now();
        f();
        started.elapsed()
    };
    let n = 100_000;
    let fast = time(&|| {
        for i in 0..n {
            let _ = shared::phone::canonical(&format!("(11) 9{:04}-{:04}", i % 10_000, i % 7_919));
        }
    });
    let first = time(&|| {
        let _ = shared::phone::canonical("+44 20 7946 0958");
    });
    let later = time(&|| {
        for _ in 0..1_000 {
            let _ = shared::phone::canonical("+1 (415) 555-2671");
        }
    });
    println!();
    println!("| phone identity | time |");
    println!("|---|---|");
    println!(
        "| Brazilian fast path, per phone (mean of {n}) | {:.2} µs |",
        fast.as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "| first international phone (rlibphonenumber loads its metadata) | {:.1} ms |",
        ms(first)
    );
    println!(
        "| later international phones, per phone (mean of 1,000) | {:.1} µs |",
        later.as_secs_f64() * 1e6 / 1_000.0
    );
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
