// Attachments of a prompt, and how they become prompt blocks for the AI (protocol, Attachments):
// images as image blocks when the AI accepts them, else a short note; text files wrapped in
// <file name="…">…</file>.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/backend.hpp"

namespace leuria::core {

inline constexpr std::size_t kMaxAttachments = 10;

struct Attachment {
  enum class Type { image, text } type = Type::text;
  std::optional<std::string> name;
  std::string mime_type;  // image: image/…; text: optional
  std::string data;       // image: base64
  std::string text;       // text
};

std::vector<PromptBlock> build_prompt(const std::string& prompt, const std::vector<Attachment>& attachments,
                                      bool accepts_images);

}  // namespace leuria::core
