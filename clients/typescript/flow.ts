// A realistic flow with types generated from docs/openapi.json
// (openapi-typescript) and openapi-fetch, checked by `tsc --strict` and run
// with tsx against a live API by scripts/clients.sh:
//   npx tsx flow.ts <base url> <token>
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/schema";

type Schemas = components["schemas"];

const [base, token] = process.argv.slice(2);
const api = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${token}` } });

/** The body of a 2xx answer, or the failure said plainly. */
function ok<T>(answer: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (answer.data === undefined) {
    throw new Error(`${what}: ${answer.response.status} ${JSON.stringify(answer.error)}`);
  }
  return answer.data;
}

/** Reads again until `done` holds (at most 10 s). */
async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${what}: not done in time`);
}

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(what);
}

const tag: Schemas["TagV3"] = ok(
  await api.POST("/v3/tags", { body: { name: "VIP" }, params: { header: { "Idempotency-Key": crypto.randomUUID() } } }),
  "tag",
);
const contact = ok(await api.POST("/v3/contacts", { body: { name: "Ana", phone: "11 98765-4321" } }), "contact");
check(contact.phone === "+5511987654321", `contact phone ${contact.phone}`);

const deal = ok(
  await api.POST("/v3/deals", {
    body: {
      name: "Annual plan",
      value: 1200,
      status: "open",
      contactId: Number(contact.id),
      operatorId: 7,
      groupId: 1,
      pipelineId: "sales",
      stageId: "lead",
      origin: "site",
      tagIds: [Number(tag.id)],
    },
  }),
  "deal",
);
const won = ok(await api.PATCH("/v3/deals/{id}", { params: { path: { id: deal.id } }, body: { status: "won" } }), "won");
check(won.status === "won" && typeof won.wonLostDate === "string", "the deal is won, with its date");

const listed = ok(
  await api.GET("/v3/deals", {
    params: { query: { roleId: 1, isOwner: true, userId: 7, status: "won", date: "last_3_months" } },
  }),
  "deal list",
);
check(listed.totalCount === 1 && listed.data[0].id === deal.id, "the won deal is listed");

const job = ok(
  await api.POST("/v3/contacts/import", { body: { contacts: [{ name: "Rui", phone: "21 98888-0002" }] } }),
  "import",
);
const imported = await until(
  "import",
  async () => ok(await api.GET("/v3/contacts/import/{id}", { params: { path: { id: job.id } } }), "import job"),
  (j) => j.status === "done",
);
check(imported.created === 1, "one contact imported");

const started = new Date(Date.now() - 3_600_000);
const at = (minutes: number) => new Date(started.getTime() + minutes * 60_000).toISOString();
ok(
  await api.PUT("/v3/reports/sessions/{id}", {
    params: { path: { id: "s-1" } },
    body: {
      createdAt: started.toISOString(),
      conversation: { id: 5, contactPhone: "+5511987654321", channelId: "wa-1", channelType: "whatsapp" },
      trails: [
        { type: "queued", at: at(1), groupId: "support" },
        { type: "assigned", at: at(2), operatorId: "ana", groupId: "support" },
        { type: "finished", at: at(9) },
      ],
    },
  }),
  "session",
);
const report = ok(
  await api.GET("/v3/reports/sessions", { params: { query: { isFinished: true, assigned: ["ana"] } } }),
  "session report",
);
check(report.totalCount === 1, `one finished session, ${report.totalCount}`);

const dashboard = ok(
  await api.POST("/v3/dashboards", {
    body: { name: "Support", layout: [{ i: "volume", x: 0, y: 0, w: 6, h: 4, metric: "sessionsStarted" }] },
  }),
  "dashboard",
);
const snapshot = ok(
  await api.POST("/v3/dashboards/{dashboardId}/snapshots", {
    params: { path: { dashboardId: Number(dashboard.id) } },
    body: { authorId: 1, authorName: "Ana" },
  }),
  "snapshot",
);
const computed = await until(
  "snapshot",
  async () =>
    ok(
      await api.GET("/v3/dashboards/{dashboardId}/snapshots/{id}", {
        params: { path: { dashboardId: Number(dashboard.id), id: snapshot.id } },
      }),
      "snapshot read",
    ),
  (s) => s.status?.state === "done",
);
check(computed.data["volume"]?.value === 1, `one session started: ${JSON.stringify(computed.data)}`);

// Fields the server fills in may be left out: a dashboard without a layout,
// campaign results with one counter, a deal list with a grouping.
ok(await api.POST("/v3/dashboards", { body: { name: "Empty" } }), "dashboard without layout");
const campaign = ok(
  await api.POST("/v3/campaigns", {
    body: { name: "Launch", channelId: "wa-1", leadsCount: 10, message: "Hi", scheduledTo: "2030-01-01T12:00:00Z" },
  }),
  "campaign",
);
for (const action of ["schedule", "start"] as const) {
  ok(
    await api.POST("/v3/campaigns/{id}/{action}", { params: { path: { id: Number(campaign.id), action } } }),
    action,
  );
}
const counted = ok(
  await api.POST("/v3/campaigns/{id}/results", {
    params: { path: { id: Number(campaign.id) } },
    body: { reportId: "r-1", sent: 10 },
  }),
  "campaign results",
);
check(counted.resultCounts?.sent === 10, "results counted");
const grouped = ok(
  await api.GET("/v3/deals", { params: { query: { roleId: 1, isOwner: true, userId: 7, filters: { status: "won" } } } }),
  "grouped deal list",
);
check(grouped.totalCount === 1, "the grouped filter applies");

const issued = ok(await api.POST("/v3/api-tokens", { body: { name: "reader" } }), "token");
check(issued.token.startsWith("crm_"), "a token");

console.log("the TypeScript flow passed");
