#include "adapters/llm/llm_backend.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <optional>

#include "adapters/llm/codec.hpp"
#include "core/ascii.hpp"
#include "core/permission.hpp"
#include "core/plain_text.hpp"

namespace leuria::llm {

namespace asio = boost::asio;

namespace {
// A server that never ends a line, or never ends its answer, must not grow our memory.
constexpr std::size_t kMaxLine = 16 * 1024 * 1024;
constexpr std::size_t kMaxAnswer = 32 * 1024 * 1024;  // text, reasoning and tool arguments of one step
// A /models answer: hosted catalogues (OpenRouter's) run to hundreds of KB, past what http::fetch
// keeps of a body it isn't handed piece by piece.
constexpr std::size_t kMaxModelList = 8 * 1024 * 1024;

// What a 2xx body that wasn't a completion stream looked like, in words (never its bytes).
std::string what_it_sent(std::string_view head) {
  auto start = head.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return "nothing";
  if (head[start] == '<') return "a web page";
  if (head[start] == '{' || head[start] == '[') return "JSON, not server-sent events";
  return "text in another format";
}
}  // namespace

// One request to the model server and what its answer gave. What every read touches comes first: with
// 1,000 streams the step is cold at each read (bench scenario 7), and so are the lines it spans.
struct LlmBackend::Step {
  bool done = false;          // the [DONE] line came
  bool any_chunk = false;     // a `data:` line with a JSON chunk came
  bool finished = false;      // a chunk had a finish_reason
  bool stop = false;          // stream_error or too_big is set: no more reads
  bool error_event = false;   // within an `event: error` (parse_event_line)
  std::size_t bytes = 0;      // what the answer has added to our memory so far
  std::string line_buffer;    // the line not yet ended
  std::size_t scanned = 0;    // how much of line_buffer is known to hold no '\n' (a long line isn't searched again)
  std::string text;
  jsonio::StringSlot content_slot;  // the last plain text chunk, but for its text (parse_stream_line)
  std::string head;           // the first bytes of the body, to say what it was when it wasn't a stream
  std::optional<std::string> stream_error;  // the server said so in the stream
  std::optional<std::string> too_big;       // why the answer was cut off
  std::map<int, ToolCall> calls;  // by index; pieces without one get the next free key (call_for)
  int last_call = -1;         // the key of the call the last piece went to
  unsigned status = 0;        // the answer's HTTP status
};

namespace {
// An answer that can mean "not with images": a malformed request, one too large, a type not taken, or a
// server failure that names images (Ollama's "missing data required for image input"). Not
// authentication, a missing model or address, or rate limits.
bool may_refuse_images(unsigned status, std::string_view error) {
  if (status == 400 || status == 413 || status == 415 || status == 422) return true;
  if (status < 500) return false;
  const std::string lower = core::ascii_lower(error);
  return lower.find("image") != std::string::npos || lower.find("vision") != std::string::npos;
}

// The call a tool-call piece belongs to. A piece with an index goes to that call. One without (Gemini's
// OpenAI-compatible endpoint sends none, each call whole in one piece) starts a call when it carries
// an id other than the last call's, and otherwise continues the last call: read as index 0, two
// parallel calls became one, their names and arguments run together.
ToolCall* call_for(std::map<int, ToolCall>& calls, int& last, const Delta::ToolCallPart& part) {
  int key = part.index;
  if (key < 0) {
    auto it = calls.find(last);
    const bool new_call = it == calls.end() || (part.id && !it->second.id.empty() && *part.id != it->second.id);
    if (!new_call) return &it->second;
    key = calls.empty() ? 0 : calls.rbegin()->first + 1;
    if (key >= kMaxToolCalls) return nullptr;  // garbage, not a plan (as an index past it is)
  }
  last = key;
  return &calls[key];
}

// Clears a member when the scope ends, however it ends (an exception thrown from a read included).
template <class T>
struct ResetOnExit {
  T& slot;
  ~ResetOnExit() { slot.reset(); }
};
}  // namespace

LlmBackend::LlmBackend(asio::any_io_executor ex, core::ProviderDef provider, std::optional<std::string> model,
                       core::BackendSink& sink, std::shared_ptr<core::ToolRegistry> tools,
                       std::chrono::milliseconds stall, std::shared_ptr<RecentServers> recent,
                       std::shared_ptr<http::ConnectionPool> pool)
    : sink_(sink), ex_(std::move(ex)), provider_(std::move(provider)), model_(std::move(model)),
      tools_(std::move(tools)), stall_(stall), recent_(std::move(recent)), pool_(std::move(pool)) {}

std::optional<std::string> RecentServers::fresh(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end() || std::chrono::steady_clock::now() - it->second.at > fresh_for_) return std::nullopt;
  return it->second.first_model;
}

void RecentServers::reached(const std::string& key, std::string first_model) {
  entries_[key] = Entry{std::chrono::steady_clock::now(), std::move(first_model)};
}

std::string LlmBackend::server_key() const { return provider_.base_url + '\n' + provider_.api_key.value_or(""); }

std::vector<http::Header> LlmBackend::auth_headers() const {
  std::vector<http::Header> h{{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
  if (provider_.api_key && !provider_.api_key->empty()) h.push_back({"Authorization", "Bearer " + *provider_.api_key});
  return h;
}

std::string LlmBackend::display() const { return provider_.name.empty() ? provider_.id : provider_.name; }

bool LlmBackend::accepts_images() const { return images_ok_; }

void LlmBackend::drop_images() {
  images_ok_ = false;
  images_to_notes(messages_, image_notes_);
  image_notes_.clear();
}

asio::awaitable<boost::system::result<void, std::string>> LlmBackend::start(core::BackendConfig config) {
  auto self = shared_from_this();
  config_ = std::move(config);
  if (config_.system_prompt) messages_.push_back(system_message(*config_.system_prompt));
  // Reach the server once: a stopped Ollama should fail the start, not the first turn. Unless it
  // answered another session's start moments ago (and, without a model named, said which it offers).
  if (recent_) {
    auto known = recent_->fresh(server_key());
    if (known && (model_ || !known->empty())) {
      if (!model_) model_ = *known;
      co_return boost::system::result<void, std::string>{};
    }
  }
  http::ClientRequest req;
  req.url = provider_.base_url + "/models";
  req.headers = auth_headers();
  req.read_timeout = std::min(std::chrono::seconds(30), std::chrono::ceil<std::chrono::seconds>(stall_));
  req.pool = pool_;
  auto res = co_await http::fetch_whole(ex_, req, kMaxModelList);
  if (res.status == 0)
    co_return "Could not reach " + display() + " at " + provider_.base_url + ". Is it running? (" + res.error + ")";
  if (res.status == 401 || res.status == 403)
    co_return display() + " refused the API key (HTTP " + std::to_string(res.status) + ").";
  const bool listed = res.status / 100 == 2;
  std::vector<std::string> models;
  if (listed) models = parse_models(res.body);
  if (!model_) {
    // Without a model named, the list is needed whole: say why it isn't there, not that it is empty.
    if (!listed)
      co_return display() + " answered HTTP " + std::to_string(res.status) + " for its list of models at " +
                provider_.base_url + "/models: " + error_message(res.body);
    if (res.too_large)
      co_return display() + "'s list of models is larger than 8 MB, so no model could be chosen from it: name one.";
    if (res.failure == http::Failure::broke_off)
      co_return display() + "'s list of models broke off (" + res.error + ").";
    if (models.empty()) co_return display() + " has no model available. Load or pull one first.";
    model_ = models.front();
  }
  if (recent_ && res.status / 100 == 2) recent_->reached(server_key(), models.empty() ? std::string() : models.front());
  co_return boost::system::result<void, std::string>{};
}

asio::awaitable<std::optional<std::string>> LlmBackend::stream_step(bool forbid_tools, Step& step) {
  http::ClientRequest req;
  req.method = "POST";
  req.url = provider_.base_url + "/chat/completions";
  req.headers = auth_headers();
  req.body = request_body(*model_, messages_, tools_->tools(), forbid_tools);
  req.read_timeout = std::chrono::ceil<std::chrono::seconds>(stall_);
  req.pool = pool_;
  // A full reader pauses the model: its tokens wait in the kernel's buffers, not in ours. Never after
  // shutdown: the session may be gone (a read that completed just before the abort comes back here).
  req.before_read = [this]() -> asio::awaitable<void> {
    if (shut_down_ || cancelled_) co_return;
    co_await sink_.room();
  };
  req.must_wait = [this] { return !shut_down_ && !cancelled_ && sink_.must_wait(); };
  abort_ = std::make_shared<http::Abort>();
  // Not past this request: a cancel after it must not reach its Abort (http::fetch clears its own
  // closer too), even when the request ended with an exception.
  ResetOnExit<std::shared_ptr<http::Abort>> abort_done{abort_};
  // Two pointers, which std::function keeps inline, not in a closure of its own on the heap: one
  // cold line fewer per read with 1,000 streams (bench scenario 7). What the reads find goes in `step`.
  auto on_data = [this, &step](std::string_view data) {
    // The chunks of one read reach the page in one write (never a sink call after shutdown).
    std::optional<core::BackendSink::Batch> batch;
    if (!shut_down_) batch.emplace(sink_);
    if (step.head.size() < 64) step.head.append(data.substr(0, 64 - step.head.size()));
    step.line_buffer.append(data);
    std::size_t start = 0;
    for (auto nl = step.line_buffer.find('\n', step.scanned); nl != std::string::npos;
         nl = step.line_buffer.find('\n', start)) {
      std::string_view line(step.line_buffer.data() + start, nl - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      start = nl + 1;
      // `data:` lines (nearly all) go the chunk's way; the others, and an error event's, may end the stream.
      Line parsed = !step.error_event && line.starts_with("data:") ? parse_stream_line(line, &step.content_slot)
                                                                    : parse_event_line(line, step.error_event);
      if (parsed.done) step.done = true;
      if (!parsed.delta || shut_down_ || cancelled_) continue;
      Delta& d = *parsed.delta;
      step.any_chunk = true;
      step.finished = step.finished || d.finish_reason.has_value();
      step.bytes += d.content.size() + d.reasoning.size();
      for (auto& part : d.tool_calls) step.bytes += part.arguments.size() + part.name.value_or("").size();
      if (step.bytes > kMaxAnswer) {
        step.too_big = display() + "'s answer grew past 32 MB, so it was cut off.";
        step.stop = true;
      }
      if (d.error) {
        step.stream_error = *d.error;
        step.stop = true;
      }
      if (!d.reasoning.empty()) sink_.on_thought(std::move(d.reasoning));
      if (!d.content.empty()) {
        step.text += d.content;
        sink_.on_chunk(std::move(d.content));  // the line's delta is done with once it is told
      }
      for (auto& part : d.tool_calls) {
        ToolCall* call = call_for(step.calls, step.last_call, part);
        if (!call) continue;
        if (part.id) call->id = *part.id;
        if (part.name) call->name += *part.name;
        call->arguments += part.arguments;
      }
    }
    step.line_buffer.erase(0, start);
    step.scanned = step.line_buffer.size();  // what is left holds no line's end
    if (step.line_buffer.size() >= kMaxLine) {
      step.too_big = display() + " sent a line longer than 16 MB, so it was cut off.";
      step.stop = true;
    }
    return !step.done && !step.stop && !cancelled_;
  };
  auto res = co_await http::fetch(ex_, std::move(req), on_data, abort_);
  step.status = res.status;
  if (cancelled_ || shut_down_) co_return std::nullopt;
  if (step.stream_error) co_return display() + " reported an error: " + one_line(*step.stream_error);
  if (step.too_big) co_return *step.too_big;
  if (res.failure == http::Failure::no_answer)  // connected, then silence or a hang-up
    co_return display() + " at " + provider_.base_url + " did not answer (" + res.error + ")";
  if (res.status == 0) co_return "Could not reach " + display() + " at " + provider_.base_url + " (" + res.error + ")";
  if (res.status / 100 != 2)
    co_return display() + " answered HTTP " + std::to_string(res.status) + ": " + error_message(res.body);
  if (res.failure == http::Failure::broke_off) co_return display() + "'s answer broke off: " + res.error;
  // A whole body that never said it was finished ([DONE] or a finish_reason) is not an answer: an
  // HTML page sent with 200, another protocol's lines, or a stream cut at a clean boundary.
  if (!step.done && !step.finished) {
    if (step.any_chunk) co_return display() + "'s answer ended before it was finished.";
    co_return display() + " did not answer with a stream of completions (it sent " + what_it_sent(step.head) +
              "). Is " + provider_.base_url + " an OpenAI-compatible address?";
  }
  co_return std::nullopt;
}

asio::awaitable<core::TurnOutcome> LlmBackend::prompt(std::vector<core::PromptBlock> blocks) {
  auto self = shared_from_this();
  cancelled_ = false;
  // A turn that doesn't finish leaves no trace in the conversation: a dangling tool call without
  // its result would make every later request invalid.
  const std::size_t mark = messages_.size();
  const std::size_t notes_mark = image_notes_.size();
  // The conversation as it was before its images became notes, until a request with the notes succeeds:
  // a refusal for another reason (a bad tool schema, a context too long) fails with notes too, and the
  // images come back for the next turn.
  std::optional<boost::json::array> with_images;
  std::vector<std::string> notes_before;
  auto abandon = [&](core::TurnOutcome outcome) {
    if (with_images) {
      messages_ = std::move(*with_images);
      image_notes_ = std::move(notes_before);
      images_ok_ = true;
    }
    messages_.resize(mark);
    if (image_notes_.size() > notes_mark) image_notes_.resize(notes_mark);  // this turn's images went with its message
    return outcome;
  };
  messages_.push_back(user_message(blocks));
  for (const auto& b : blocks)
    if (b.type == core::PromptBlock::Type::image) image_notes_.push_back(b.text);
  const int steps = std::max(1, config_.max_turns);
  for (int i = 1; i <= steps; ++i) {
    Step step;
    // The last step may only answer in words, so a turn always ends with text.
    auto error = co_await stream_step(i == steps, step);
    if (cancelled_ || shut_down_) co_return abandon({core::TurnOutcome::End::cancelled, {}});
    if (error && !with_images && !step.any_chunk && !image_notes_.empty() && may_refuse_images(step.status, *error)) {
      // The same step again with the images' notes: the model may not read images at all.
      spdlog::info("event=llm.images_refused session={} provider={} status={}", config_.session_id, provider_.id,
                   step.status);
      with_images = messages_;
      notes_before = image_notes_;
      drop_images();
      --i;
      continue;
    }
    if (error) {
      if (recent_) recent_->forget(server_key());
      co_return abandon({core::TurnOutcome::End::failed, *error});
    }
    with_images.reset();  // the notes went through: the model doesn't read images

    std::vector<ToolCall> calls;
    for (auto& [index, call] : step.calls) {
      if (call.id.empty()) call.id = "call_" + std::to_string(i) + "_" + std::to_string(index);
      calls.push_back(call);
    }
    if (i == steps && !calls.empty()) {
      // The last step asked for words only (tool_choice "none"), and a server may not honour it: its
      // calls are not run (the page's tools are not called past the turn's limit), and the turn ends
      // with its text, or, for the visitor, a note when it has none. The conversation keeps the model's
      // text alone (not the note, which the model didn't write), since a call without its result would
      // make every later request invalid.
      spdlog::info("event=llm.last_step_calls_dropped session={} provider={} calls={}", config_.session_id,
                   provider_.id, calls.size());
      calls.clear();
      if (step.text.empty() && !shut_down_)
        sink_.on_chunk("(The model asked for a tool after its last step, so it stopped here.)");
    }
    messages_.push_back(assistant_message(step.text, calls));
    if (calls.empty()) co_return core::TurnOutcome{};

    for (auto& call : calls) {
      const std::string tool_name = std::string(core::kPageToolPrefix) + call.name;
      sink_.on_tool_call({call.id, call.name, "other", "in_progress", tool_name});
      // A named argument, set by an if rather than ?: (GCC 12 mishandles a class-type conditional's
      // temporaries inside coroutines).
      std::string arguments = call.arguments;
      if (arguments.empty()) arguments = "{}";
      auto result = co_await tools_->call(call.name, std::move(arguments));
      if (cancelled_ || shut_down_) co_return abandon({core::TurnOutcome::End::cancelled, {}});
      sink_.on_tool_call({call.id, call.name, "other", result.is_error ? "failed" : "completed", tool_name});
      messages_.push_back(tool_message(call.id, result.is_error ? "Error: " + result.text : result.text));
    }
  }
  co_return core::TurnOutcome{};
}

void LlmBackend::cancel_turn() {
  cancelled_ = true;
  if (abort_) abort_->abort();
  tools_->cancel_calls();  // a page tool call the turn waits on ends now
}

void LlmBackend::shutdown() {
  shut_down_ = true;
  if (abort_) abort_->abort();
}

}  // namespace leuria::llm
