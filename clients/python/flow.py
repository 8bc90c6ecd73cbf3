"""A realistic flow with the generated Python client, against a live API.

Only the generated functions and models are used; every 2xx body is parsed
into its model (the client raises on a body its model refuses). Run by
scripts/clients.sh: `python flow.py <base url> <token>`.
"""

import datetime
import pathlib
import queue
import socket
import subprocess
import sys
import threading
import time
import uuid

from crm_api_client import AuthenticatedClient
from crm_api_client.api.api_tokens import api_tokens_create
from crm_api_client.api.contacts import contacts_create, contacts_import, contacts_import_status
from crm_api_client.api.dashboards import dashboards_create, dashboards_get_snapshot, dashboards_snapshot
from crm_api_client.api.deals import deals_create, deals_list, deals_update
from crm_api_client.api.reports import reports_list, reports_put
from crm_api_client.api.tags import tags_create
from crm_api_client.api.webhooks import webhooks_create, webhooks_deliveries, webhooks_ping
from crm_api_client.models import (
    ContactCreate,
    DashboardCreate,
    SnapshotCreate,
    TagCreate,
    TokenCreate,
    DatePreset,
    DealCreate,
    DealPatch,
    DealStatus,
    ImportContact,
    ImportRequest,
    JobStatus,
    MetricName,
    SessionInput,
    Widget,
    WebhookCreate,
)
from crm_api_client.types import Response


def ok(response: Response, what: str):
    """The parsed body of a 2xx answer, or the failure said plainly."""
    if not 200 <= response.status_code < 300 or response.parsed is None:
        raise SystemExit(f"{what}: {response.status_code} {response.content!r}")
    return response.parsed


def until(what: str, read, done):
    """Reads again until `done` holds (at most 10 s)."""
    for _ in range(200):
        value = read()
        if done(value):
            return value
        time.sleep(0.05)
    raise SystemExit(f"{what}: not done in time")


def webhooks(c: AuthenticatedClient) -> None:
    """An endpoint on this machine (crm serve --webhooks-to-private), served by
    the README's receiver, which verifies every delivery: a ping, then a tag's
    event, each printed once verified."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    created = ok(
        webhooks_create.sync_detailed(client=c, body=WebhookCreate(url=f"http://127.0.0.1:{port}/hooks", types=["tag.*"])),
        "webhook",
    )
    assert created.secret.startswith("whsec_")
    receiver_py = pathlib.Path(__file__).parents[2] / "examples" / "webhook_receiver.py"
    receiver = subprocess.Popen([sys.executable, str(receiver_py), created.secret, str(port)], stdout=subprocess.PIPE, text=True)
    lines: "queue.Queue[str]" = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.split()[1]) for line in receiver.stdout], daemon=True).start()
    try:
        until("the receiver", lambda: socket.socket().connect_ex(("127.0.0.1", port)), lambda refused: refused == 0)
        ping = ok(webhooks_ping.sync_detailed(created.id, client=c), "ping")
        assert ping.status.value == "succeeded", ping.to_dict()
        assert lines.get(timeout=10) == "webhook.ping"
        ok(tags_create.sync_detailed(client=c, body=TagCreate(name="Hooked")), "tag for the webhook")
        assert lines.get(timeout=10) == "tag.created"
        until(
            "the deliveries",
            lambda: ok(webhooks_deliveries.sync_detailed(created.id, client=c), "deliveries"),
            lambda page: len(page.data) == 2 and all(d.status.value == "succeeded" for d in page.data),
        )
    finally:
        receiver.kill()


def main(base: str, token: str) -> None:
    client = AuthenticatedClient(base_url=base, token=token, raise_on_unexpected_status=True)
    with client as c:
        tag = ok(tags_create.sync_detailed(client=c, body=TagCreate(name="VIP"), idempotency_key=str(uuid.uuid4())), "tag")
        assert tag.name == "VIP"

        contact = ok(contacts_create.sync_detailed(client=c, body=ContactCreate(name="Ana", phone="11 98765-4321")), "contact")
        assert contact.phone == "+5511987654321", contact.phone

        deal = ok(
            deals_create.sync_detailed(
                client=c,
                body=DealCreate(
                    name="Annual plan", value=1200, status=DealStatus.OPEN, contact_id=int(contact.id),
                    operator_id=7, group_id=1, pipeline_id="sales", stage_id="lead", origin="site",
                    tag_ids=[int(tag.id)],
                ),
            ),
            "deal",
        )
        won = ok(deals_update.sync_detailed(deal.id, client=c, body=DealPatch(status=DealStatus.WON)), "won")
        assert won.status == DealStatus.WON and won.won_lost_date is not None

        listed = ok(
            deals_list.sync_detailed(
                client=c, role_id=1, is_owner=True, user_id=7, status=DealStatus.WON,
                date=DatePreset.LAST_3_MONTHS, tag_ids=[int(tag.id)],
            ),
            "deal list",
        )
        assert listed.total_count == 1 and listed.data[0].id == deal.id

        job = ok(
            contacts_import.sync_detailed(
                client=c, body=ImportRequest(contacts=[ImportContact(name="Rui", phone="21 98888-0002")])
            ),
            "import",
        )
        done = until(
            "import",
            lambda: ok(contacts_import_status.sync_detailed(job.id, client=c), "import job"),
            lambda j: j.status == JobStatus.DONE,
        )
        assert done.created == 1

        started = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
        session = SessionInput.from_dict(
            {
                "createdAt": started.isoformat(),
                "conversation": {"id": 5, "contactPhone": "+5511987654321", "channelId": "wa-1", "channelType": "whatsapp"},
                "trails": [
                    {"type": "queued", "at": (started + datetime.timedelta(minutes=1)).isoformat(), "groupId": "support"},
                    {"type": "assigned", "at": (started + datetime.timedelta(minutes=2)).isoformat(), "operatorId": "ana", "groupId": "support"},
                    {"type": "finished", "at": (started + datetime.timedelta(minutes=9)).isoformat()},
                ],
            }
        )
        ok(reports_put.sync_detailed("s-1", client=c, body=session), "session")
        report = ok(reports_list.sync_detailed(client=c, is_finished=True, assigned=["ana"]), "session report")
        assert report.total_count == 1, report.total_count

        dashboard = ok(
            dashboards_create.sync_detailed(
                client=c,
                body=DashboardCreate(
                    name="Support",
                    layout=[Widget(i="volume", x=0, y=0, w=6, h=4, metric=MetricName.SESSIONSSTARTED)],
                ),
            ),
            "dashboard",
        )
        snapshot = ok(
            dashboards_snapshot.sync_detailed(int(dashboard.id), client=c, body=SnapshotCreate(author_id=1, author_name="Ana")),
            "snapshot",
        )
        computed = until(
            "snapshot",
            lambda: ok(dashboards_get_snapshot.sync_detailed(int(dashboard.id), snapshot.id, client=c), "snapshot read"),
            lambda s: s.status is not None and s.status.state.value == "done",
        )
        assert computed.data["volume"].value == 1, computed.data.to_dict()

        issued = ok(api_tokens_create.sync_detailed(client=c, body=TokenCreate(name="reader")), "token")
        assert issued.token.startswith("crm_")

        webhooks(c)
    print("the Python flow passed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
