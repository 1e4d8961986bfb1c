#include "transport/lookup.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace leuria::transport {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// Lookups under way, across the process: each holds a thread.
std::atomic<int> g_lookups{0};

// What the lookup's thread and the io thread share. The eventfd is closed by whichever lets go last:
// the io thread may stop waiting (cancel) before the thread is done with it.
struct Shared {
  Lookup::Resolve resolve = ::getaddrinfo;
  int fd = -1;
  std::string host, port;
  std::atomic<bool> done{false};
  int rc = 0;
  addrinfo* list = nullptr;
  ~Shared() {
    if (list) ::freeaddrinfo(list);
    if (fd >= 0) ::close(fd);
  }
};

void look_up(const std::shared_ptr<Shared>& s) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  // No AI_ADDRCONFIG, as Asio's resolver asks by default: with it, a machine whose only configured
  // interface is the loopback (offline) finds no address for "localhost", which is where Ollama lives.
  s->rc = s->resolve(s->host.c_str(), s->port.c_str(), &hints, &s->list);
  s->done.store(true, std::memory_order_release);
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(s->fd, &one, sizeof one);
  --g_lookups;
}

// Out of the coroutine: GCC 12 destroys a conditional's string temporaries twice inside one.
std::string no_answer_within(std::chrono::milliseconds deadline) {
  const auto ms = deadline.count();
  if (ms % 1000) return "No answer within " + std::to_string(ms) + " ms";
  return "No answer within " + std::to_string(ms / 1000) + " s";
}

}  // namespace

struct Lookup::Impl {
  Impl(asio::any_io_executor ex, Resolve r) : wait(ex), timer(ex), resolve(r ? r : ::getaddrinfo) {}
  asio::posix::stream_descriptor wait;
  asio::steady_timer timer;  // the deadline
  Resolve resolve;
};

Lookup::Lookup(asio::any_io_executor ex, Resolve resolve) : impl_(std::make_unique<Impl>(std::move(ex), resolve)) {}
Lookup::~Lookup() {
  if (impl_->wait.is_open()) impl_->wait.release();  // the fd is Shared's to close
}

void Lookup::cancel() {
  if (impl_->wait.is_open()) impl_->wait.cancel();
}

asio::awaitable<boost::system::result<tcp::resolver::results_type, std::string>> Lookup::run(std::string host,
                                                                                            std::string port,
                                                                                            std::chrono::milliseconds deadline) {
  using Result = boost::system::result<tcp::resolver::results_type, std::string>;
  if (g_lookups.fetch_add(1) >= kMaxLookups) {
    --g_lookups;
    co_return Result(boost::system::in_place_error,
                     "Too many host names are being looked up at once; try again in a moment");
  }
  auto s = std::make_shared<Shared>();
  s->fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->fd < 0) {
    --g_lookups;
    co_return Result(boost::system::in_place_error, std::string("Cannot look up host names: ") + std::strerror(errno));
  }
  s->host = host;
  s->port = port;
  s->resolve = impl_->resolve;
  try {
    std::thread(look_up, s).detach();
  } catch (const std::system_error& e) {
    --g_lookups;
    co_return Result(boost::system::in_place_error, std::string("Cannot look up host names: ") + e.what());
  }
  boost::system::error_code assigned;
  impl_->wait.assign(s->fd, assigned);  // the thread still writes to the fd, which Shared closes
  if (assigned) co_return Result(boost::system::in_place_error, "Cannot look up host names: " + assigned.message());
  // The deadline cancels the wait. Its handler holds only what it shares with this frame: it may run
  // after the frame is gone (fired just as the answer came), and then finds it no longer waiting.
  struct Deadline {
    bool waiting = true;
    bool late = false;
  };
  auto d = std::make_shared<Deadline>();
  impl_->timer.expires_after(deadline);
  impl_->timer.async_wait([d, wait = &impl_->wait](boost::system::error_code tec) {
    if (tec || !d->waiting) return;
    d->late = true;
    wait->cancel();
  });
  auto [ec] = co_await impl_->wait.async_wait(asio::posix::stream_descriptor::wait_read, asio::as_tuple(asio::use_awaitable));
  d->waiting = false;
  impl_->timer.cancel();
  impl_->wait.release();
  const bool done = s->done.load(std::memory_order_acquire);
  if (d->late) {
    // Cancelled by the deadline: late unless the answer came in the same moment, which is taken.
    if (!done) co_return Result(boost::system::in_place_error, no_answer_within(deadline));
  } else if (ec || !done) {
    co_return Result(boost::system::in_place_error, "Stopped");
  }
  if (s->rc != 0) co_return Result(boost::system::in_place_error, std::string(::gai_strerror(s->rc)));
  std::vector<tcp::endpoint> found;
  for (const addrinfo* a = s->list; a; a = a->ai_next) {
    if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) || a->ai_addrlen > sizeof(sockaddr_in6)) continue;
    tcp::endpoint ep;
    std::memcpy(ep.data(), a->ai_addr, a->ai_addrlen);
    ep.resize(a->ai_addrlen);
    found.push_back(ep);
  }
  if (found.empty()) co_return Result(boost::system::in_place_error, "No address found");
  co_return Result(tcp::resolver::results_type::create(found.begin(), found.end(), host, port));
}

}  // namespace leuria::transport
