#include "adapters/web/codec.hpp"
#include "adapters/web/routes.hpp"

namespace leuria::web {

http::Response not_allowed_for_caller() { return error_response(403, "not allowed for this caller"); }

http::Response health(WebContext& ctx, const http::Request& req, const core::Caller& caller) {
  HealthView h;
  h.version = ctx.info.version;
  h.approvals_in_app = ctx.info.approvals_in_app;
  core::AiChoice ai = ctx.info.default_ai;
  if (caller.kind == core::CallerKind::web) {
    const bool paired = ctx.grants.token_valid(caller.origin, req.bearer());
    h.paired = paired;
    // A connected page gets its own site's AI; everyone else the visitor's default.
    if (const core::Grant* g = paired ? ctx.grants.find(caller.origin) : nullptr; g && g->agent)
      ai = core::AiChoice{*g->agent, g->model};
  }
  h.agent = core::ai_display_name(ai, ctx.info.agent_names);
  return json_response(200, encode_health(h));
}

}  // namespace leuria::web
