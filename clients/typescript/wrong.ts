// Programs that must not compile against the generated types: each line
// under `@ts-expect-error` is an error, or tsc fails on the unused directive.
import createClient from "openapi-fetch";
import type { paths } from "./generated/schema";

const api = createClient<paths>({ baseUrl: "http://127.0.0.1" });

export async function wrong(): Promise<void> {
  // The deal list without the spec's required roleId, isOwner and userId.
  // @ts-expect-error
  await api.GET("/v3/deals", { params: { query: { status: "won" } } });

  await api.POST("/v3/dashboards", {
    // A widget's metric outside the catalog.
    // @ts-expect-error
    body: { name: "x", layout: [{ i: "a", x: 0, y: 0, w: 1, h: 1, metric: "revenue" }] },
  });

  await api.GET("/v3/deals", {
    // A time given as a number.
    // @ts-expect-error
    params: { query: { roleId: 1, isOwner: true, userId: 7, createdAtFrom: 1700000000 } },
  });

  // A deal status outside open, won and lost.
  // @ts-expect-error
  await api.PATCH("/v3/deals/{id}", { params: { path: { id: "1" } }, body: { status: "pending" } });
}
