// Messages: a WebSocket on a connection whose upgrade the handler allowed (Beast). Accepts the
// upgrade with the handler's headers, hands the handler a message::WebSocket of whole text messages,
// and refuses, with the RFC's close code, what Beast lets through but the protocol does not (binary
// messages, UTF-8 cut short at a message's end, close codes from 5000 up).
// Deadlines: the upgrade's answer and the closing handshake the engine begins have min(write, idle)
// timeout, counted from the close even while its frame waits behind a stuck write; a peer heard from
// (any frame) within idle_timeout stays, with a ping sent at half of it; one that is not is dropped;
// one heard while a write to it has waited past write_timeout is dropped too. The idle deadline is
// kept lazily (ReadDeadline), not re-armed per message.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "http/message.hpp"
#include "http/server.hpp"

namespace leuria::http {

// Runs res.upgrade on the accepted socket, then closes it (a close frame, unless one was exchanged).
boost::asio::awaitable<void> run_websocket(boost::beast::tcp_stream& stream,
                                           const boost::beast::http::request<boost::beast::http::string_body>& req,
                                           Response& res, const ServerLimits& limits);

}  // namespace leuria::http
