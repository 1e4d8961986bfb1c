// Fuzz target: the session stream's SSE encoder (adapters/web/session_codec.cpp encode_sse) with
// an AI's arbitrary text (CR, LF, CRLF, "event:" and "data:" lines, NUL, bad UTF-8) in every field
// an event carries, parsed back by a conforming parser (support/sse.hpp, the WHATWG rules).
// Input: the event kind, then the fields, as FuzzedDataProvider reads them.
//
// Checks: the parser sees exactly one event, of the kind encoded, whose data is the encoder's one
// line; when the AI's text is valid UTF-8 that data is JSON giving back exactly the text (or the
// fields) that went in. Bad UTF-8 can't be given back as JSON, but still frames as one event.
#include <fuzzer/FuzzedDataProvider.h>

#include <boost/json.hpp>

#include "adapters/web/session_codec.hpp"
#include "support/sse.hpp"
#include "support/world.hpp"

using namespace leuria;
using fuzz::check;
namespace json = boost::json;
using K = core::EventKind;

namespace {

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = c;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c >> 5) == 0x6) n = 1, cp = c & 0x1F;
    else if ((c >> 4) == 0xE) n = 2, cp = c & 0x0F;
    else if ((c >> 3) == 0x1E) n = 3, cp = c & 0x07;
    else return false;
    if (i + n >= s.size()) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

constexpr const char* kNames[] = {"webmcp_ready", "ready", "turn_start", "chunk", "thought", "tool_call",
                                  "permission", "log", "turn_completed", "completed", "cancelled", "failed"};

std::optional<std::string> maybe(FuzzedDataProvider& in) {
  if (!in.ConsumeBool()) return std::nullopt;
  return in.ConsumeRandomLengthString(256);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzz::World w(false);  // only for the session encode_sse names in webmcp_ready
  FuzzedDataProvider in(data, size);
  core::Event e;
  const int kind = in.ConsumeIntegralInRange<int>(0, 11);
  e.kind = static_cast<K>(kind);
  e.seq = in.ConsumeIntegral<std::uint64_t>();
  std::vector<std::string> texts;  // every string that went in
  core::EventDetails d;             // a tool call's, a permission's or a turn's, set before encoding
  switch (e.kind) {
    case K::tool_call:
      d.tool_call.id = in.ConsumeRandomLengthString(256);
      d.tool_call.title = maybe(in);
      d.tool_call.kind = maybe(in);
      d.tool_call.status = maybe(in);
      d.tool_call.tool_name = in.ConsumeRemainingBytesAsString();
      texts = {d.tool_call.id, d.tool_call.title.value_or(""), d.tool_call.kind.value_or(""),
               d.tool_call.status.value_or(""), *d.tool_call.tool_name};
      break;
    case K::permission:
      d.permission.allow = in.ConsumeBool();
      d.permission.tool_name = in.ConsumeRemainingBytesAsString();
      texts = {d.permission.tool_name};
      break;
    case K::turn_completed:
      d.turn.duration_ms = in.ConsumeIntegral<std::int64_t>();
      d.turn.text = in.ConsumeRemainingBytesAsString();
      texts = {d.turn.text};
      break;
    default:
      e.text = in.ConsumeRemainingBytesAsString();
      texts = {e.text};
  }
  if (e.kind == K::tool_call || e.kind == K::permission || e.kind == K::turn_completed)
    e.details = std::make_shared<const core::EventDetails>(std::move(d));

  const std::string out = web::encode_sse(e, *w.good_session, fuzz::kPort);
  const auto events = fuzz::parse_sse(out);
  check(events.size() == 1, "the AI's text made other than exactly one event");
  check(events[0].type == kNames[kind], "the event's type changed");
  const std::string line = "data: " + events[0].data + "\n";
  check(out.find(line) != std::string::npos, "the event's data is not the encoder's data line");

  bool all_utf8 = true;
  for (auto& t : texts) all_utf8 = all_utf8 && valid_utf8(t);
  boost::system::error_code ec;
  const json::value v = json::parse(events[0].data, ec);
  if (!all_utf8) return 0;
  check(!ec, "the data is not JSON");
  switch (e.kind) {
    case K::chunk:
    case K::thought:
    case K::log:
    case K::failed: check(v == json::value(e.text), "the text did not come back"); break;
    case K::tool_call: {
      const auto& o = v.as_object();
      const auto& call = e.tool_call();
      check(o.at("toolCallId") == json::value(call.id), "toolCallId changed");
      check(o.at("toolName") == json::value(*call.tool_name), "toolName changed");
      if (call.title) check(o.at("title") == json::value(*call.title), "title changed");
      if (call.kind) check(o.at("kind") == json::value(*call.kind), "kind changed");
      if (call.status) check(o.at("status") == json::value(*call.status), "status changed");
      break;
    }
    case K::permission:
      check(v.as_object().at("toolName") == json::value(e.permission().tool_name) &&
                v.as_object().at("allow") == json::value(e.permission().allow),
            "the permission changed");
      break;
    case K::turn_completed:
      check(v.as_object().at("text") == json::value(e.turn().text) &&
                v.as_object().at("durationMs") == json::value(e.turn().duration_ms),
            "the turn's text changed");
      break;
    default: break;
  }
  return 0;
}
