//! The black-box suites of the API, one module per resource group, linked
//! into one test binary: forty binaries that each linked the AWS SDK took
//! about 3.5 GB of disk and a link each; one takes 90 MB and one link.
//! `tests/tls.rs` stays a binary of its own: it sets the process environment.
//! The modules are this directory's files, found by `tests/build.rs`: a new
//! suite needs no line here.
//! Run one suite with `scripts/test.sh -p api-tests --test api tags::`.

include!(concat!(env!("OUT_DIR"), "/suites.rs"));
