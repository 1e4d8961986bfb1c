// `leuria embed [use <provider> <model> | off | auto]`: which local model embeds for pages.
#pragma once
#include "core/embeddings.hpp"

namespace leuria::app {

int embed_show();
int embed_set(const core::EmbedChoice& choice);

}  // namespace leuria::app
