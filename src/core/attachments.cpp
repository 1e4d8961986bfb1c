#include "core/attachments.hpp"

namespace leuria::core {

namespace {

std::string attribute(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"') out += "&quot;";
    else if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else out += c;
  }
  return out;
}

}  // namespace

std::vector<PromptBlock> build_prompt(const std::string& prompt, const std::vector<Attachment>& attachments,
                                      bool accepts_images) {
  std::vector<PromptBlock> blocks;
  blocks.push_back(PromptBlock{PromptBlock::Type::text, prompt, {}, {}});
  for (const auto& a : attachments) {
    if (a.type == Attachment::Type::text) {
      const std::string name = a.name.value_or("attachment.txt");
      blocks.push_back({PromptBlock::Type::text, "<file name=\"" + attribute(name) + "\">" + a.text + "</file>", {}, {}});
    } else {
      const std::string name = a.name ? " \"" + *a.name + "\"" : std::string();
      std::string note = "[The visitor attached an image" + name + " (" + a.mime_type + "), but this AI can't read images.]";
      if (accepts_images)  // the note goes along, for an AI that turns out not to read them after all
        blocks.push_back({PromptBlock::Type::image, std::move(note), a.mime_type, a.data});
      else
        blocks.push_back({PromptBlock::Type::text, std::move(note), {}, {}});
    }
  }
  return blocks;
}

}  // namespace leuria::core
