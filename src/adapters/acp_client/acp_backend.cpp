#include "adapters/acp_client/acp_backend.hpp"

#include <cerrno>
#include <cstdlib>
#include <system_error>
#include <utility>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include <boost/json.hpp>

#include "adapters/acp_client/codec.hpp"
#include "core/plain_text.hpp"

namespace leuria::acp_client {

namespace asio = boost::asio;
namespace json = boost::json;

std::vector<std::string> agent_environment(char** env) {
  std::vector<std::string> out;
  for (char** e = env; e && *e; ++e) {
    std::string_view kv(*e);
    if (kv.starts_with("LEURIA_") || kv.starts_with("CLAUDECODE=")) continue;
    out.emplace_back(kv);
  }
  return out;
}

AcpBackend::AcpBackend(asio::any_io_executor ex, core::AgentDef agent, std::optional<std::string> model,
                       AcpOptions options, core::BackendSink& sink, std::shared_ptr<core::ToolRegistry> tools)
    : ex_(std::move(ex)), agent_(std::move(agent)), model_(std::move(model)), options_(std::move(options)),
      sink_(sink), tools_(std::move(tools)), cancel_timer_(ex_) {}

AcpBackend::~AcpBackend() {
  if (child_ && !child_->exited()) child_->kill_group();
  remove_folder();
}

void AcpBackend::remove_folder() {
  if (folder_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(folder_, ec);
  folder_.clear();
}

std::string AcpBackend::describe(const rpc::RpcError& e) const {
  if (e.code == rpc::kConnectionClosed) return agent_.name + " stopped before it answered";
  return agent_.name + " refused: " + e.message;
}

asio::awaitable<boost::system::result<void, std::string>> AcpBackend::start(core::BackendConfig config) {
  auto self = shared_from_this();
  config_ = std::move(config);

  // A fresh, empty, private folder: the agent's whole world. Made by us or not used: a folder of that
  // name already there (another user's, in a shared /tmp, perhaps holding an agent's settings, or a
  // symlink) gets a new name beside it from mkdtemp instead.
  folder_ = options_.temp_root / ("leuria-" + config_.session_id);
  if (::mkdir(folder_.c_str(), 0700) != 0) {
    const int err = errno;
    std::string name = folder_.string() + "-XXXXXX";
    if (err != EEXIST || !::mkdtemp(name.data())) {
      folder_.clear();
      co_return "Cannot create a folder for the AI: " + std::generic_category().message(err == EEXIST ? errno : err);
    }
    folder_ = name;
  }
  ::chmod(folder_.c_str(), 0700);  // exactly owner-only, whatever the umask took away

  transport::SpawnSpec spec;
  spec.program = agent_.command;
  spec.args = agent_.args;
  spec.env = options_.base_env;
  // Gemini CLI connects MCP servers only in a trusted folder; ours is new, empty and its own.
  spec.env.push_back("GEMINI_CLI_TRUST_WORKSPACE=true");
  for (auto& [k, v] : agent_.env) {
    std::erase_if(spec.env, [&](const std::string& e) { return e.starts_with(k + "="); });
    spec.env.push_back(k + "=" + v);
  }
  spec.cwd = folder_.string();

  std::weak_ptr<AcpBackend> weak = self;
  transport::ChildProcess::Handlers h;
  h.on_stdout_line = [weak](std::string_view line) {
    auto b = weak.lock();
    if (!b || !b->rpc_) return;
    // A text chunk, the line an agent writes per token, is read without a tree; every other line
    // (and one that isn't JSON) goes through the connection. Nothing after the connection closed.
    if (b->rpc_->closed()) return;
    if (!b->batch_open_ && !b->shut_down_) {  // the read's lines go on as one piece (after_stdout_lines)
      b->sink_.begin_batch();
      b->batch_open_ = true;
    }
    if (auto u = scan_text_update(line, &b->text_slot_)) {
      b->on_update(std::move(*u));
      return;
    }
    b->rpc_->receive(line);
  };
  h.after_stdout_lines = [weak] {
    auto b = weak.lock();
    if (!b || !std::exchange(b->batch_open_, false)) return;
    if (!b->shut_down_) b->sink_.end_batch();  // after shutdown the session may be gone
  };
  // A full reader pauses the agent: its output waits in the pipe, and then its writes block.
  h.before_stdout_read = [weak]() -> asio::awaitable<void> {
    auto b = weak.lock();
    if (!b || b->shut_down_) co_return;
    auto room = b->sink_.room();
    b.reset();  // the wait doesn't keep the backend alive
    co_await std::move(room);
  };
  h.stdout_must_wait = [weak] {
    auto b = weak.lock();
    return b && !b->shut_down_ && b->sink_.must_wait();
  };
  h.on_stderr_line = [weak](std::string_view line) {
    if (auto b = weak.lock(); b && !b->shut_down_) b->sink_.on_log(core::valid_utf8(line, 4096));
  };
  h.on_exit = [weak](int code) {
    if (auto b = weak.lock()) b->on_exit(code);
  };
  h.on_fault = [weak](std::string what) {
    if (auto b = weak.lock()) b->fail(b->agent_.name + " sent " + what + ", so it was stopped.");
  };
  // Alive but deaf or mute: nothing more can pass, and a turn would wait for an answer forever.
  h.on_pipe_closed = [weak](std::string which) {
    if (auto b = weak.lock()) b->fail(b->agent_.name + " closed its " + which + ", so it was stopped.");
  };
  auto child = transport::ChildProcess::spawn(ex_, spec, std::move(h));
  if (!child) {
    remove_folder();
    co_return agent_.name + " could not start: " + child.error();
  }
  child_ = *child;
  rpc_ = std::make_shared<rpc::Connection>(ex_, [weak](std::string line) {
    auto b = weak.lock();
    return b && b->child_ && b->child_->write_line(std::move(line));
  });
  rpc_->on_request([weak](std::string method, json::value params) -> asio::awaitable<rpc::Result> {
    auto b = weak.lock();
    if (!b) co_return rpc::RpcError{rpc::kInternalError, "Session ended", nullptr};
    co_return co_await b->on_request(std::move(method), std::move(params));
  });
  rpc_->on_notification([weak](std::string method, json::value params) {
    if (auto b = weak.lock()) b->on_notification(method, params);
  });
  rpc_->on_protocol_error([weak](std::string what) {
    // The line is the agent's bytes: shown as valid UTF-8 whatever they were.
    if (auto b = weak.lock(); b && !b->shut_down_)
      b->sink_.on_log("[leuria] ignored output: " + core::valid_utf8(what, 300));
  });
  rpc_->on_broken([weak](std::string what) {
    if (auto b = weak.lock())
      b->fail(b->agent_.name + " lost track of the conversation (" + what + "), so it was stopped.");
  });

  auto init = co_await rpc_->call("initialize", initialize_params(options_.engine_version));
  if (!init) co_return describe(init.error());
  auto info = parse_initialize(*init);
  if (!info) co_return agent_.name + " answered initialize with something that isn't ACP";
  if (info->protocol_version != kProtocolVersion)
    co_return agent_.name + " speaks ACP version " + std::to_string(info->protocol_version) + ", not 1";
  images_ = info->images;

  NewSessionParams np;
  np.cwd = folder_.string();
  np.mcp_url = config_.mcp_url;
  np.mcp_token = config_.mcp_token;
  np.http_mcp = info->http_mcp;
  np.engine_path = options_.engine_path;
  np.claude = is_claude_code(info->name, agent_.id, agent_.command);
  np.system_prompt = config_.system_prompt;
  np.max_turns = config_.asked_max_turns.value_or(0);
  if (np.claude) system_prompt_sent_ = true;
  auto created = co_await rpc_->call("session/new", new_session_params(np));
  if (!created) co_return describe(created.error());
  auto session = parse_new_session(*created);
  if (!session) co_return agent_.name + " did not open a session";
  session_ = session->session_id;

  // The mode in which tool calls ask permission (Claude Code's "auto" spends the visitor's tokens on
  // a classifier; others auto-approve).
  if (!session->modes.empty() && session->current_mode != "default" &&
      std::find(session->modes.begin(), session->modes.end(), "default") != session->modes.end()) {
    // Refused, the agent would stay in a mode that runs its tools without asking us: not started.
    auto r = co_await rpc_->call("session/set_mode", set_mode_params(session_, "default"));
    if (!r) co_return agent_.name + " could not switch to the mode that asks before using tools (" +
                      core::valid_utf8(r.error().message, 200) + ")";
  }
  if (model_) {
    rpc::Result r = rpc::RpcError{rpc::kMethodNotFound, "no way to choose a model", nullptr};
    if (session->model_config_id)
      r = co_await rpc_->call("session/set_config_option",
                              set_config_option_params(session_, *session->model_config_id, *model_));
    else
      r = co_await rpc_->call("session/set_model", set_model_params(session_, *model_));
    if (!r && !shut_down_) sink_.on_log("[leuria] could not choose the model " + *model_ + ": " + r.error().message);
  }
  co_return boost::system::result<void, std::string>{};
}

asio::awaitable<core::TurnOutcome> AcpBackend::prompt(std::vector<core::PromptBlock> blocks) {
  auto self = shared_from_this();
  cancelling_ = false;
  tool_names_.clear();  // a turn's permission requests name its own calls; a cancelled turn's never finish
  // Agents without a way to replace their preset get the page's system prompt ahead of the first turn.
  if (config_.system_prompt && !system_prompt_sent_ && !blocks.empty()) {
    blocks.front().text = "<system>\n" + *config_.system_prompt + "\n</system>\n\n" + blocks.front().text;
    system_prompt_sent_ = true;
  }
  in_turn_ = true;
  ++turn_seq_;
  auto r = co_await rpc_->call("session/prompt", prompt_params(session_, blocks));
  in_turn_ = false;
  cancel_timer_.cancel();
  if (shut_down_) co_return core::TurnOutcome{core::TurnOutcome::End::cancelled, {}};
  if (!r) {
    if (cancelling_) co_return core::TurnOutcome{core::TurnOutcome::End::cancelled, {}};
    co_return core::TurnOutcome{core::TurnOutcome::End::failed, describe(r.error())};
  }
  if (stop_reason(*r) == "cancelled" || cancelling_) co_return core::TurnOutcome{core::TurnOutcome::End::cancelled, {}};
  if (stop_reason(*r) == "refusal") co_return core::TurnOutcome{core::TurnOutcome::End::done, {}};
  co_return core::TurnOutcome{};
}

void AcpBackend::cancel_turn() {
  if (!rpc_ || session_.empty()) return;
  const bool first = !cancelling_;
  cancelling_ = true;
  rpc_->notify("session/cancel", cancel_params(session_));
  // A page tool call the agent waits on (over MCP) ends now, as a failed call, so that it can end its
  // turn even if it doesn't abort the call itself (as the model-server backend's calls end).
  tools_->cancel_calls();
  if (!first || !in_turn_) return;
  cancel_timer_.expires_after(options_.cancel_grace);
  cancel_timer_.async_wait([weak = weak_from_this(), turn = turn_seq_](boost::system::error_code ec) {
    auto b = weak.lock();
    if (ec || !b || !b->in_turn_ || b->turn_seq_ != turn) return;
    const auto s = std::chrono::duration_cast<std::chrono::seconds>(b->options_.cancel_grace).count();
    b->fail(b->agent_.name + " did not stop its turn within " + std::to_string(s) +
            " s of being asked to, so it was stopped.");
  });
}

void AcpBackend::fail(std::string why) {
  if (shut_down_) return;
  sink_.on_log("[leuria] " + why);
  sink_.on_failed(std::move(why));  // the session ends, which shuts us down and stops the agent
  shutdown();                       // in case it didn't
}

asio::awaitable<rpc::Result> AcpBackend::on_request(std::string method, json::value params) {
  if (method != "session/request_permission")
    co_return rpc::RpcError{rpc::kMethodNotFound, "The client does not offer " + method, nullptr};
  auto req = parse_permission_request(params);
  // ACP: once we sent session/cancel, every permission request is answered "cancelled" (one that crossed
  // the cancel on the wire too): a stopped turn runs no more tools.
  if (cancelling_) {
    if (!shut_down_)
      sink_.on_permission({req.tool_call.tool_name.value_or(req.tool_call.title.value_or("unknown tool")), false});
    co_return permission_result(std::nullopt);
  }
  // The name an earlier tool_call gave this call counts only under the same rule as its title.
  if (auto name = tool_names_.find(req.tool_call.id); name && !req.builtin_kind) req.names.push_back(*name);
  std::vector<std::string> page_tools;
  for (auto& t : tools_->tools()) page_tools.push_back(t.name);
  auto tool = core::page_tool_named(req.names, page_tools);
  const bool allow = tool.has_value();
  // The event names what the agent asked for, in its words, whether or not it counts as a page tool.
  std::string shown = req.tool_call.tool_name.value_or(req.tool_call.title.value_or("unknown tool"));
  if (tool) shown = std::string(core::kPageToolPrefix) + *tool;
  if (!shut_down_) sink_.on_permission({shown, allow});
  co_return permission_result(core::choose_option(allow, req.options));
}

void AcpBackend::on_notification(const std::string& method, const json::value& params) {
  if (method == "session/update") on_update(parse_update(params));
}

void AcpBackend::on_update(Update u) {
  if (shut_down_) return;
  switch (u.kind) {
    case Update::Kind::chunk: sink_.on_chunk(std::move(u.text)); break;
    case Update::Kind::thought: sink_.on_thought(std::move(u.text)); break;
    case Update::Kind::notice: sink_.on_log("[" + agent_.name + "] " + u.text); break;
    case Update::Kind::tool_call: {
      auto& t = u.tool_call;
      std::string name = tool_names_.seen(t.id, t.tool_name.value_or(t.title.value_or("")), t.status);
      if (!name.empty()) t.tool_name = name;
      sink_.on_tool_call(std::move(t));
      break;
    }
    case Update::Kind::none: break;
  }
}

void AcpBackend::on_exit(int code) {
  if (!shut_down_ && child_ && child_->term_signal() != 0) {
    // Killed by a signal nobody here sent (a crash, the OOM killer): "code 137" means nothing to a person.
    const int sig = child_->term_signal();
    const char* abbrev = ::sigabbrev_np(sig);
    sink_.on_failed(agent_.name + " stopped unexpectedly (killed by signal " +
                    (abbrev ? "SIG" + std::string(abbrev) : std::to_string(sig)) + ").");
  } else if (!shut_down_) {
    sink_.on_exit(code);
  }
  if (rpc_) rpc_->close(agent_.name + " exited");
  remove_folder();
}

void AcpBackend::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (rpc_) rpc_->close("The session ended");
  if (child_ && !child_->exited())
    child_->terminate(options_.kill_grace);  // closes stdin, SIGTERM, then SIGKILL; the folder goes on exit
  else
    remove_folder();
}

}  // namespace leuria::acp_client
