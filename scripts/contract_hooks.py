"""Schemathesis hooks of scripts/contract.sh.

Every generated request that carries a well-formed Idempotency-Key gets a
fresh one, so that each generated request is a new request: the fuzzer would
otherwise reuse short keys ("0", "a") across operations and meet mostly the
(correct) 422 of a reused key, reaching no handler. Malformed keys are sent as
generated, to check that they are refused. Retries with one key are covered by
tests/tests/idempotency.rs.

The run's own token is kept: fuzzing reuses ids seen in earlier responses,
and once it sent `DELETE /v3/api-tokens/{id}` with the id of the token it
calls with, every later request of the run was a 401 (schemathesis then
warned "Authentication failed" and most of the run tested only the token
check). That one request is sent with a well-formed id of no token instead.

In the second pass (CRM_CONTRACT_READ_ONLY=1) the token holds `*:read` alone,
and every change must be refused: a 2xx fails the run (but `POST /v3/exports`,
a read of the object's records).
"""

import itertools
import os
import re

import schemathesis

_fresh = itertools.count()
_WELL_FORMED = re.compile(r"^[!-~]([ -~]{0,253}[!-~])?$")


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers or {}
    for name in list(headers):
        value = headers[name]
        if name.lower() == "idempotency-key" and isinstance(value, str) and _WELL_FORMED.match(value):
            headers[name] = f"contract-{next(_fresh)}"


# POSTs that read: an export job takes the object's read scope (exporting
# contacts is reading them; docs/api-contract.md, "Bulk imports and exports").
_READS_BY_POST = {"/v3/exports"}

if os.environ.get("CRM_CONTRACT_READ_ONLY") == "1":

    @schemathesis.check
    def no_write_with_a_read_only_token(ctx, response, case):
        reads = case.method.upper() == "POST" and case.path in _READS_BY_POST
        if case.method.upper() != "GET" and not reads and 200 <= response.status_code < 300:
            raise AssertionError(
                f"{case.method} {case.path} answered {response.status_code} to a token holding only *:read"
            )


@schemathesis.hook("before_call").apply_to(method="PUT", path="/v3/workspaces/{id}/rate-limits")
def keep_room_to_fuzz(context, case, kwargs):
    """A workspace's limits set to one request a second would leave the rest
    of the run nothing but 429s: a valid body is given room instead."""
    body = case.body
    if isinstance(body, dict):
        for bucket in ("token", "workspace"):
            policy = body.get(bucket)
            if isinstance(policy, dict) and isinstance(policy.get("quota"), int) and 1 <= policy["quota"]:
                policy["quota"] = 1000000
                policy["windowSeconds"] = 10


_OWN_TOKEN_ID = os.environ.get("CRM_CONTRACT_TOKEN_ID")
# A well-formed token id that no token has.
_NO_TOKEN_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


@schemathesis.hook("before_call").apply_to(method="DELETE", path="/v3/api-tokens/{id}")
def keep_own_token(context, case, kwargs):
    if _OWN_TOKEN_ID and (case.path_parameters or {}).get("id") == _OWN_TOKEN_ID:
        case.path_parameters["id"] = _NO_TOKEN_ID


# schemathesis 4.32 reads each string of a 2xx answer that starts with
# `http://` as an address (engine/observations.py, to learn links) and stops
# the whole run on one that urllib cannot split: `http://[` raised "Invalid
# IPv6 URL" once, echoed back from a redirect session's `targetUrl` (the API
# refuses such addresses since). Any string can hold that text, so one that
# does not split is read as no address of this API.
try:
    from schemathesis.engine import observations as _observations

    _split = _observations._same_origin_path

    def _same_origin_path(value, origin):
        try:
            return _split(value, origin)
        except ValueError:
            return None

    _observations._same_origin_path = _same_origin_path
except (ImportError, AttributeError):
    pass


@schemathesis.check
def a_batch_answers_each_operation(ctx, response, case):
    """A batch's 200 or 207 has one result per operation, in input order; a
    207 names its failures, each with a status of its own (never a 5xx: the
    fuzzer's invalid operations are 4xx items) and the API's error shape."""
    if not case.path.endswith("/batch") or response.status_code not in (200, 207):
        return
    sent = case.body.get("operations") if isinstance(case.body, dict) else None
    answer = response.json()
    results = answer.get("results", [])
    if isinstance(sent, list) and len(results) != len(sent):
        raise AssertionError(f"{len(sent)} operations, {len(results)} results")
    if [r.get("index") for r in results] != list(range(len(results))):
        raise AssertionError("results out of input order")
    failed = [r for r in results if r.get("error")]
    if (response.status_code == 207) != bool(failed) or len(failed) != answer.get("failed"):
        raise AssertionError(f"{response.status_code} with {len(failed)} failed items")
    for r in failed:
        if not 400 <= r.get("status", 0) < 500 or r["error"].get("statusCode") != r["status"]:
            raise AssertionError(f"item {r.get('index')}: {r}")
