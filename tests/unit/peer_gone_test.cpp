// http::peer_gone (http/message.hpp): what a long-poll asks of its connection while it waits.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/message.hpp"

using leuria::http::peer_gone;
using leuria::http::Request;

namespace {

struct Pair {
  int ours = -1, theirs = -1;
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    ours = fds[0];
    theirs = fds[1];
  }
  ~Pair() {
    if (ours >= 0) ::close(ours);
    if (theirs >= 0) ::close(theirs);
  }
  void close_theirs() {  // the client closes its end
    ::close(theirs);
    theirs = -1;
  }
  Request request() const {  // a request that came on our end
    Request req;
    req.peer = ours;
    return req;
  }
};

}  // namespace

TEST(PeerGone, AClientThatWaitsIsThere) {
  Pair p;
  EXPECT_FALSE(peer_gone(p.request()));
}

TEST(PeerGone, BytesOfANextRequestFromAnOpenClientCountAsThereAndAreNotConsumed) {
  Pair p;
  ASSERT_EQ(::write(p.theirs, "GET", 3), 3);
  EXPECT_FALSE(peer_gone(p.request()));
  char buf[4] = {};
  EXPECT_EQ(::read(p.ours, buf, sizeof buf), 3);  // still there for the server's next read
}

TEST(PeerGone, AClientThatClosedAfterSendingMoreIsGone) {
  Pair p;
  ASSERT_EQ(::write(p.theirs, "\r\n", 2), 2);
  p.close_theirs();
  EXPECT_TRUE(peer_gone(p.request()));
}

TEST(PeerGone, AClosedClientIsGone) {
  Pair p;
  p.close_theirs();
  EXPECT_TRUE(peer_gone(p.request()));
}

TEST(PeerGone, ARequestWithoutAConnectionIsNeverGone) {
  EXPECT_FALSE(peer_gone(Request{}));
}
