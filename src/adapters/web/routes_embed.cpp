// POST /embed: vectors for a page's texts, from a local embedding model only.
#include <spdlog/spdlog.h>

#include "adapters/web/codec.hpp"
#include "adapters/web/routes.hpp"

namespace leuria::web {

namespace {

std::string_view caller_name(const core::Caller& c) {
  if (c.kind == core::CallerKind::web) return c.origin;
  return "local";
}

}  // namespace

boost::asio::awaitable<http::Response> embed(WebContext& ctx, const http::Request& req, const core::Caller& caller) {
  auto body = parse_body(req);
  if (!body) co_return body.error();
  auto request = parse_embed(*body);
  if (!request) co_return request.error();
  const std::size_t count = request->texts.size();
  auto result = co_await ctx.embedder.embed(std::move(request->texts), request->kind);
  if (!result) {
    const auto& failure = result.error();
    if (failure.kind == core::EmbedFailure::Kind::no_embedder)
      co_return error_response(503, failure.message, "no_embedder");
    co_return error_response(502, failure.message);
  }
  spdlog::debug("event=embed.done origin={} texts={} model={}", caller_name(caller), count, result->model);
  co_return json_response(200, encode_embedding(*result));
}

}  // namespace leuria::web
