#!/usr/bin/env python3
"""Writes examples/demo.jsonl: demo records for `crm load` (a month of session
reports for several operators, groups, bots, channels and tags; catalog
products, custom fields and business hours; tags, contacts (the sessions'
phones), their organization and conversations, deals across the pipeline, and
campaigns). Deterministic: the same file every run. Load it with times moved to the present:

    cargo run -- load examples/demo.jsonl --workspace 1 --shift-times
"""
import json
import random
from datetime import datetime, timedelta, timezone

random.seed(20261122)
END = datetime(2026, 11, 22, 18, 0, tzinfo=timezone.utc)
OPERATORS = ["ana", "rui", "eva", "leo"]
GROUPS = ["support", "sales"]
BOTS = ["welcome-bot", "faq-bot"]
CHANNELS = [("whatsapp-1", "whatsapp"), ("instagram-1", "instagram"), ("webchat-1", "webchat")]
CAMPAIGNS = ["black-friday", "renewal-q4"]


def ts(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


lines = []
lines.append({"type": "product", "id": 1, "name": "Starter plan", "price": 49.0, "description": "Up to 3 operators"})
lines.append({"type": "product", "id": 2, "name": "Pro plan", "price": 199.0, "description": "Up to 20 operators"})
lines.append({"type": "customField", "id": 1, "name": "Plan", "key": "plan", "entity": "contact", "fieldType": "text"})
lines.append({"type": "businessHour", "id": 1, "name": "Office", "timezone": "America/Sao_Paulo",
              "intervals": [{"day": d, "start": "09:00", "end": "18:00"} for d in range(1, 6)]})
lines.append({"type": "organization", "id": 1, "name": "Acme", "active": True})

sessions = []
for i in range(320):
    start = END - timedelta(minutes=random.randint(30, 30 * 24 * 60))
    operator = random.choice(OPERATORS)
    group = random.choice(GROUPS)
    bot = random.choice(BOTS)
    channel, channel_type = random.choice(CHANNELS)
    t = start
    trails = [{"type": "bot", "at": ts(t), "botId": bot}]
    t += timedelta(seconds=random.randint(5, 60))
    trails.append({"type": "message", "at": ts(t), "from": "bot", "botId": bot})
    t += timedelta(seconds=random.randint(10, 120))
    trails.append({"type": "queued", "at": ts(t), "groupId": group})
    state = random.random()
    recent = (END - start) < timedelta(hours=6)
    if not (recent and state < 0.3):  # a few recent ones still wait
        t += timedelta(seconds=random.randint(20, 1800))
        trails.append({"type": "assigned", "at": ts(t), "operatorId": operator, "groupId": group})
        if random.random() < 0.15:
            other = random.choice([o for o in OPERATORS if o != operator])
            t += timedelta(seconds=random.randint(30, 600))
            trails.append({"type": "transferred", "at": ts(t), "operatorId": other, "groupId": random.choice(GROUPS)})
            operator = other
        t += timedelta(seconds=random.randint(5, 120))
        trails.append({"type": "message", "at": ts(t), "from": "contact"})
        if random.random() < 0.95:
            t += timedelta(seconds=random.randint(10, 900))
            trails.append({"type": "message", "at": ts(t), "from": "operator", "operatorId": operator})
        if not (recent and state < 0.6):
            t += timedelta(seconds=random.randint(120, 3600))
            trails.append({"type": "finished", "at": ts(t)})
            if random.random() < 0.05:
                t += timedelta(hours=random.randint(1, 20))
                trails.append({"type": "reopened", "at": ts(t)})
                t += timedelta(seconds=random.randint(10, 300))
                trails.append({"type": "queued", "at": ts(t), "groupId": group})
                t += timedelta(seconds=random.randint(20, 900))
                trails.append({"type": "assigned", "at": ts(t), "operatorId": operator})
                t += timedelta(seconds=random.randint(10, 300))
                trails.append({"type": "message", "at": ts(t), "from": "operator", "operatorId": operator})
                t += timedelta(seconds=random.randint(120, 1800))
                trails.append({"type": "finished", "at": ts(t)})
    if t > END:
        continue
    session = {
        "type": "session",
        "id": f"demo-{i:04d}",
        "createdAt": ts(start),
        "conversation": {"id": 10000 + i // 2, "contactPhone": f"+55119{80000000 + i // 2:08d}",
                         "channelId": channel, "channelType": channel_type},
        "trails": trails,
        "tags": sorted(random.sample([1, 2, 3, 4, 5], random.randint(0, 2))),
        "isNewContact": random.random() < 0.3,
    }
    if random.random() < 0.6 and any(x["type"] == "finished" for x in trails):
        session["rating"] = random.choice([3, 4, 4, 5, 5, 5])
    if random.random() < 0.2:
        session["deals"] = {"ids": [100000 + i], "won": random.random() < 0.5}
    if random.random() < 0.1:
        session["campaignId"] = random.choice(CAMPAIGNS)
    sessions.append(session)

# The CRM's own records, drawn from a generator of their own so that the
# sessions above stay what they were. Their ids are made from times, as the
# API makes them (ids are time-ordered: a loaded record was created when its id
# says); deals name their contacts and tags by these ids.
EPOCH_MS = 1_704_067_200_000  # the ids' epoch, 2024-01-01 (shared/src/ids.rs)


def make_id(t, seq):
    return ((int(t.timestamp() * 1000) - EPOCH_MS) << 12) | seq


crm = random.Random(7)
TAGS = [("Cliente VIP", "#F44336"), ("Lead quente", "#FF9800"), ("Cliente", "#4CAF50"),
        ("Suporte", "#2196F3"), ("Black Friday", "#212121")]
tag_ids = []
for n, (name, color) in enumerate(TAGS, start=1):
    tag_id = make_id(END - timedelta(days=90, minutes=-n), n)
    tag_ids.append(tag_id)
    tag = {"type": "tag", "id": tag_id, "name": name, "color": color}
    if n == 5:
        tag["textColor"] = "#FFFFFF"
    lines.append(tag)

FIRST = ["Maria", "João", "Ana", "Pedro", "Carla", "Lucas", "Júlia", "Rafael", "Beatriz", "Tiago"]
LAST = ["Silva", "Souza", "Oliveira", "Santos", "Lima", "Costa"]
CONTACTS = 40
contacts = []  # (id, created)
for n in range(1, CONTACTS + 1):
    first, last = FIRST[(n - 1) % len(FIRST)], LAST[(n - 1) // len(FIRST) % len(LAST)]
    created = END - timedelta(days=crm.randint(1, 60), minutes=crm.randint(0, 1440))
    contact_id = make_id(created, n)
    contacts.append((contact_id, created))
    contact = {"type": "contact", "id": contact_id, "name": f"{first} {last}",
               # The phone of the sessions' conversation 10000 + n - 1, written as people type it.
               "phone": f"(11) 98000-{n - 1:04d}", "origin": crm.choice(["site", "whatsapp", "instagram"]),
               "newContact": n > 30, "hasConversation": n <= 20}
    if crm.random() < 0.6:
        contact["email"] = f"{first.lower().replace('ú', 'u').replace('ã', 'a')}.{last.lower()}{n}@example.com"
    if crm.random() < 0.4:
        contact["customFields"] = {"plan": crm.choice(["Starter", "Pro"])}
    lines.append(contact)
# A person written twice (GET /v3/contacts/duplicates shows the pair; a merge
# makes one): the third contact again, from a web form, with the e-mail in
# capitals and an office phone.
ana = next(line for line in lines if line.get("id") == contacts[2][0])
if "email" in ana:
    lines.append({"type": "contact", "id": make_id(END - timedelta(days=2), CONTACTS + 1), "name": "Ana S.",
                  "phone": "(11) 3000-0003", "origin": "site", "email": ana["email"].upper()})
for n in range(1, 11):
    lines.append({"type": "contactOrganization", "contactId": contacts[n - 1][0], "organizationId": 1,
                  "main": n <= 5})
# A conversation's last session is the latest of the sessions below on it.
for n in range(1, 21):
    conversation = 10000 + n - 1
    on_it = [x for x in sessions if x["conversation"]["id"] == conversation]
    line = {"type": "conversation", "id": conversation, "contactId": contacts[n - 1][0]}
    if on_it:
        last = max(on_it, key=lambda x: x["createdAt"])
        line["lastSession"] = {"id": last["id"], "createdAt": last["createdAt"],
                               "segmentId": last["conversation"]["channelId"]}
    lines.append(line)

# Campaigns were created before their first sessions (the month's start).
CAMPAIGN_IDS = {name: make_id(END - timedelta(days=40, minutes=-n), 200 + n) for n, name in enumerate(CAMPAIGNS, 1)}
lines.append({"type": "campaign", "id": CAMPAIGN_IDS["black-friday"], "name": "Black Friday", "status": "finished", "channelId": "whatsapp-1",
              "leadsCount": 250, "message": "Descontos de até 50% hoje!", "messagesProcessed": 250,
              "resultCounts": {"sent": 250, "received": 241, "read": 198, "answered": 37, "chunksExecuted": 3}})
# Started two days before the file's latest time: `crm load --shift-times`
# moves every time so that the latest is now, so no time here may pass END.
lines.append({"type": "campaign", "id": CAMPAIGN_IDS["renewal-q4"], "name": "Renovação Q4", "status": "paused", "channelId": "whatsapp-1",
              "leadsCount": 120, "message": "Seu plano vence este mês.", "scheduledTo": ts(END - timedelta(days=2)),
              "messagesProcessed": 60, "resultCounts": {"sent": 60, "received": 58, "read": 41, "answered": 9,
                                                         "chunksExecuted": 1}})
lines.append({"type": "campaign", "id": make_id(END - timedelta(days=1), 203), "name": "Boas-vindas", "status": "draft", "channelId": "instagram-1",
              "leadsCount": 40, "message": "Olá! Conheça nossos planos."})

STAGES = ["lead", "qualified", "proposal", "negotiation"]
deals = []
for n in range(1, 25):
    status = crm.choice(["open", "open", "open", "won", "lost"])
    product = crm.choice([1, 2])
    contact_id, contact_created = contacts[crm.randint(0, CONTACTS - 1)]
    created = min(contact_created + timedelta(hours=crm.randint(1, 72)), END)
    deal = {"type": "deal", "id": make_id(created, 100 + n),
            "name": f"{crm.choice(['Plano anual', 'Expansão', 'Renovação'])} {n}",
            "value": [49.0, 199.0][product - 1] * 12, "status": status, "contactId": contact_id,
            "operatorId": crm.choice([7, 8, 9]), "groupId": crm.choice([1, 2]), "pipelineId": "sales",
            "stageId": crm.choice(STAGES), "origin": crm.choice(["site", "whatsapp", "indication"]),
            "tagIds": sorted(crm.sample([tag_ids[0], tag_ids[1], tag_ids[2], tag_ids[4]], crm.randint(0, 2))),
            "products": [{"id": str(product), "quantity": 12}]}
    if status == "lost":
        deal["lostReason"] = [crm.choice(["price", "competitor", "no answer"])]
    lines.append(deal)
    deals.append(deal)

# The sessions name the records above: their tags, their campaign, and a
# deal of their conversation's contact when it has one opened by then (any
# deal opened by then otherwise), won when the deal is.
for i, session in enumerate(sessions):
    session["tags"] = sorted(tag_ids[t - 1] for t in session["tags"])
    if "campaignId" in session:
        session["campaignId"] = str(CAMPAIGN_IDS[session["campaignId"]])
    if "deals" in session:
        n = session["conversation"]["id"] - 10000
        contact = contacts[n][0] if n < 20 else None
        opened = [d for d in deals if ts(datetime.fromtimestamp(
            ((d["id"] >> 12) + EPOCH_MS) / 1000, timezone.utc)) <= session["createdAt"]]
        theirs = [d for d in opened if d["contactId"] == contact] or opened
        if not theirs:
            del session["deals"]
            continue
        deal = theirs[i % len(theirs)]
        session["deals"] = {"ids": [deal["id"]], "won": deal["status"] == "won"}
lines += sessions

with open("examples/demo.jsonl", "w") as out:
    for line in lines:
        out.write(json.dumps(line, separators=(",", ":")) + "\n")
print(f"wrote {len(lines)} lines to examples/demo.jsonl")
