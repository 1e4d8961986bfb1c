// http::BodyDecoder (http/body_decoder.cpp): a response body's framing decoded in place. Against
// Beast's parser (tests/unit/body_reference.hpp) on generated chunked bodies, whole and mutated, fed
// in random pieces; and its own limits, which Beast does not have.
#include <gtest/gtest.h>

#include <boost/beast/http/error.hpp>

#include <random>
#include <string>
#include <vector>

#include "body_reference.hpp"
#include "http/body_decoder.hpp"

using namespace leuria;
using http::BodyDecoder;
namespace bhttp = boost::beast::http;

namespace {

std::string hex(std::size_t n) {
  char b[32];
  std::snprintf(b, sizeof b, "%zx", n);
  return b;
}

// A chunked body of `texts`, each a chunk, then the last chunk and the CRLF.
std::string chunked(const std::vector<std::string>& texts, std::string last_line_rest = "", std::string trailer = "") {
  std::string out;
  for (auto& t : texts) out += hex(t.size()) + "\r\n" + t + "\r\n";
  return out + "0" + last_line_rest + "\r\n" + trailer + "\r\n";
}

struct Decoded {
  std::string data;
  boost::system::error_code ec;
  std::size_t used = 0;
};

Decoded decode_all(BodyDecoder& d, std::string bytes) {
  Decoded out;
  auto r = d.decode(bytes.data(), bytes.size(), out.ec);
  out.data.assign(bytes.data(), r.body);
  out.used = r.used;
  return out;
}

// Random pieces: the sizes a sequence of reads might bring.
std::vector<std::size_t> random_pieces(std::mt19937& rng, std::size_t total) {
  std::vector<std::size_t> out;
  std::uniform_int_distribution<int> kind(0, 3);
  for (std::size_t sum = 0; sum < total;) {
    std::size_t n = kind(rng) == 0 ? 1 : std::uniform_int_distribution<std::size_t>(1, 40)(rng);
    out.push_back(n);
    sum += n;
  }
  return out;
}

std::string random_text(std::mt19937& rng) {
  static const std::string alphabet = "ab\r\n0;=\" \t\\zF9\x80\xff";
  std::string t(std::uniform_int_distribution<std::size_t>(1, 70)(rng), ' ');
  for (auto& c : t) c = alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(rng)];
  return t;
}

std::string random_extension(std::mt19937& rng) {
  static const std::vector<std::string> forms = {"",          ";a",       ";a=b",       ";name=\"q v\"", " ;x",
                                                 ";a;b=1",    "; a = b",  ";a=\"\\\"\"", ";a=\"\"",       ";k=v;k2"};
  return forms[std::uniform_int_distribution<std::size_t>(0, forms.size() - 1)(rng)];
}

std::string random_body(std::mt19937& rng) {
  std::string out;
  const int chunks = std::uniform_int_distribution<int>(0, 6)(rng);
  for (int i = 0; i < chunks; ++i) {
    const std::string t = random_text(rng);
    std::string size = hex(t.size());
    if (rng() % 5 == 0) size = "00" + size;
    if (rng() % 3 == 0)
      for (auto& c : size) c = static_cast<char>(std::toupper(c));
    out += size + random_extension(rng) + "\r\n" + t + "\r\n";
  }
  out += std::string(1 + rng() % 2, '0') + random_extension(rng) + "\r\n";
  static const std::vector<std::string> trailers = {"", "X-T: 1\r\n", "A: b c\r\nB:\r\n", "Fold: a\r\n  b\r\n"};
  out += trailers[rng() % trailers.size()] + "\r\n";
  return out;
}

// A byte changed, inserted or removed, or the body cut short.
std::string mutate(std::mt19937& rng, std::string s) {
  static const std::string bytes = "\r\n0aF;=\" \tg\\:\x7f\x01";
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const std::size_t at = rng() % s.size();
    const char c = bytes[rng() % bytes.size()];
    switch (rng() % 4) {
      case 0: s[at] = c; break;
      case 1: s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c); break;
      case 2: s.erase(at, 1); break;
      default: s.resize(at); break;
    }
  }
  return s;
}

// What the client relies on: Beast's reading where Beast accepts; where Beast refuses, the same
// refusal, or a body whose only difference lies in a dropped trailer field (Beast also checks a
// trailer's fields as message headers: a Content-Length among them, say).
void expect_agrees(std::string_view body, const std::vector<std::size_t>& pieces) {
  const auto ours = oracle::decoder_read(BodyDecoder::chunked(), body, pieces);
  const auto theirs = oracle::beast_read_chunked(body);
  const std::string shown = "body: " + ::testing::PrintToString(std::string(body));
  if (theirs.ok) {
    EXPECT_TRUE(ours.ok) << shown;
    EXPECT_EQ(ours.data, theirs.data) << shown;
  } else if (ours.ok) {
    EXPECT_TRUE(ours.last_chunk) << "accepted what Beast refused before the trailer; " << shown;
    EXPECT_EQ(ours.data, theirs.data) << shown;
  } else {
    EXPECT_EQ(ours.data, theirs.data) << shown;
  }
}

}  // namespace

TEST(BodyDecoder, OneChunkIsHandedOverWhereItLies) {
  auto d = BodyDecoder::chunked();
  std::string bytes = "5\r\nhello\r\n";
  boost::system::error_code ec;
  auto r = d.decode(bytes.data(), bytes.size(), ec);
  EXPECT_FALSE(ec);
  EXPECT_EQ(r.used, bytes.size());
  EXPECT_EQ(std::string(bytes.data(), r.body), "hello");
  EXPECT_FALSE(d.done());
}

TEST(BodyDecoder, ChunksOfOneReadComeTogetherInOrder) {
  auto d = BodyDecoder::chunked();
  auto out = decode_all(d, chunked({"Hel", "lo, ", "world"}));
  EXPECT_FALSE(out.ec);
  EXPECT_EQ(out.data, "Hello, world");
  EXPECT_TRUE(d.done());
}

TEST(BodyDecoder, AChunkSplitAcrossReadsIsHandedOverAsItComes) {
  auto d = BodyDecoder::chunked();
  auto first = decode_all(d, "a\r\n01234");
  EXPECT_EQ(first.data, "01234");
  EXPECT_EQ(first.used, 8u);
  auto second = decode_all(d, "56789\r\n0\r\n\r\n");
  EXPECT_FALSE(second.ec);
  EXPECT_EQ(second.data, "56789");
  EXPECT_TRUE(d.done());
}

TEST(BodyDecoder, AnUnfinishedSizeLineIsLeftForTheNextRead) {
  auto d = BodyDecoder::chunked();
  auto out = decode_all(d, "3\r\nabc\r\n1");
  EXPECT_FALSE(out.ec);
  EXPECT_EQ(out.data, "abc");
  EXPECT_EQ(out.used, 8u);
}

TEST(BodyDecoder, BytesAfterTheBodyAreLeftUnused) {
  auto d = BodyDecoder::chunked();
  std::string bytes = chunked({"x"}) + "HTTP/1.1";
  boost::system::error_code ec;
  auto r = d.decode(bytes.data(), bytes.size(), ec);
  EXPECT_TRUE(d.done());
  EXPECT_EQ(r.used, bytes.size() - 8);
  auto length = BodyDecoder::length(3);
  std::string more = "abcdef";
  r = length.decode(more.data(), more.size(), ec);
  EXPECT_EQ(r.body, 3u);
  EXPECT_EQ(r.used, 3u);
  EXPECT_TRUE(length.done());
}

TEST(BodyDecoder, TheCloseEndsOnlyABodyThatRunsToIt) {
  auto close = BodyDecoder::to_close();
  std::string bytes = "anything at all";
  boost::system::error_code ec;
  EXPECT_EQ(close.decode(bytes.data(), bytes.size(), ec).body, bytes.size());
  EXPECT_FALSE(close.done());
  EXPECT_TRUE(close.end_of_input());
  auto length = BodyDecoder::length(100);
  length.decode(bytes.data(), bytes.size(), ec);
  EXPECT_FALSE(length.end_of_input());
  auto chunks = BodyDecoder::chunked();
  std::string cut = "5\r\nhel";
  chunks.decode(cut.data(), cut.size(), ec);
  EXPECT_FALSE(chunks.end_of_input());
  EXPECT_TRUE(BodyDecoder::none().end_of_input());
  EXPECT_TRUE(BodyDecoder::length(0).done());
}

TEST(BodyDecoder, ExtensionsAndTrailersAreDropped) {
  auto d = BodyDecoder::chunked();
  auto out = decode_all(d, "3;name=\"a b\";x\r\nabc\r\n0;last\r\nX-Checksum: 1\r\nY: 2\r\n\r\n");
  EXPECT_FALSE(out.ec);
  EXPECT_EQ(out.data, "abc");
  EXPECT_TRUE(d.done());
  EXPECT_TRUE(d.last_chunk_seen());
}

TEST(BodyDecoder, BrokenFramingIsRefusedAfterWhatCameWhole) {
  struct Case {
    std::string bytes;
    bhttp::error error;
    std::string before;
  };
  const std::vector<Case> cases = {
      {"3\r\nabc\r\nzz\r\n", bhttp::error::bad_chunk, "abc"},                  // not hex
      {"3\r\nabcX\r\n", bhttp::error::bad_chunk, "abc"},                       // no CRLF after the data
      {"3\nabc\r\n", bhttp::error::bad_chunk_extension, ""},                  // a bare LF: part of the line
      {"3\rabc\r\n", bhttp::error::bad_line_ending, ""},                      // a bare CR
      {"3;=x\r\nabc\r\n", bhttp::error::bad_chunk_extension, ""},            // an extension without a name
      {"3 \r\nabc\r\n", bhttp::error::bad_chunk_extension, ""},              // blanks ending the line
      {"11111111111111111\r\n", bhttp::error::bad_chunk, ""},                 // 17 digits: past 64 bits
      {"1\r\na\r\n0\r\nBad Field: x\r\n\r\n", bhttp::error::bad_field, "a"},  // a trailer name with a space
  };
  for (const auto& c : cases) {
    auto d = BodyDecoder::chunked();
    auto out = decode_all(d, c.bytes);
    EXPECT_EQ(out.ec, bhttp::make_error_code(c.error)) << c.bytes << ": " << out.ec.message();
    EXPECT_EQ(out.data, c.before) << c.bytes;
    EXPECT_FALSE(d.done());
    // Every later call says the same.
    std::string more = "1\r\nx\r\n";
    boost::system::error_code again;
    EXPECT_EQ(d.decode(more.data(), more.size(), again).body, 0u);
    EXPECT_EQ(again, out.ec);
  }
}

TEST(BodyDecoder, AnEndlessSizeLineOrTrailerIsRefusedAtItsLimit) {
  auto d = BodyDecoder::chunked();
  std::string line = "5;" + std::string(http::kMaxChunkLine, 'a');
  boost::system::error_code ec;
  d.decode(line.data(), http::kMaxChunkLine - 1, ec);
  EXPECT_FALSE(ec);  // not at the limit yet
  d.decode(line.data(), line.size(), ec);
  EXPECT_EQ(ec, bhttp::error::header_limit);

  auto t = BodyDecoder::chunked();
  std::string trailer = "0\r\n";
  while (trailer.size() < http::kMaxTrailer + 100) trailer += "X-Field: " + std::string(60, 'v') + "\r\n";
  auto out = decode_all(t, trailer);
  EXPECT_EQ(out.ec, bhttp::error::header_limit);
  // Just under the limit: accepted.
  auto fits = BodyDecoder::chunked();
  std::string small = "0\r\n" + std::string("A: ") + std::string(http::kMaxTrailer - 8, 'v') + "\r\n\r\n";
  auto ok = decode_all(fits, small);
  EXPECT_FALSE(ok.ec) << ok.ec.message();
  EXPECT_TRUE(fits.done());
}

TEST(BodyDecoder, ReadsGeneratedBodiesAsBeastDoesInAnyPieces) {
  std::mt19937 rng(20261205);
  for (int i = 0; i < 3000; ++i) {
    const std::string body = random_body(rng);
    expect_agrees(body, random_pieces(rng, body.size()));
    expect_agrees(body, {body.size()});
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(BodyDecoder, RefusesBrokenBodiesAsBeastDoes) {
  std::mt19937 rng(5122026);
  for (int i = 0; i < 20000; ++i) {
    const std::string body = mutate(rng, random_body(rng));
    expect_agrees(body, random_pieces(rng, body.size()));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(BodyDecoder, EveryShortBodyReadsAsBeastReadsIt) {
  // Every string of up to six bytes over the framing's own characters, as a whole body.
  const std::string alphabet = "0a\r\n;";
  std::vector<std::string> all{""};
  for (int len = 1; len <= 6; ++len) {
    std::vector<std::string> next;
    for (auto& s : all)
      if (static_cast<int>(s.size()) == len - 1)
        for (char c : alphabet) next.push_back(s + c);
    for (auto& s : next) {
      expect_agrees(s, {1});
      expect_agrees(s, {s.size()});
      if (::testing::Test::HasFailure()) return;
    }
    all.insert(all.end(), next.begin(), next.end());
  }
}
