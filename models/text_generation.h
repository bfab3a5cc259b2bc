// text_generation.h — a byte-level TransformerLm continuing a text: sampling
// (SamplingOptions) or beam search (BeamOptions with beams >= 2) through the
// cached decoder. Past the model's length the window slides: the last half
// window of text is prefilled again and generation goes on from there (each
// window decoded on its own, as the model was trained on windows).
#pragma once

#include <string>

#include "models/beam_search.h"
#include "models/transformer_decoder.h"

namespace mtf::models {

struct GenerationOptions {
  SamplingOptions sampling;  // its stop token ends the text
  int64_t beams = 1;         // >= 2: beam search (sampling's temperature, top_k, top_p unused)
  double alpha = 0.6;        // beam search's length penalty
};

// `text` (1 .. length bytes) extended by up to `bytes` bytes. decoder.batch
// must be 1, or options.beams for beam search (ValueError otherwise, and for
// an empty or too long text).
std::string continue_text(const TransformerDecoder& decoder, Session& session,
                          const std::string& text, int64_t bytes, const GenerationOptions& options);

}  // namespace mtf::models
