// Fuzz target: a page's WebSocket messages on both channels. The input is text messages, one per
// line. The first goes to /webmcp/register (routes_webmcp.cpp register_page, webmcp_codec.cpp
// parse_register); the rest go to /webmcp/channel/<id> (webmcp_channel.cpp PageSocketLink, which
// applies each parse_page_message to the session's PageTools), while two calls from the AI wait
// for the page's answer ({call1} and {call2} in a message become their ids). Both upgrades are reached through the router, with the session's
// credentials ({regtok} {secret} in a message become the live registration token and secret).
// Every line is also decoded on its own by parse_register and parse_page_message, and read as
// parse_page_message_tree reads it (the scan's reading and the tree's must agree).
//
// Checks: nothing throws out of the decoders or the channel; the register socket answers at most
// once, with registerSuccess (then with the session's real channel path and token) or an error;
// every message the engine sends is one JSON object with a string "type"; the page's declarations
// stay within the limits and tool names stay valid; the waiting calls end (answered, failed or
// timed out) once the channel closes.
#include <boost/asio/detached.hpp>
#include <boost/json.hpp>

#include "adapters/web/webmcp_codec.hpp"
#include "json/read.hpp"
#include "support/world.hpp"

using namespace leuria;
using fuzz::check;
namespace json = boost::json;
namespace asio = boost::asio;

namespace {

std::string type_of(const std::string& text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  check(!ec && v.is_object(), "the engine sent something that is not a JSON object");
  auto* t = v.as_object().if_contains("type");
  check(t && t->is_string(), "the engine sent a message without a type");
  return std::string(t->as_string());
}

http::Response upgrade(fuzz::World& w, std::string target) {
  auto req = fuzz::make_request("GET", std::move(target), {{"Host", "127.0.0.1:5000"}, {"Origin", fuzz::kGoodOrigin}});
  req.websocket = true;
  auto res = fuzz::run(w.ioc, w.handle(req));
  check(res && res->upgrade, "the channel's upgrade was refused");
  return std::move(*res);
}

void register_channel(fuzz::World& w, std::string message) {
  auto res = upgrade(w, "/webmcp/register");
  fuzz::ScriptedSocket ws({std::move(message)});
  check(fuzz::run(w.ioc, res.upgrade(ws)), "register never finished");
  check(ws.written.size() <= 1, "register answered more than once");
  if (ws.written.empty()) return;
  if (type_of(ws.written[0]) != "registerSuccess") return;
  auto& tools = w.good_session->page_tools();
  auto v = json::parse(ws.written[0]).as_object();
  check(v.at("channel") == json::value("/webmcp/channel/" + tools.channel_id()) &&
            v.at("token") == json::value(tools.channel_token()),
        "registerSuccess with another session's channel");
}

struct Calls {
  std::vector<core::PageAnswer> answers;
  bool all_ended = false;
};

// A call from the AI, waiting for the page.
asio::awaitable<void> call(std::shared_ptr<core::PageTools> tools, core::PageCall::Kind kind, std::string name,
                           std::shared_ptr<Calls> calls) {
  calls->answers.push_back(co_await tools->request(kind, std::move(name), R"({"q":1})"));
  calls->all_ended = calls->answers.size() == 2;
}

// The ids of the calls the engine sent, in order, for {call1} and {call2} in the page's answers.
std::string with_call_ids(std::string text, const std::vector<std::string>& written) {
  int n = 0;
  for (auto& m : written) {
    auto v = json::parse(m);
    if (auto* id = v.as_object().if_contains("id"); id && id->is_string())
      fuzz::replace_all(text, "{call" + std::to_string(++n) + "}", std::string(id->as_string()));
  }
  return text;
}

void channel(fuzz::World& w, std::deque<std::string> messages) {
  auto& tools = w.good_session->page_tools();
  auto res = upgrade(w, "/webmcp/channel/" + tools.channel_id() + "?token=" + tools.channel_token());
  fuzz::ScriptedSocket ws(std::move(messages));
  auto calls = std::make_shared<Calls>();
  auto shared = tools.shared_from_this();
  // Once the page is attached: the AI calls a tool and gets a prompt.
  ws.on_first_read = [&] {
    asio::co_spawn(w.ioc, call(shared, core::PageCall::Kind::tool, "search", calls), asio::detached);
    asio::co_spawn(w.ioc, call(shared, core::PageCall::Kind::prompt, "greet", calls), asio::detached);
  };
  ws.transform = [&ws](std::string text) { return with_call_ids(std::move(text), ws.written); };
  check(fuzz::run(w.ioc, res.upgrade(ws)), "the channel never closed");
  check(fuzz::settle(w.ioc, calls->all_ended), "a call from the AI never ended");  // answered, or 50 ms

  for (auto& m : ws.written) type_of(m);
  check(tools.declared_tools().size() <= core::kMaxPageItems && tools.resources().size() <= core::kMaxPageItems &&
            tools.prompts().size() <= core::kMaxPageItems,
        "a declaration over the limit");
  for (auto& t : tools.declared_tools()) check(core::valid_tool_name(t.spec.name), "an invalid tool name declared");
  check(!tools.connected(), "the channel is still attached after it closed");
}

// The scan's reading of a page's message against the tree's: the same message, and for an answer the
// same id, status and result (its JSON the same value, however the page spelled it).
void same_reading(const std::string& text) {
  const web::PageMessage fast = web::parse_page_message(text), tree = web::parse_page_message_tree(text);
  check(fast.index() == tree.index(), "the scan and the tree read a page's message as different messages");
  const auto* f = std::get_if<web::PageResponse>(&fast);
  const auto* t = std::get_if<web::PageResponse>(&tree);
  if (!f) return;
  check(f->id == t->id && f->answer.status == t->answer.status, "the scan and the tree read another id or status");
  if (t->answer.status != core::PageAnswer::Status::answered) return;
  auto fj = jsonio::read(f->answer.json), tj = jsonio::read(t->answer.json);
  check(fj && tj && *fj == *tj, "the scan and the tree read another result");
  check((t->answer.text == t->answer.json) == (f->answer.text == f->answer.json), "a result read as text by one only");
  check(t->answer.text == t->answer.json || f->answer.text == t->answer.text, "a string result read differently");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  fuzz::World w(false);
  auto messages = fuzz::split_lines(w.substitute(input), 256);
  for (auto& m : messages) {
    (void)web::parse_register(m);
    same_reading(m);
  }
  register_channel(w, messages.front());
  messages.pop_front();
  channel(w, std::move(messages));
  return 0;
}
