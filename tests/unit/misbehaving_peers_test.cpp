// Misbehaving peers (issue 7), the parts a unit can pin: a JSON-RPC peer that replies under wrong
// ids, garbage in a model's stream, bytes that aren't UTF-8, a child that never ends a line, and a
// child that leaves a daemon behind. The end-to-end side is tests/e2e/misbehaving-*.test.mjs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "adapters/llm/codec.hpp"
#include "core/plain_text.hpp"
#include "rpc/connection.hpp"
#include "transport/child_process.hpp"

using namespace leuria;
namespace asio = boost::asio;
namespace json = boost::json;

TEST(PlainText, InvalidBytesBecomeReplacementCharactersAndCutsKeepWholeCharacters) {
  EXPECT_EQ(core::valid_utf8("plain ascii"), "plain ascii");
  EXPECT_EQ(core::valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(core::valid_utf8("a\xFF" "b"), "a" + fffd + "b");
  EXPECT_EQ(core::valid_utf8("\xC0\xAF"), fffd + fffd);          // overlong '/'
  EXPECT_EQ(core::valid_utf8("\xED\xA0\x80"), fffd + fffd + fffd);  // a surrogate
  EXPECT_EQ(core::valid_utf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // past U+10FFFF
  EXPECT_EQ(core::valid_utf8("ab\xE2\x82"), "ab" + fffd + fffd);  // cut short at the end
  EXPECT_EQ(core::valid_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));  // NUL is valid UTF-8 (JSON escapes it)
  EXPECT_EQ(core::valid_utf8("ab\xE2\x82\xAC", 4), "ab");  // never half a character
  EXPECT_EQ(core::valid_utf8("abcdef", 3), "abc");
}

namespace {
struct RpcFixture {
  asio::io_context ioc;
  std::vector<std::string> sent, junk, broken;
  std::shared_ptr<rpc::Connection> c =
      std::make_shared<rpc::Connection>(ioc.get_executor(), [this](std::string l) { sent.push_back(l); return true; });
  RpcFixture() {
    c->on_protocol_error([this](std::string w) { junk.push_back(w); });
    c->on_broken([this](std::string w) { broken.push_back(w); });
  }
  std::shared_ptr<std::optional<rpc::Result>> call() {
    auto slot = std::make_shared<std::optional<rpc::Result>>();
    asio::co_spawn(ioc, c->call("m", json::object{}), [slot](std::exception_ptr, rpc::Result r) { *slot = r; });
    ioc.restart();
    ioc.poll();
    return slot;
  }
};
}  // namespace

TEST(RpcWrongIds, AReplyToNoCallOfOursIsBrokenNotIgnored) {
  RpcFixture f;
  auto first = f.call();  // id 1
  f.c->receive(R"({"jsonrpc":"2.0","id":424242,"result":{}})");  // never sent
  ASSERT_EQ(f.broken.size(), 1u);
  EXPECT_NE(f.broken[0].find("424242"), std::string::npos);
  f.c->receive(R"({"jsonrpc":"2.0","id":"1","result":{}})");  // our id, as a string
  ASSERT_EQ(f.broken.size(), 2u);
  EXPECT_NE(f.broken[1].find("\"1\""), std::string::npos);
  f.c->receive(R"({"jsonrpc":"2.0","id":1.0,"error":{"code":1,"message":"x"}})");  // a double is not our id
  EXPECT_EQ(f.broken.size(), 3u);
  f.ioc.restart();
  f.ioc.poll();
  EXPECT_FALSE(first->has_value()) << "a wrong id answers nothing";
  f.c->receive(R"({"jsonrpc":"2.0","id":1,"result":"ok"})");
  f.ioc.restart();
  f.ioc.poll();
  ASSERT_TRUE(first->has_value());
  f.c->receive(R"({"jsonrpc":"2.0","id":1,"result":"again"})");  // a duplicate reply
  EXPECT_EQ(f.broken.size(), 4u);
  EXPECT_TRUE(f.junk.empty());
}

TEST(RpcWrongIds, LinesThatAreNotRepliesStayIgnorable) {
  RpcFixture f;
  f.c->receive(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})");
  f.c->receive(R"({"hello":"world"})");
  f.c->receive("not json");
  EXPECT_TRUE(f.broken.empty());
  EXPECT_EQ(f.junk.size(), 3u);
  // Without on_broken, a reply to nothing is reported as a protocol error, as before.
  asio::io_context ioc;
  std::vector<std::string> junk;
  auto c = std::make_shared<rpc::Connection>(ioc.get_executor(), [](std::string) { return true; });
  c->on_protocol_error([&](std::string w) { junk.push_back(w); });
  c->receive(R"({"jsonrpc":"2.0","id":7,"result":1})");
  EXPECT_EQ(junk.size(), 1u);
}

TEST(LlmGarbage, AToolCallIndexThatIsNotASmallIntegerIsDroppedNotThrown) {
  for (const char* index : {"1.5", "1e12", "-1", "\"0\"", "4294967296", "128"}) {
    std::string line = std::string(R"(data: {"choices":[{"delta":{"tool_calls":[{"index":)") + index +
                       R"(,"id":"x","function":{"name":"n","arguments":"{}"}}]}}]})";
    llm::Line l;
    EXPECT_NO_THROW(l = llm::parse_stream_line(line)) << index;
    ASSERT_TRUE(l.delta) << index;
    EXPECT_TRUE(l.delta->tool_calls.empty()) << index;
  }
  auto ok = llm::parse_stream_line(R"(data: {"choices":[{"delta":{"tool_calls":[{"index":2,"id":"x"}]}}]})");
  ASSERT_TRUE(ok.delta);
  ASSERT_EQ(ok.delta->tool_calls.size(), 1u);
  EXPECT_EQ(ok.delta->tool_calls[0].index, 2);
}

TEST(LlmGarbage, ErrorPagesBecomeOneLineOfWords) {
  EXPECT_EQ(llm::error_message(R"({"error":{"message":"model not found"}})"), "model not found");
  EXPECT_EQ(llm::error_message("<html>\r\n<head><title>502 Bad Gateway</title></head></html>"),
            "a web page instead of an answer");
  EXPECT_EQ(llm::error_message("  \n"), "an empty answer");
  EXPECT_EQ(llm::error_message("upstream timed out\nsecond line"), "upstream timed out");
  EXPECT_EQ(llm::error_message("bad \xFF byte"), "bad \xEF\xBF\xBD byte");
  EXPECT_LE(llm::error_message(std::string(1000, 'x')).size(), 200u);
}

namespace {
// Runs `script` under sh as a ChildProcess until it exits; returns the exit code and any fault.
struct Ran {
  int code = -1;
  int signal = 0;
  std::string fault;
  std::vector<std::string> lines;  // its output, line by line
};
Ran run_child(const std::string& script) {
  asio::io_context ioc;
  Ran r;
  transport::SpawnSpec spec{"/bin/sh", {"-c", script}, {"PATH=/usr/bin:/bin"}, "/"};
  transport::ChildProcess::Handlers h;
  std::shared_ptr<transport::ChildProcess> child;
  h.on_exit = [&](int code) {
    r.code = code;
    r.signal = child->term_signal();
  };
  h.on_fault = [&](std::string what) { r.fault = what; };
  h.on_stdout_line = [&](std::string_view line) { r.lines.emplace_back(line); };
  auto spawned = transport::ChildProcess::spawn(ioc.get_executor(), spec, std::move(h));
  EXPECT_TRUE(spawned) << (spawned ? "" : spawned.error());
  if (!spawned) return r;
  child = *spawned;
  ioc.run_for(std::chrono::seconds(30));  // returns when the child and the drain are done
  child.reset();
  return r;
}

bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close = all.rfind(')');
  return close != std::string::npos && all.size() > close + 2 && all[close + 2] != 'Z';
}
}  // namespace

TEST(ChildLines, LinesAreWholeAcrossReadsWithoutTheirEndsAndTheLastNeedsNoNewline) {
  // Lines split over writes, CRLF, lines longer than the 64 KB read buffer (it grows, then shrinks
  // back), many lines in one read, and a last line the child never ended.
  auto r = run_child(
      "printf 'a\\r\\nb'; sleep 0.05; printf 'c\\nd\\n\\n'; head -c 100000 /dev/zero | tr '\\0' x; echo; "
      "head -c 300000 /dev/zero | tr '\\0' y; printf '\\r\\n'; seq 1 2000; printf last");
  EXPECT_EQ(r.code, 0);
  ASSERT_EQ(r.lines.size(), 2007u);
  EXPECT_EQ(r.lines[0], "a");
  EXPECT_EQ(r.lines[1], "bc");
  EXPECT_EQ(r.lines[2], "d");
  EXPECT_EQ(r.lines[3], "");
  EXPECT_EQ(r.lines[4], std::string(100000, 'x'));
  EXPECT_EQ(r.lines[5], std::string(300000, 'y'));
  for (int i = 1; i <= 2000; ++i) ASSERT_EQ(r.lines[5 + i], std::to_string(i));
  EXPECT_EQ(r.lines.back(), "last");
}

TEST(ChildLimits, ALineThatNeverEndsIsAFaultAndTheChildIsKilled) {
  auto r = run_child("head -c 40000000 /dev/zero | tr '\\0' x; sleep 30");
  EXPECT_NE(r.fault.find("more than 32 MB without a line break on its output"), std::string::npos) << r.fault;
  EXPECT_EQ(r.signal, SIGKILL);
}

TEST(ChildLimits, ADaemonThatLeftTheProcessGroupIsKilledWithTheChild) {
  auto dir = std::filesystem::temp_directory_path() / ("leuria-unit-daemon-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto pidfile = (dir / "pid").string();
  // setsid: a new session and process group, so the group kill misses it; it keeps no descriptor of
  // ours, so only the tag finds it.
  auto r = run_child("setsid sh -c 'echo $$ > " + pidfile + "; exec sleep 300' </dev/null >/dev/null 2>&1 & " +
                     "while [ ! -s " + pidfile + " ]; do sleep 0.05; done; exit 4");
  EXPECT_EQ(r.code, 4);
  std::ifstream f(pidfile);
  pid_t daemon = 0;
  f >> daemon;
  ASSERT_GT(daemon, 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !running(daemon);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << "the daemon " << daemon << " outlived the child";
  if (!gone) ::kill(daemon, SIGKILL);
  std::filesystem::remove_all(dir);
}

namespace {
// A folder with an executable script `name` that prints `word`; removed with the object.
struct ScriptDir {
  std::filesystem::path dir;
  ScriptDir(const std::string& name, const std::string& word) {
    dir = std::filesystem::temp_directory_path() / ("leuria-unit-spawn-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / name) << "#!/bin/sh\necho " << word << "\n";
    std::filesystem::permissions(dir / name, std::filesystem::perms::owner_all);
  }
  ~ScriptDir() { std::filesystem::remove_all(dir); }
};

// Runs `spec` to its end; its output lines, or the spawn's error as the only line.
std::vector<std::string> output_of(const transport::SpawnSpec& spec) {
  asio::io_context ioc;
  std::vector<std::string> lines;
  transport::ChildProcess::Handlers h;
  h.on_stdout_line = [&](std::string_view line) { lines.emplace_back(line); };
  auto child = transport::ChildProcess::spawn(ioc.get_executor(), spec, std::move(h));
  if (!child) return {"error: " + child.error()};
  ioc.run_for(std::chrono::seconds(10));
  return lines;
}
}  // namespace

// The engine's folder is not the child's: a relative program (or one an empty PATH entry found) is
// the one in the engine's folder, not whatever the child's folder holds under that name.
TEST(ChildSpawn, ARelativeProgramIsFoundWhereTheEngineIsNotWhereTheChildStarts) {
  ScriptDir d("leuria-unit-relative", "relative-ran");
  const auto before = std::filesystem::current_path();
  std::filesystem::current_path(d.dir);
  auto direct = output_of({"./leuria-unit-relative", {}, {"PATH=/usr/bin:/bin"}, "/"});
  auto via_empty_entry = output_of({"leuria-unit-relative", {}, {"PATH=/usr/bin::/bin"}, "/"});
  std::filesystem::current_path(before);
  EXPECT_EQ(direct, std::vector<std::string>{"relative-ran"});
  EXPECT_EQ(via_empty_entry, std::vector<std::string>{"relative-ran"});
  EXPECT_EQ(transport::find_in_path("leuria-unit-relative", "/nowhere:" + d.dir.string()),
            (d.dir / "leuria-unit-relative").string());
}

// An agent whose configured env sets PATH is looked up on that PATH, as its own execvp would.
TEST(ChildSpawn, AProgramIsLookedUpOnTheChildsOwnPath) {
  ScriptDir d("leuria-unit-own-path", "own-path-ran");
  auto r = output_of({"leuria-unit-own-path", {}, {"PATH=/usr/bin:" + d.dir.string()}, "/"});
  EXPECT_EQ(r, std::vector<std::string>{"own-path-ran"});
}

namespace {
// Runs `script` under sh and reports what on_pipe_closed said (empty: nothing) and how long after
// the spawn; `write_after`: a line written to its stdin after that many ms.
struct PipeReport {
  std::string which;
  std::chrono::milliseconds after{0};
  bool exited = false;
};
PipeReport pipe_report(const std::string& script, std::optional<int> write_after = std::nullopt) {
  asio::io_context ioc;
  PipeReport r;
  const auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<transport::ChildProcess> child;
  asio::steady_timer writer(ioc), stop(ioc);
  transport::ChildProcess::Handlers h;
  h.on_stdout_line = [](std::string_view) {};
  h.on_exit = [&](int) {
    r.exited = true;
    writer.cancel();
    stop.cancel();
  };
  h.on_pipe_closed = [&](std::string which) {
    r.which = which;
    r.after = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    child->kill_group();
  };
  auto spawned = transport::ChildProcess::spawn(ioc.get_executor(), {"/bin/sh", {"-c", script}, {"PATH=/usr/bin:/bin"}, "/"},
                                                std::move(h));
  EXPECT_TRUE(spawned);
  if (!spawned) return r;
  child = *spawned;
  if (write_after) {
    writer.expires_after(std::chrono::milliseconds(*write_after));
    writer.async_wait([&](boost::system::error_code ec) {
      if (!ec) child->write_line(std::string(100000, 'x'));
    });
  }
  stop.expires_after(std::chrono::seconds(8));
  stop.async_wait([&](boost::system::error_code ec) {
    if (!ec) child->kill_group();
  });
  ioc.run_for(std::chrono::seconds(15));
  child.reset();
  return r;
}
}  // namespace

TEST(ChildPipes, AChildThatClosesItsOutputAndStaysIsReported) {
  auto r = pipe_report("exec >&-; sleep 30");
  EXPECT_EQ(r.which, "output");
  EXPECT_LT(r.after, std::chrono::milliseconds(4000));
  EXPECT_TRUE(r.exited);  // killed by the handler
}

TEST(ChildPipes, AChildThatClosesItsInputAndStaysIsReportedWhenAWriteFails) {
  std::signal(SIGPIPE, SIG_IGN);  // as the engine's main does: the write fails with EPIPE instead
  auto r = pipe_report("exec <&-; sleep 30", 300);
  EXPECT_EQ(r.which, "input");
  EXPECT_LT(r.after, std::chrono::milliseconds(4000));
}

TEST(ChildPipes, AChildThatExitsIsNotReportedAsClosingItsPipes) {
  auto r = pipe_report("echo bye; exit 3");
  EXPECT_EQ(r.which, "");
  EXPECT_TRUE(r.exited);
  auto slow = pipe_report("exec >&-; sleep 0.3; exit 0");  // closes first, exits within the grace
  EXPECT_EQ(slow.which, "");
  EXPECT_TRUE(slow.exited);
}
