"""Ids of real records for the contract run (scripts/contract.sh).

The server starts on a folder holding examples/demo.jsonl. This script adds
through the API the records the demo file has no line for (a dashboard and
its snapshot, an import job, a checkout link, a welcome message, redirect
sessions), reads back through the API the ids of every collection the
served document lists (`GET /v3/things` beside `/v3/things/{id}`: a new
group's records are seeded with no line here), and prints schemathesis
settings that give each path parameter those ids half of the time, and the
same to a few body and query fields (phones that parse, a deal's contact and
tags, the deal list's caller). Without them the fuzzer's ids were all
unknown: a GET or PATCH by id only ever met its 404, and schemathesis warned
that 21 operations never reached their handler's logic (and, as 13 of those
saw no 2xx, that they "returned only 401/403", the answers of its own
requests without a token).

    python3 scripts/contract_seed.py BASE_URL TOKEN >> config.toml
"""

import json
import re
import sys
import urllib.parse
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
# Collections whose records the fuzzer must not be handed: it could revoke
# its own token (contract_hooks.py guards the one it knows of) or send test
# deliveries.
NOT_SEEDED = ("/v3/api-tokens", "/v3/webhooks")
# Operations that would take the demo's records away from the rest of the
# run (an erased or merged contact is a 404 to every later request that
# names it, the deals' contactId among them).
NOT_SEEDED_OPERATIONS = ("POST /v3/contacts/{id}/erase", "POST /v3/contacts/{id}/merge")
# Query parameters a list requires, by collection: the deal list's caller.
LIST_QUERIES = {"/v3/deals": {"roleId": 1, "isOwner": "true", "userId": 7}}


def collections(document):
    """The operations on `<collection>/{p}...` whose collection has a GET
    list, by the collection's name (/v1 and /v3 share ids): its lists, and
    each operation with its parameter and the parameter's type (which may
    differ by method: a deal's GET takes an integer, its PATCH a string)."""
    found = {}
    for path, operations in document["paths"].items():
        match = re.fullmatch(r"(/v[13](?:/[a-z-]+)+)/\{(\w+)\}(/.*)?", path)
        if not match or match.group(1).startswith(NOT_SEEDED):
            continue
        collection, parameter = match.group(1), match.group(2)
        if "get" not in document["paths"].get(collection, {}):
            continue
        # A dictionary name (a TOML bare key): "reports/sessions" -> "reports-sessions".
        name = collection.split("/", 2)[2].replace("/", "-")
        found.setdefault(name, {"lists": set(), "operations": []})
        found[name]["lists"].add(collection)
        for method, operation in operations.items():
            if method not in ("get", "put", "post", "patch", "delete"):
                continue
            kinds = [
                p.get("schema", {}).get("type", "string")
                for p in operation.get("parameters", [])
                if p.get("in") == "path" and p.get("name") == parameter
            ]
            operation_name = f"{method.upper()} {path}"
            if operation_name in NOT_SEEDED_OPERATIONS:
                continue
            found[name]["operations"].append((operation_name, parameter, kinds[0] if kinds else "string"))
    return found


def listed_ids(document, collection):
    """The ids of one page of the list, at its largest page size."""
    query = dict(LIST_QUERIES.get(collection, {}))
    for p in document["paths"][collection]["get"].get("parameters", []):
        if p.get("name") == "limit":
            query["limit"] = min(100, p.get("schema", {}).get("maximum", 100))
    path = collection + ("?" + urllib.parse.urlencode(query) if query else "")
    return [str(item["id"]) for item in call("GET", path)["data"]]


document = call("GET", "/openapi.json")
seeded = collections(document)
listed = {}
for name, found in sorted(seeded.items()):
    # The newest version's list: /v3 answers every record /v1 does.
    found_ids = listed_ids(document, max(found["lists"]))
    listed[name] = found_ids
    # Ids the document types as integers (answered as strings) are given as
    # integers: a string would violate their schema, and schemathesis would
    # expect a 4xx.
    if all(i.isdigit() for i in found_ids):
        listed[name + "-int"] = [int(i) for i in found_ids]
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
    # The names body fields use (body_fields below).
    "contactIds": listed["contacts-int"],
    "tagIds": listed["tags-int"],
    # A deal's products name them by string ids.
    "productIds": listed["products"],
    # The deal list's caller: the demo's owner (query_fields below).
    "roles": [1],
    "users": [7],
}
for name, values in dictionaries.items():
    if not values:
        sys.exit(f"{sys.argv[0]}: no {name} to seed the run with")

# Each operation matches one entry: its path parameters and their ids. The
# collections' paths are derived above; these are the records created here.
def dictionary(name, kind):
    """The ids of `name` as the parameter's type has them: integers where
    the ids are all digits (else the strings, which the fuzzer then sends
    as invalid data, expecting a 4xx)."""
    return name + "-int" if kind == "integer" and name + "-int" in listed else name


bindings = [
    ("include-name", operation, {parameter: dictionary(name, kind)})
    for name, found in sorted(seeded.items())
    for operation, parameter, kind in found["operations"]
] + [
    ("include-path-regex", regex, parameters)
    for regex, parameters in [
        (r"^/v3/contacts/import/\{id\}$", {"id": "imports"}),
        (r"^/v3/workspaces/checkout-link/\{code\}(/.*)?$", {"code": "checkout"}),
        (r"^/v3/workspaces/welcome-messages/\{id\}$", {"id": "welcome"}),
        (r"^/v3/redirect-session/\{key\}$", {"key": "redirects"}),
        (r"^/docs/\{asset\}$", {"asset": "assets"}),
        (r"^/v3/dashboards/\{dashboardId\}(/snapshots)?$", {"dashboardId": "dashboards"}),
        (r"^/v3/dashboards/\{dashboardId\}/snapshots/\{id\}$", {"dashboardId": "dashboards", "id": "snapshots"}),
    ]
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
    "contactId": ("contactIds", 0.9),
    "tagIds[*]": ("tagIds", 0.9),
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
for selector, value, parameters in bindings:
    settings = ", ".join(
        f'"path.{parameter}" = {{ dictionary = "{dictionary}", probability = 0.5 }}'
        for parameter, dictionary in parameters.items()
    )
    print(f"\n[[operations]]\n{selector} = {json.dumps(value)}\nparameters = {{ {settings} }}")
