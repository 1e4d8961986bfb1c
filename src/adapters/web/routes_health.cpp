// GET /health: who answers, which AI a caller would get, and the embedding model.
#include "adapters/web/codec.hpp"
#include "adapters/web/routes.hpp"

namespace leuria::web {

http::Response not_allowed_for_caller() { return error_response(403, "not allowed for this caller"); }

boost::asio::awaitable<http::Response> health(WebContext& ctx, const http::Request& req, const core::Caller& caller) {
  HealthView h;
  h.version = ctx.info.version;
  h.approvals_in_app = ctx.info.approvals_in_app;
  core::AiChoice ai = ctx.info.default_ai;
  bool embeds = caller.kind == core::CallerKind::local;
  if (caller.kind == core::CallerKind::web) {
    const bool paired = ctx.grants.token_valid(caller.origin, req.bearer());
    h.paired = paired;
    embeds = paired;
    // A connected page gets its own site's AI; everyone else the visitor's default.
    const core::Grant* g = paired ? ctx.grants.find(caller.origin) : nullptr;
    if (g && g->agent) ai = core::AiChoice{*g->agent, g->model};
  }
  h.agent = core::ai_display_name(ai, ctx.info.agent_names);
  // Only those who may embed learn which model they would get.
  if (embeds) {
    // Clients give /health 1.5 s; a local service slow to list its models mustn't make the
    // engine look absent.
    auto model = co_await ctx.embedder.current(std::chrono::milliseconds(800));
    if (model) h.embed = model->model;
  }
  co_return health_response(h);
}

}  // namespace leuria::web
