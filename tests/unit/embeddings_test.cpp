// Embeddings: the one prefix table, the cut to 8,000 code points, the local services' codec,
// the loopback rule, the page's request body, and the visitor's choice in config.json.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "adapters/embed/codec.hpp"
#include "adapters/embed/local_embedder.hpp"
#include "adapters/web/codec.hpp"
#include "core/embeddings.hpp"
#include "store/ai_files.hpp"
#include "store/config_file.hpp"
#include "temp_home.hpp"

using namespace leuria;
using core::EmbedKind;
namespace json = boost::json;

namespace {
constexpr std::string_view kRetrieval = "Represent this sentence for searching relevant passages: ";
}

TEST(EmbedPrefixes, EachFamilyAsItsModelCardAsks) {
  struct Row {
    const char* model;
    std::string_view query;
    std::string_view document;
  };
  const Row rows[] = {
      {"nomic-embed-text:latest", "search_query: ", "search_document: "},
      {"text-embedding-nomic-embed-text-v1.5", "search_query: ", "search_document: "},
      {"Nomic-Embed-Text-V2-MoE", "search_query: ", "search_document: "},
      {"multilingual-e5-large", "query: ", "passage: "},
      {"intfloat/e5-base-v2", "query: ", "passage: "},
      {"jeffh/intfloat-multilingual-e5-large:f16", "query: ", "passage: "},
      {"bge-large-en-v1.5", kRetrieval, ""},
      {"BAAI/bge-small-en", kRetrieval, ""},
      {"text-embedding-bge-base-en-v1.5", kRetrieval, ""},
      {"bge-m3:latest", "", ""},
      {"mxbai-embed-large:latest", kRetrieval, ""},
      {"snowflake-arctic-embed:335m", kRetrieval, ""},
      {"all-minilm:latest", "", ""},
      {"granite-embedding:278m", "", ""},
      {"gte5x-embed", "", ""},  // "e5" only as a whole word
      {"qwen3-embedding:0.6b", "", ""},
  };
  for (const auto& r : rows) {
    auto p = core::embed_prefixes(r.model);
    EXPECT_EQ(p.query, r.query) << r.model;
    EXPECT_EQ(p.document, r.document) << r.model;
  }
}

TEST(EmbedPrefixes, AddedOnceAndAfterTheCut) {
  EXPECT_EQ(core::embed_input("mugs", EmbedKind::query, "nomic-embed-text"), "search_query: mugs");
  EXPECT_EQ(core::embed_input("mugs", EmbedKind::document, "nomic-embed-text"), "search_document: mugs");
  EXPECT_EQ(core::embed_input("search_query: mugs", EmbedKind::query, "nomic-embed-text"), "search_query: mugs");
  EXPECT_EQ(core::embed_input("mugs", EmbedKind::document, "bge-large-en"), "mugs");
  EXPECT_EQ(core::embed_input("mugs", EmbedKind::query, "all-minilm"), "mugs");
  const std::string long_text(9000, 'a');
  EXPECT_EQ(core::embed_input(long_text, EmbedKind::query, "e5-base"), "query: " + std::string(8000, 'a'));
}

TEST(EmbedCut, CountsCodePointsAndNeverSplitsOne) {
  std::string text;
  for (int i = 0; i < 8001; ++i) text += "\xC3\xA9";  // é, two bytes
  auto cut = core::cut_code_points(text, 8000);
  EXPECT_EQ(cut.size(), 16000u);
  EXPECT_EQ(core::cut_code_points("a\xF0\x9F\x98\x80" "b", 2), "a\xF0\x9F\x98\x80");  // 😀 is one
  EXPECT_EQ(core::cut_code_points("abc", 8000), "abc");
  EXPECT_EQ(core::cut_code_points("", 0), "");
  EXPECT_EQ(core::cut_code_points("abc", 0), "");
}

TEST(EmbedCodec, OllamaListingAndAnswers) {
  auto tags = embed::parse_ollama_tags(
      R"({"models":[{"name":"nomic-embed-text:latest","digest":"0a1","details":{"family":"nomic-bert","families":["nomic-bert"]}},)"
      R"({"model":"llama3.2:latest","digest":"b2"},{"size":3},7]})");
  ASSERT_EQ(tags.size(), 2u);
  EXPECT_EQ(tags[0].name, "nomic-embed-text:latest");
  EXPECT_EQ(tags[0].digest, "0a1");
  EXPECT_EQ(tags[0].families.size(), 2u);
  EXPECT_EQ(tags[1].name, "llama3.2:latest");
  EXPECT_TRUE(embed::parse_ollama_tags("not json").empty());

  auto caps = embed::parse_ollama_capabilities(R"({"capabilities":["embedding"],"details":{}})");
  ASSERT_TRUE(caps);
  EXPECT_EQ(caps->front(), "embedding");
  EXPECT_FALSE(embed::parse_ollama_capabilities(R"({"details":{}})"));

  EXPECT_EQ(json::parse(embed::ollama_embed_body("m", {"a", "b"})),
            json::parse(R"({"model":"m","input":["a","b"]})"));
  auto v = embed::parse_ollama_embeddings(R"({"model":"m","embeddings":[[0.5,-1],[2,3e-2]]})");
  ASSERT_TRUE(v);
  EXPECT_EQ((*v)[1][1], 0.03);
  EXPECT_FALSE(embed::parse_ollama_embeddings(R"({"embeddings":[[0.5,"x"]]})"));
  EXPECT_FALSE(embed::parse_ollama_embeddings(R"({"embeddings":[[]]})"));
  EXPECT_FALSE(embed::parse_ollama_embeddings(R"({"embedding":[1]})"));
  EXPECT_FALSE(embed::parse_ollama_embeddings("<html>"));
}

TEST(EmbedCodec, LmStudioListingAndOpenAiAnswers) {
  auto models = embed::parse_lmstudio_models(
      R"({"object":"list","data":[{"id":"qwen","type":"llm","state":"loaded"},)"
      R"({"id":"text-embedding-nomic-embed-text-v1.5","type":"embeddings","state":"not-loaded"}]})");
  ASSERT_TRUE(models);
  ASSERT_EQ(models->size(), 2u);
  EXPECT_TRUE((*models)[0].loaded);
  EXPECT_EQ((*models)[1].type, "embeddings");
  EXPECT_FALSE((*models)[1].loaded);
  // LM Studio before 0.3.6 answers unknown routes with 200 and an error: not a listing.
  EXPECT_FALSE(embed::parse_lmstudio_models(R"x({"error":"Unexpected endpoint or method. (GET /api/v0/models)"})x"));
  EXPECT_TRUE(embed::parse_lmstudio_models(R"({"data":[]})"));
  EXPECT_EQ(embed::parse_model_ids(R"({"data":[{"id":"a"},{"id":"b"},{"x":1}]})"), (std::vector<std::string>{"a", "b"}));

  // Put back in index order, whatever the order of the list.
  auto v = embed::parse_openai_embeddings(
      R"({"data":[{"index":1,"embedding":[2]},{"index":0,"embedding":[1]}],"model":"m"})");
  ASSERT_TRUE(v);
  EXPECT_EQ((*v)[0][0], 1);
  EXPECT_EQ((*v)[1][0], 2);
  EXPECT_FALSE(embed::parse_openai_embeddings(R"({"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]})"));
  EXPECT_FALSE(embed::parse_openai_embeddings(R"({"data":[{"index":5,"embedding":[1]}]})"));
  EXPECT_FALSE(embed::parse_openai_embeddings(R"({"data":[{"index":0}]})"));
  EXPECT_EQ(embed::error_message(R"({"error":{"message":"Model not found"}})"), "Model not found");
  EXPECT_EQ(embed::error_message(R"({"error":"model \"x\" not found"})"), "model \"x\" not found");
}

TEST(EmbedLoopback, OnlyThisComputer) {
  for (auto url : {"http://127.0.0.1:11434/v1", "http://127.3.2.1/v1", "http://localhost:1234/v1",
                   "http://LOCALHOST:1234", "http://[::1]:11434/v1", "http://[::ffff:127.0.0.1]:1/v1"})
    EXPECT_TRUE(embed::is_loopback_url(url)) << url;
  for (auto url : {"http://192.168.1.5:11434/v1", "http://10.0.0.1/v1", "https://api.openai.com/v1",
                   "http://localhost.evil.com/v1", "http://x.localhost/v1", "http://[::2]/v1", "http://0.0.0.0:11434",
                   "file:///tmp/x", "not a url", "http://128.0.0.1/"})
    EXPECT_FALSE(embed::is_loopback_url(url)) << url;
}

TEST(EmbedBody, LimitsAndKinds) {
  auto parse = [](std::string_view text) {
    json::object o = json::parse(text).as_object();
    return web::parse_embed(o);
  };
  auto ok = parse(R"({"texts":["a","b"]})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->kind, EmbedKind::document);
  EXPECT_EQ(ok->texts.size(), 2u);
  EXPECT_EQ(parse(R"({"texts":[],"kind":"query"})")->kind, EmbedKind::query);
  for (auto bad : {R"({})", R"({"texts":"a"})", R"({"texts":["a",1]})", R"({"texts":["a"],"kind":"passage"})",
                   R"({"texts":["a"],"kind":1})"})
    EXPECT_EQ(parse(bad).error().status, 400u) << bad;
  json::array many;
  for (int i = 0; i < 256; ++i) many.emplace_back("t");
  json::object body{{"texts", many}};
  EXPECT_TRUE(web::parse_embed(body));
  body["texts"].as_array().emplace_back("one too many");
  EXPECT_EQ(web::parse_embed(body).error().status, 400u);
}

TEST(EmbedChoiceFile, SavedAndReadBack) {
  TempHome home;
  home.write("config.json", R"({"port":1234,"mine":true})");
  store::save_embed_choice(home.dir, {core::EmbedChoice::Mode::chosen, "ollama", "nomic-embed-text:latest"});
  auto c = store::load_config(home.dir);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->embed.mode, core::EmbedChoice::Mode::chosen);
  EXPECT_EQ(c->embed.model, "nomic-embed-text:latest");
  EXPECT_EQ(c->port, 1234);
  store::save_embed_choice(home.dir, {core::EmbedChoice::Mode::off, "", ""});
  EXPECT_EQ(store::load_config(home.dir)->embed.mode, core::EmbedChoice::Mode::off);
  store::save_embed_choice(home.dir, {});
  EXPECT_EQ(store::load_config(home.dir)->embed.mode, core::EmbedChoice::Mode::automatic);
  EXPECT_NE(home.read("config.json").find("\"mine\":true"), std::string::npos);  // unknown keys kept
  for (auto bad : {R"({"embed":"on"})", R"({"embed":{"provider":"ollama"}})", R"({"embed":3})"}) {
    home.write("config.json", bad);
    EXPECT_FALSE(store::load_config(home.dir)) << bad;
  }
}
