//! The campaigns group: the spec's list (`GET /v3/campaigns`) and the
//! extensions that draft, edit, move and credit campaigns.

use axum::Json;
use shared::auth::Resource;
use shared::deploy::{BATCH, READ, WRITE};
use shared::domain::campaigns::{
    self, Action, Campaign, CampaignPatch, CampaignQuery, ResultsReport,
};
use shared::http::{
    Body, Create, Created, Ctx, Group, InPath, Params, PathParam, Reply, Saved, created,
};
use shared::keys::CampaignId;
use shared::page::ListPage;

pub fn group() -> Group {
    Group::new("campaigns")
        .deployed(
            "/v3/campaigns (the list, drafts, lifecycle, results)",
            |f| f.actions(&[READ, BATCH, WRITE]),
        )
        .scoped(Resource::Campaigns)
        .get("/v3/campaigns", list)
        .summary("List campaigns (name, channelId, status)")
        .post("/v3/campaigns", create)
        .reads_back("/v3/campaigns/{id}")
        .summary("Draft a campaign")
        .extension()
        .get("/v3/campaigns/{id}", get)
        .summary("Read a campaign")
        .extension()
        .patch("/v3/campaigns/{id}", update)
        .summary("Edit a draft or scheduled campaign")
        .extension()
        .post("/v3/campaigns/{id}/results", results)
        .reads_back("/v3/campaigns/{id}")
        .summary("Report campaign results (counted once per reportId)")
        .extension()
        .post("/v3/campaigns/{id}/{action}", transition)
        .reads_back("/v3/campaigns/{id}")
        .summary("Move a campaign: schedule, start, pause, resume, cancel, finish, fail")
        .extension()
}

async fn list(cx: Ctx, Params(q): Params<CampaignQuery>) -> Reply<ListPage<Campaign>> {
    Ok(Json(campaigns::list(cx.store(), &cx.caller, q).await?))
}

/// A draft (201).
async fn create(
    cx: Ctx,
    Body(Create(input)): Body<Create<CampaignPatch>>,
) -> Result<Created<Campaign>, shared::ApiError> {
    Ok(created(
        campaigns::create(cx.store(), &cx.caller, input).await?,
    ))
}

async fn get(cx: Ctx, InPath(id): InPath<CampaignId>) -> Reply<Campaign> {
    Ok(Json(campaigns::get(cx.store(), &cx.caller, id).await?))
}

/// While draft or scheduled; 409 otherwise.
async fn update(
    cx: Ctx,
    InPath(id): InPath<CampaignId>,
    Body(input): Body<CampaignPatch>,
) -> Reply<Campaign> {
    Ok(Json(
        campaigns::update(cx.store(), &cx.caller, id, input).await?,
    ))
}

/// `schedule`, `start`, `pause`, `resume`, `cancel`, `finish`, `fail` (201).
async fn transition(
    cx: Ctx,
    InPath(id): InPath<CampaignId>,
    InPath(action): InPath<CampaignAction>,
) -> Result<Created<Campaign>, shared::ApiError> {
    Ok(created(
        campaigns::transition(cx.store(), &cx.caller, id, action).await?,
    ))
}

/// 201 when the report was counted, 200 when it had been already.
async fn results(
    cx: Ctx,
    InPath(id): InPath<CampaignId>,
    Body(report): Body<ResultsReport>,
) -> Result<Saved<Campaign>, shared::ApiError> {
    let (campaign, counted) = campaigns::report(cx.store(), &cx.caller, id, report).await?;
    Ok(Saved {
        body: campaign,
        created: counted,
    })
}

/// `{action}`: one of the lifecycle's moves; any other is 404.
struct CampaignAction;

impl PathParam for CampaignAction {
    const NAME: &'static str = "action";
    type Value = Action;
    fn parse(raw: &str) -> Result<Action, shared::ApiError> {
        Action::parse(raw)
    }
    fn schema() -> serde_json::Value {
        serde_json::json!({
            "type": "string",
            "enum": ["schedule", "start", "pause", "resume", "cancel", "finish", "fail"],
        })
    }
}
