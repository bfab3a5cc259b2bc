#include "models/text_generation.h"

#include <algorithm>
#include <random>

namespace mtf::models {

std::string continue_text(const TransformerDecoder& decoder, Session& session,
                          const std::string& text, int64_t bytes,
                          const GenerationOptions& options) {
  const int64_t length = decoder.length();
  const bool beam = options.beams >= 2;
  if (decoder.batch.size != (beam ? options.beams : 1)) {
    throw ValueError("continue_text: the decoder's batch is " + std::to_string(decoder.batch.size) +
                     ", not " + std::to_string(beam ? options.beams : 1) +
                     (beam ? " (one sequence per beam)" : " (one sequence)"));
  }
  if (text.empty()) throw ValueError("continue_text: the text to continue is empty");
  if (static_cast<int64_t>(text.size()) > length) {
    throw ValueError("continue_text: a text of " + std::to_string(text.size()) +
                     " bytes exceeds the model's length " + std::to_string(length));
  }
  if (bytes > 0 && length < 2)
    throw ValueError("continue_text: a model of length 1 has no room to continue a text");
  if (decoder.vocab() < 256)
    throw ValueError("continue_text: a byte-level model has a vocabulary of 256 at least");
  std::string out = text;
  std::string window = text;
  SamplingOptions sampling = options.sampling;
  std::mt19937_64 seeds(options.sampling.seed);
  int64_t left = bytes;
  while (left > 0) {
    std::vector<int32_t> prompt;
    for (unsigned char c : window) prompt.push_back(c);
    const int64_t steps = std::min<int64_t>(left, length - static_cast<int64_t>(prompt.size()));
    std::vector<int32_t> got;
    if (beam) {
      BeamOptions b;
      b.beams = options.beams;
      b.alpha = options.alpha;
      b.stop = options.sampling.stop;
      got = beam_search(decoder, session, {prompt}, steps, b).sequences[0];
    } else {
      sampling.seed = seeds();  // each window draws afresh
      got = decoder.generate(session, {prompt}, steps, sampling)[0];
    }
    const int64_t added = static_cast<int64_t>(got.size() - prompt.size());
    for (size_t i = prompt.size(); i < got.size(); ++i) out.push_back(static_cast<char>(got[i]));
    left -= added;
    if (added < steps || (added > 0 && got.back() == options.sampling.stop)) break;  // stopped
    window = out.substr(out.size() - std::min<size_t>(out.size(), length / 2));
  }
  return out;
}

}  // namespace mtf::models
