"""The MCP endpoint (POST /mcp) through the official Python SDK (mcp 2.x).

Prints one line per check and `N passed, M failed`; exits non-zero on any
failure. Run by scripts/mcp.sh against `crm serve`.

    python scripts/mcp_flow.py BASE ADMIN_TOKEN
"""

import asyncio
import json
import secrets
import sys
import time
from contextlib import asynccontextmanager

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

OUR_VERSIONS = {"2025-11-25", "2025-06-18", "2025-03-26"}
WRITE_PREFIXES = ("create_", "update_", "upsert_", "win_", "lose_", "move_", "tag_")
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
    print(f"{'pass' if ok else 'FAIL'}  {name}" + (f": {detail}" if detail and not ok else ""), flush=True)
    return ok


def text(result):
    return " ".join(getattr(block, "text", "") for block in result.content)


@asynccontextmanager
async def connect(base, token):
    """An initialized ClientSession with `token` as its bearer, and the initialize result."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        yield session, await session.initialize()


async def admin_flow(base, admin):
    async with connect(base, admin) as (session, init):
        # a. the handshake and the listing
        check(f"initialize: protocol version {init.protocol_version}", init.protocol_version in OUR_VERSIONS)
        tools = {t.name: t for t in (await session.list_tools()).tools}
        for name in ("create_contact", "search_contacts", "get_contact"):
            tool = tools.get(name)
            check(f"list_tools: {name} with output_schema and annotations",
                  tool is not None and tool.output_schema is not None and tool.annotations is not None,
                  "missing" if tool is None else "no output_schema or annotations")

        # b. a keyed create, repeated: the same contact (call_tool checks structured_content
        # against the output schema the listing gave)
        tag = secrets.token_hex(4)
        args = {"name": f"Mcp Zq{tag}", "email": f"zq{tag}@example.com", "idempotencyKey": f"mcp-flow-{tag}"}
        first = await session.call_tool("create_contact", args)
        check("create_contact succeeds", not first.is_error, text(first))
        again = await session.call_tool("create_contact", args)
        id1 = (first.structured_content or {}).get("id")
        id2 = (again.structured_content or {}).get("id")
        check("create_contact again, same idempotencyKey: the same id", id1 is not None and id1 == id2, f"{id1} then {id2}")

        # c. found by search (the index may lag), then read by id
        found = None
        deadline = time.monotonic() + 3
        while True:
            result = await session.call_tool("search_contacts", {"search": f"zq{tag}"})
            ids = [c.get("id") for c in (result.structured_content or {}).get("data", [])]
            found = id1 in ids
            if found or result.is_error or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        check("search_contacts finds it", found, text(result)[:300])
        got = await session.call_tool("get_contact", {"id": int(id1)}) if id1 else None
        check("get_contact reads it",
              got is not None and not got.is_error and got.structured_content.get("email") == args["email"],
              got and text(got)[:300])

        # d. a refused input names its field
        bad = await session.call_tool("create_contact", {"email": "not an e-mail"})
        check("create_contact with a bad email: is_error naming `email`", bad.is_error and "email" in text(bad), text(bad))


def read_only_token(base, admin):
    response = httpx2.post(f"{base}/v3/api-tokens", json={"name": "agent", "scopes": ["*:read"]},
                           headers={"Authorization": f"Bearer {admin}"})
    response.raise_for_status()
    return response.json()["token"]


async def read_only_flow(base, admin):
    # e. a `*:read` token: only read-only tools, and writes refused by scope
    async with connect(base, read_only_token(base, admin)) as (session, _):
        tools = (await session.list_tools()).tools
        not_read_only = [t.name for t in tools if not (t.annotations and t.annotations.read_only_hint)]
        check(f"*:read token: all {len(tools)} listed tools read-only", bool(tools) and not not_read_only, not_read_only)
        writes = [t.name for t in tools if t.name.startswith(WRITE_PREFIXES)]
        check("*:read token: no write tool listed", not writes, writes)
        refused = await session.call_tool("create_contact", {"name": "Nope", "email": "nope@example.com"})
        check("*:read token: create_contact is_error naming `contacts:write`",
              refused.is_error and "contacts:write" in text(refused), text(refused))


def no_token(base):
    # f. no bearer: 401 and a challenge
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "mcp_flow", "version": "1"}}}
    response = httpx2.post(f"{base}/mcp", content=json.dumps(initialize),
                           headers={"Content-Type": "application/json",
                                    "Accept": "application/json, text/event-stream"})
    challenge = response.headers.get("www-authenticate", "")
    check("no token: 401 with WWW-Authenticate: Bearer",
          response.status_code == 401 and challenge.startswith("Bearer"), f"{response.status_code} {challenge!r}")


async def main(base, admin):
    base = base.rstrip("/")
    for step in (admin_flow, read_only_flow):
        try:
            await step(base, admin)
        except Exception as error:  # a transport or validation error is a failure, not a crash
            check(f"{step.__name__} ran to the end", False, repr(error))
    no_token(base)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
