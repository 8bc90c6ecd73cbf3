#!/usr/bin/env python3
"""Bulk import and export of a million contacts on `crm serve` (release
build, embedded store on disk): the goals of issue #47, measured.

    python3 scripts/bench_bulk.py --crm target/release/crm [--rows 1000000]

1. Import: a CSV of --rows contacts (about 100 bytes a row: a 100 MB file
   for a million) made into a job, uploaded, started and followed to its
   end. Wall time from start to done, rows a second, the server's peak
   resident memory (VmHWM).
2. Killed halfway: the same import into a new folder, the server killed with
   SIGKILL once half the rows are in, started again and followed to its
   end; then the contacts counted (0 lost, 0 doubled).
3. Export: every contact as CSV, from the folder of step 1: wall time and
   the server's peak memory.

Prints a Markdown table for docs/bench-results.md. Timings are never
asserted in tests; this is where they are kept.
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

TOKEN = "crm_bench_bulk_token_0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, crm, data):
        self.port = free_port()
        env = dict(os.environ, CRM_BOOTSTRAP_TOKEN=TOKEN, CRM_RATE_LIMITS="off", RUST_LOG="warn")
        self.proc = subprocess.Popen(
            [crm, "serve", "--port", str(self.port), "--data", data],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                self.call("GET", "/v3/time")
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("crm serve did not start")

    def call(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        c.request(method, path, data, headers)
        r = c.getresponse()
        text = r.read()
        if r.status >= 400:
            raise SystemExit(f"{method} {path}: {r.status} {text[:300]!r}")
        return json.loads(text) if text else None

    def put_file(self, url, path):
        u = urllib.parse.urlsplit(url)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            c.request("PUT", f"{u.path}?{u.query}", f, {"Content-Length": str(size)})
            r = c.getresponse()
            r.read()
            assert r.status == 200, r.status

    def peak_rss_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


def make_csv(path, rows):
    plans = ["free", "pro", "business"]
    cities = ["Sao Paulo", "Rio de Janeiro", "Curitiba", "Recife", "Porto Alegre"]
    with open(path, "w") as f:
        f.write("Name,Mobile,E-mail,Plan,City,Company\n")
        for i in range(rows):
            f.write(
                f"Person Number {i},+55 21 9{10_000_000 + i:08d},person.number.{i}@example.com,"
                f"{plans[i % 3]},{cities[i % 5]},Company {i % 997} Ltda\n"
            )


MAPPING = {"Name": "name", "Mobile": "phone", "E-mail": "email",
           "Plan": "customFields.plan", "City": "customFields.city", "Company": "customFields.company"}


def start_import(server, csv):
    job = server.call("POST", "/v3/imports", {"object": "contacts", "mapping": MAPPING})
    server.put_file(job["uploadUrl"], csv)
    path = f"/v3/imports/{job['id']}"
    server.call("POST", f"{path}/start", {})
    return path


def follow(server, path, until, every=0.5):
    while True:
        job = server.call("GET", path)
        if until(job):
            return job
        time.sleep(every)


def final(job):
    return job["status"] in ("done", "failed", "canceled")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--crm", default="target/release/crm")
    p.add_argument("--rows", type=int, default=1_000_000)
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="crm-bench-bulk-")
    try:
        csv = os.path.join(work, "contacts.csv")
        make_csv(csv, args.rows)
        size_mb = os.path.getsize(csv) / 1e6
        results = []

        # 1. The import.
        server = Server(args.crm, os.path.join(work, "a"))
        path = start_import(server, csv)
        t0 = time.time()
        job = follow(server, path, final)
        took = time.time() - t0
        assert job["status"] == "done" and job["created"] == args.rows, job
        results.append(("import", f"{args.rows:,} contacts, {size_mb:.0f} MB CSV", took,
                        args.rows / took, server.peak_rss_mb()))

        # 3. The export, from the same folder.
        t0 = time.time()
        job = server.call("POST", "/v3/exports", {"object": "contacts", "format": "csv"})
        job = follow(server, f"/v3/exports/{job['id']}", final, every=0.2)
        took = time.time() - t0
        assert job["status"] == "done" and job["records"] == args.rows, job
        results.append(("export", f"{args.rows:,} contacts, {job['bytes'] / 1e6:.0f} MB CSV", took,
                        args.rows / took, server.peak_rss_mb()))
        server.stop()

        # 2. Killed halfway, started again.
        server = Server(args.crm, os.path.join(work, "b"))
        path = start_import(server, csv)
        t0 = time.time()
        before = follow(server, path, lambda j: j["rows"] >= args.rows // 2 or final(j), every=0.1)
        assert before["status"] == "running", before
        server.kill()
        server = Server(args.crm, os.path.join(work, "b"))
        job = follow(server, path, final)
        took = time.time() - t0
        total = server.call("GET", "/v3/contacts?limit=1")["totalCount"]
        lost, doubled = max(0, args.rows - total), max(0, total - args.rows)
        assert job["created"] == args.rows and total == args.rows, (job, total)
        results.append(("import, SIGKILL at half", f"killed at row {before['rows']:,}; {lost} lost, {doubled} doubled",
                        took, args.rows / took, server.peak_rss_mb()))
        server.stop()

        print("| run | what | wall time | per second | peak RSS |")
        print("|---|---|---|---|---|")
        for run, what, took, rate, rss in results:
            print(f"| {run} | {what} | {took:.1f} s | {rate:,.0f} | {rss:.0f} MB |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
