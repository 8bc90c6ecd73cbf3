//! `crm serve` as a user runs it, for the tests of this folder: a real
//! process on a free loopback port, bootstrapped with CRM_BOOTSTRAP_TOKEN,
//! and a minimal HTTP client.
#![allow(dead_code)] // each test file uses its own part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const TOKEN: &str = "crm_serve_test_token_0123456789";

pub struct Server {
    pub child: Child,
    pub port: u16,
    /// What the server wrote (its log), line by line.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Server {
    /// SIGTERM, as a service manager stops it; answers its exit status.
    #[cfg(unix)]
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        // SAFETY: a plain kill(2) of our own child, which has not been waited for.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        self.child.wait().expect("crm exits")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start(args: &[&str]) -> Server {
    start_with(args, &[])
}

/// Starts `crm serve` on a port the system chooses (`--port 0`) and reads it
/// from the server's own log line: a port picked here and passed on could be
/// taken by another test's server or connection before the server binds it.
pub fn start_with(args: &[&str], env: &[(&str, &str)]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crm"))
        .args(["serve", "--port", "0"])
        .args(args)
        .env("CRM_BOOTSTRAP_TOKEN", TOKEN)
        .env("RUST_LOG", "warn,crm=info")
        // The tests send far more than a token's quota (tests/tests/limits.rs
        // holds the limits).
        .env("CRM_RATE_LIMITS", "off")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("crm starts");
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let stdout: Box<dyn Read + Send> = Box::new(child.stdout.take().unwrap());
    let stderr: Box<dyn Read + Send> = Box::new(child.stderr.take().unwrap());
    for output in [stdout, stderr] {
        let (lines, port_tx) = (log.clone(), port_tx.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines().map_while(Result::ok) {
                if let Some(port) = listening_port(&line) {
                    let _ = port_tx.send(port);
                }
                lines.lock().unwrap().push(line);
            }
        });
    }
    // Only the readers' senders remain: a server that dies at start-up ends
    // the wait at once.
    drop(port_tx);
    let Ok(port) = port_rx.recv_timeout(Duration::from_secs(20)) else {
        // Not left running after the test.
        let _ = child.kill();
        let _ = child.wait();
        panic!("crm serve did not listen: {:?}", log.lock().unwrap());
    };
    Server { child, port, log }
}

/// The port of the log line "CRM API on http://127.0.0.1:<port> (...)".
fn listening_port(line: &str) -> Option<u16> {
    let rest = line.split("CRM API on http://").nth(1)?;
    let addr = rest.split_whitespace().next()?;
    addr.rsplit(':').next()?.parse().ok()
}

/// A minimal HTTP/1.1 exchange; returns (status, body).
pub fn call(port: u16, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

/// Like [`call`], or `None` when the server is gone (refused, reset, cut short).
pub fn try_call(port: u16, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.get(9..12)?.parse().ok()?;
    let body = response.split("\r\n\r\n").nth(1)?.to_owned();
    Some((status, body))
}

pub fn id_of(body: &str) -> Option<String> {
    Some(
        body.split("\"id\":\"")
            .nth(1)?
            .split('"')
            .next()?
            .to_owned(),
    )
}
