"""Schemathesis hooks of scripts/contract.sh.

Every generated request that carries a well-formed Idempotency-Key gets a
fresh one, so that each generated request is a new request: the fuzzer would
otherwise reuse short keys ("0", "a") across operations and meet mostly the
(correct) 422 of a reused key, reaching no handler. Malformed keys are sent as
generated, to check that they are refused. Retries with one key are covered by
tests/tests/idempotency.rs.
"""

import itertools
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
