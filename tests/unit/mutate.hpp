// Mutations for the differential tests (a fast reader against the tree reading it must agree with):
// one to three edits of a seed text, each a deletion, an inserted or replaced character from
// `alphabet`, or an inserted word from `words`. The caller's generator has a fixed seed, so a
// failure is reproducible.
#pragma once
#include <random>
#include <string>
#include <vector>

namespace leuria::mutation {

inline std::string mutate(std::string s, std::mt19937& rng, const std::string& alphabet,
                          const std::vector<std::string>& words) {
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const std::size_t at = rng() % s.size();
    switch (rng() % 4) {
      case 0: s.erase(at, 1 + rng() % 3); break;
      case 1: s.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      case 2: s[at] = alphabet[rng() % alphabet.size()]; break;
      default: s.insert(at, words[rng() % words.size()]); break;
    }
  }
  return s;
}

}  // namespace leuria::mutation
