"""Ids of real records for the contract run (scripts/contract.sh).

The server starts on a folder holding examples/demo.jsonl. This script adds
through the API the records the demo file has no line for (a dashboard and
its snapshot, an import job, a checkout link, a welcome message, redirect
sessions), reads the ids of every kind back through the API, and prints
schemathesis settings that give each path parameter those ids half of the
time, and the same to a few body and query fields (phones that parse, a
deal's contact and tags, the deal list's caller). Without them the fuzzer's
ids were all unknown: a GET or PATCH by id only ever met its 404, and
schemathesis warned that 21 operations never reached their handler's logic
(and, as 13 of those saw no 2xx, that they "returned only 401/403", the
answers of its own requests without a token).

    python3 scripts/contract_seed.py BASE_URL TOKEN >> config.toml
"""

import json
import sys
import urllib.request

BASE, TOKEN = sys.argv[1], sys.argv[2]


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        BASE + path,
        data=data,
        method=method,
        headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)


def ids(path):
    return [item["id"] for item in call("GET", path)["data"]]


def numbers(path):
    """Ids the document types as integers (answered as strings): a string
    would violate their schema, and schemathesis would expect a 4xx."""
    return [int(i) for i in ids(path)]


dashboard = call(
    "POST",
    "/v3/dashboards",
    {"name": "Contract", "layout": [{"i": "volume", "x": 0, "y": 0, "w": 6, "h": 4, "metric": "sessionsStarted"}]},
)["id"]
snapshot = call(
    "POST",
    f"/v3/dashboards/{dashboard}/snapshots",
    {"authorId": 1, "authorName": "Ana", "period": "month"},
)["id"]
created = {
    "imports": [call("POST", "/v3/contacts/import", {"contacts": [{"name": "Ana", "phone": "21 98888-0001"}]})["id"]],
    "checkout": [call("POST", "/v3/workspaces/checkout-link", {"plan": "pro", "seats": 5})["code"]],
    "welcome": [
        call("POST", "/v3/workspaces/send-welcome-message", {"phone": "11 98765-4321", "text": "Welcome!"})["id"]
    ],
    # Read once each: a few, so that more than one GET finds one.
    "redirects": [
        call("POST", "/v3/redirect-session", {"targetUrl": "https://app.example.com", "payload": {"n": n}})["key"]
        for n in range(5)
    ],
    "dashboards": [int(dashboard)],
    "snapshots": [snapshot],
}
listed = {
    "tags": numbers("/v3/tags?limit=100"),
    "contacts": numbers("/v3/contacts?limit=100"),
    "deals": numbers("/v3/deals?roleId=1&isOwner=true&userId=7&limit=100"),
    "campaigns": numbers("/v3/campaigns?limit=100"),
    "products": numbers("/v3/products"),
    "fields": numbers("/v3/custom-fields"),
    "hours": numbers("/v3/business-hours"),
    "sessions": ids("/v3/reports/sessions?limit=20"),
    "audit": ids("/v3/audit?limit=20"),
}
# The reference page's files (functions/api-docs, ASSETS).
assets = ["swagger-ui.css", "swagger-ui-bundle.js", "oauth2-redirect.html", "oauth2-redirect.js"]
# Phones that parse, half of the time wherever a body has one: the schema
# says only "a string", so generated phones almost never parse and the
# handlers behind them (creates, find-or-create, imports, welcome messages)
# met only their 400.
phones = [f"(21) 97{n:03d}-{n * 7919 % 10000:04d}" for n in range(40)]
dictionaries = {
    **listed,
    **created,
    "assets": assets,
    "phones": phones,
    # A deal's products name them by string ids.
    "productIds": [str(i) for i in listed["products"]],
    # The deal list's caller: the demo's owner (query_fields below).
    "roles": [1],
    "users": [7],
}
for name, values in dictionaries.items():
    if not values:
        sys.exit(f"{sys.argv[0]}: no {name} to seed the run with")

# Each operation matches one entry: its path parameters and their ids.
bindings = [
    (r"^/v[13]/tags/\{id\}$", {"id": "tags"}),
    (r"^/v[13]/contacts/\{id\}$", {"id": "contacts"}),
    (r"^/v3/deals/\{id\}$", {"id": "deals"}),
    (r"^/v3/campaigns/\{id\}(/.*)?$", {"id": "campaigns"}),
    (r"^/v3/products/\{id\}$", {"id": "products"}),
    (r"^/v[13]/custom-fields/\{id\}$", {"id": "fields"}),
    (r"^/v3/business-hours/\{id\}$", {"id": "hours"}),
    (r"^/v3/reports/sessions/\{id\}$", {"id": "sessions"}),
    (r"^/v3/audit/\{id\}$", {"id": "audit"}),
    (r"^/v3/contacts/import/\{id\}$", {"id": "imports"}),
    (r"^/v3/workspaces/checkout-link/\{code\}(/.*)?$", {"code": "checkout"}),
    (r"^/v3/workspaces/welcome-messages/\{id\}$", {"id": "welcome"}),
    (r"^/v3/redirect-session/\{key\}$", {"key": "redirects"}),
    (r"^/docs/\{asset\}$", {"asset": "assets"}),
    (r"^/v3/dashboards/\{dashboardId\}(/snapshots)?$", {"dashboardId": "dashboards"}),
    (r"^/v3/dashboards/\{dashboardId\}/snapshots/\{id\}$", {"dashboardId": "dashboards", "id": "snapshots"}),
]

print("\n# Written by scripts/contract_seed.py for this run.")
for name, values in dictionaries.items():
    print(f"[dictionaries.{name}]\nvalues = {json.dumps(values)}")
# Body fields that hold a phone or name a record (a deal's contact, tags and
# products: one unknown is a 404 for the whole deal, so these are real
# nine times in ten), with how often.
body_fields = {
    "phone": ("phones", 0.5),
    "phones[*]": ("phones", 0.5),
    "contacts[*].phone": ("phones", 0.5),
    "contact.phone": ("phones", 0.5),
    "conversation.contactPhone": ("phones", 0.5),
    "contactId": ("contacts", 0.9),
    "tagIds[*]": ("tags", 0.9),
    "products[*].id": ("productIds", 0.9),
}
# The deal list's caller (the demo's owner): the list refuses a query
# without roleId, isOwner and userId, which may also come inside `filters`,
# so the document cannot mark them required.
query_fields = {"roleId": "roles", "userId": "users"}
print("\n[parameters]")
for field, (dictionary, probability) in body_fields.items():
    print(f'"body.{field}" = {{ dictionary = "{dictionary}", probability = {probability} }}')
for field, dictionary in query_fields.items():
    print(f'"query.{field}" = {{ dictionary = "{dictionary}", probability = 0.5 }}')
for regex, parameters in bindings:
    settings = ", ".join(
        f'"path.{parameter}" = {{ dictionary = "{dictionary}", probability = 0.5 }}'
        for parameter, dictionary in parameters.items()
    )
    print(f"\n[[operations]]\ninclude-path-regex = {json.dumps(regex)}\nparameters = {{ {settings} }}")
